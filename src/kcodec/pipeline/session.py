"""The Spark session the pipeline runs in.

Locally (no ``master`` given, or ``local[...]``) Spark is bound to the loopback interface:
``SPARK_LOCAL_IP``, ``spark.driver.host`` and ``spark.driver.bindAddress`` are 127.0.0.1, and the
web UI is off, so nothing listens beyond this machine and start-up stays short. With ``master``
naming a cluster (``spark://``, ``yarn``, ``k8s://``) those settings are left to the cluster's
configuration. Under ``spark-submit`` the session it set up is used as it is. A local JVM runs with
:data:`LOCAL_JAVA_OPTIONS` and a class-data sharing archive (:mod:`~kcodec.pipeline.cds`), and its
Python workers come from :mod:`kcodec.pipeline.daemon`.

Executors run Python workers with the driver's interpreter (``PYSPARK_PYTHON``), so kcodec must be
installed there (locally it is the same environment; on a cluster, install it on every node or ship
the wheel with ``--py-files``: imported from a zip, the wheel's compiled modules do not load and their
Python sources run, as in the pure build, which ``kcodec.build`` then reports).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from kcodec.pipeline.cds import CdsPlan, plan_archive
from kcodec.pipeline.java import find_java_home

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["LOOPBACK", "is_local", "spark_session"]

LOOPBACK = "127.0.0.1"
#: Java options of a local run, whose one JVM shares the machine's cores with the Python workers. A
#: pipeline run is short and runs much of Spark's code only once: HotSpot's optimising compiler (C2)
#: spent more CPU compiling Spark than the job spent running it (20 of 45 CPU-s on 200 MB), so only
#: the quick compiler (C1) runs; and the serial collector has no GC threads of its own competing
#: with the tasks (the heap of a local run is small).
LOCAL_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


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
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if cds.lock is not None:  # this run's JVM writes the archive when it exits
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        cds.record_jvm(int(jvm.java.lang.ProcessHandle.current().pid()))
    return spark
