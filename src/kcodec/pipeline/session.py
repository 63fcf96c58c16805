"""The Spark session the pipeline runs in.

Locally (no ``master`` given, or ``local[...]``) Spark is bound to the loopback interface:
``SPARK_LOCAL_IP``, ``spark.driver.host`` and ``spark.driver.bindAddress`` are 127.0.0.1, and the
web UI is off, so nothing listens beyond this machine and start-up stays short. With ``master``
naming a cluster (``spark://``, ``yarn``, ``k8s://``) those settings are left to the cluster's
configuration. Under ``spark-submit`` the session it set up is used as it is. A local JVM runs with
:data:`LOCAL_JAVA_OPTIONS` and a class-data sharing archive (:mod:`~kcodec.pipeline.cds`), and its
Python workers come from :mod:`kcodec.pipeline.daemon`.

Executors run Python workers with the driver's interpreter (``PYSPARK_PYTHON``), so kcodec must be
importable there: locally it is the same environment; on a cluster, install kcodec with its
``[spark]`` extra on every node, or send the package with ``--ship``
(:mod:`~kcodec.pipeline.ship`: a zip of its sources; PySpark puts only zips, not wheels, on the
executors' path). The JVM's own output goes to :func:`log_path`, not to the terminal.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from kcodec.pipeline.cds import CdsPlan, plan_archive
from kcodec.pipeline.java import find_java_home

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["LOOPBACK", "finish_archive", "is_local", "log_path", "spark_session", "writes_archive"]

LOOPBACK = "127.0.0.1"
#: Java options of a local run, whose one JVM shares the machine's cores with the Python workers. A
#: pipeline run is short and runs much of Spark's code only once: HotSpot's optimising compiler (C2)
#: spent more CPU compiling Spark than the job spent running it (20 of 45 CPU-s on 200 MB), so only
#: the quick compiler (C1) runs; and the serial collector has no GC threads of its own competing
#: with the tasks (the heap of a local run is small).
LOCAL_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: The process id of the JVM this process started that writes the class-data sharing archive when it
#: exits (:mod:`~kcodec.pipeline.cds`), if any.
_archiving_jvm: list[int] = []


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def _under_spark_submit() -> bool:
    return "SPARK_SUBMIT_OPTS" in os.environ or os.environ.get("PYSPARK_GATEWAY_PORT") is not None


def spark_session(master: str | None = None, *, app_name: str = "kcodec pipeline") -> SparkSession:
    """A session for ``master`` (default ``local[*]``), or the one already running in this process.

    The active session is reused as it is (a test's, or spark-submit's); otherwise a new one is
    started with Java found by :func:`~kcodec.pipeline.java.find_java_home`.
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    home = None
    if not _under_spark_submit():
        home, _origin = find_java_home()
        os.environ["JAVA_HOME"] = str(home)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is None and _under_spark_submit():
        return builder.getOrCreate()
    master = master or "local[*]"
    builder = builder.master(master)
    cds = CdsPlan("")
    if is_local(master):
        os.environ["SPARK_LOCAL_IP"] = LOOPBACK
        if home is not None:
            cds = plan_archive(home)
        builder = (
            builder.config("spark.driver.host", LOOPBACK)
            .config("spark.driver.bindAddress", LOOPBACK)
            .config("spark.ui.enabled", "false")
            .config("spark.driver.extraJavaOptions", f"{LOCAL_JAVA_OPTIONS} {cds.options}".strip())
            # Python workers that import pyspark from the installed package, not from Spark's zip
            .config("spark.python.daemon.module", "kcodec.pipeline.daemon")
        )
    builder = (
        builder.config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
    )
    with _jvm_log():
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if cds.lock is not None:  # this run's JVM writes the archive when it exits
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        pid = int(jvm.java.lang.ProcessHandle.current().pid())
        cds.record_jvm(pid)
        _archiving_jvm.append(pid)
    return spark


def log_path() -> Path:
    """Where the JVM that :func:`spark_session` starts writes its own output (Spark's start-up
    messages and log): ``spark.log`` in kcodec's cache folder, overwritten by each run."""
    from kcodec.pipeline.cds import cache_folder

    return cache_folder() / "spark.log"


@contextmanager
def _jvm_log() -> Iterator[None]:
    """Standard error redirected to :func:`log_path` while the JVM is started, so that the JVM (and
    the processes it starts) write there instead of the user's terminal; Spark's errors still reach
    the caller as exceptions."""
    path = log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError:  # an unwritable cache: the JVM writes to standard error as before
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def writes_archive() -> bool:
    """Whether this process's JVM writes the start-up archive when it exits (a first local run)."""
    return bool(_archiving_jvm)


def finish_archive(spark: SparkSession, timeout: float = 300.0) -> bool:
    """If this process's JVM writes the start-up archive when it exits (a first local run), stop
    ``spark``, let the JVM exit and wait for it, so that no Java process outlives the command. True
    if there was one to wait for. For a command's end: the session and its JVM are gone after."""
    if not _archiving_jvm:
        return False
    from pyspark import SparkContext

    spark.stop()
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is not None and proc.stdin is not None:
        proc.stdin.close()  # the gateway JVM exits when its standard input closes
        try:
            proc.wait(timeout=timeout)
        except Exception:  # still writing: left to finish on its own (the next run settles it)
            return True
    pid = _archiving_jvm.pop()
    import time

    from kcodec.pipeline.cds import running

    for _ in range(int(timeout * 10)):
        if not running(pid):
            break
        time.sleep(0.1)
    return True
