"""A Spark standalone cluster on 127.0.0.1 for the pipeline's cluster tests: one master and one
worker, started from the installed PySpark's ``bin/spark-class`` with the Java the pipeline would
use, stopped by pid (with their process groups: the worker's executors go too).

``with SparkCluster(cores=2) as cluster: cluster.master`` is the ``spark://127.0.0.1:PORT`` URL; the
worker has registered when the block starts (checked on the master's JSON status page, a bounded
number of times).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType

__all__ = ["SparkCluster"]

_POLLS = 600  # status checks of 0.2 s at most: the cluster starts in seconds; this bounds a broken start


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


class SparkCluster:
    def __init__(self, cores: int = 2, memory: str = "2g") -> None:
        self.cores, self.memory = cores, memory
        self.port, self.ui = _free_port(), _free_port()
        self.master = f"spark://127.0.0.1:{self.port}"
        self.dir = Path(tempfile.mkdtemp(prefix="kcodec-spark-cluster-"))
        self.procs: list[subprocess.Popen[bytes]] = []

    def _start(self, name: str, *args: str) -> None:
        from kcodec.pipeline.java import find_java_home

        env = dict(os.environ)
        env["JAVA_HOME"] = str(find_java_home()[0])
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
        env["SPARK_WORKER_DIR"] = str(self.dir / "work")
        env["SPARK_LOG_DIR"] = str(self.dir)
        env.pop("SPARK_HOME", None)
        log = open(self.dir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        self.procs.append(
            subprocess.Popen(
                [str(_spark_class()), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.dir,
                start_new_session=True,
            )
        )
        log.close()

    def _workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=5) as r:
                status = json.load(r)
        except (OSError, ValueError):
            return 0
        return sum(1 for w in status.get("workers", []) if w.get("state") == "ALIVE")

    def __enter__(self) -> SparkCluster:
        try:
            self._start(
                "master",
                "org.apache.spark.deploy.master.Master",
                "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui),
            )  # fmt: skip
            self._start(
                "worker",
                "org.apache.spark.deploy.worker.Worker",
                self.master,
                "--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory,
                "--webui-port", str(_free_port()), "--work-dir", str(self.dir / "work"),
            )  # fmt: skip
            for _ in range(_POLLS):
                if self._workers() >= 1:
                    return self
                if any(p.poll() is not None for p in self.procs):
                    break
                time.sleep(0.2)
            logs = "\n".join((self.dir / f"{n}.log").read_text(errors="replace")[-1500:] for n in ("master", "worker"))
            raise RuntimeError(f"the Spark cluster did not start:\n{logs}")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        for p in reversed(self.procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs.clear()

    def __exit__(
        self, tp: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)
