"""A class-data sharing archive for the local Spark JVM: Spark starts without loading and verifying
its thousands of classes anew on every run.

HotSpot saves the classes an application loaded into an archive when it exits
(``-XX:ArchiveClassesAtExit``) and maps them at the next start (``-XX:SharedArchiveFile``); on a
2-core machine this took the JVM's part of Spark's start-up from about 4.7 to 2.5 CPU-s. The
archive lives in kcodec's cache folder (``$KCODEC_CACHE``, else ``$XDG_CACHE_HOME/kcodec``, else
``~/.cache/kcodec``; about 120 MB), one per pyspark version, Java and Python environment.

The first local run writes it: it takes a lock file (created exclusively, so that one run of many
writes), and its JVM writes the archive under a temporary name when it exits, after the Python
driver is gone; the lock holds that JVM's process id. A later run that finds the lock of a JVM no
longer running moves the temporary archive into place and uses it (or, if the JVM wrote none,
leaves a ``.failed`` marker and runs without an archive from then on). An archive the JVM cannot
use (another Java, a changed class path) is ignored by it, silently. ``KCODEC_SPARK_CDS=0`` turns
all of this off.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CdsPlan", "cache_folder", "plan_archive", "running"]

_QUIET = "-Xlog:cds*=off -Xlog:class+path=off"
#: A lock without a process id older than this is a run that died before its JVM started.
_STALE_LOCK = 600.0


@dataclass(frozen=True, slots=True)
class CdsPlan:
    """Java options for this run, and the lock to write the JVM's process id into when this run
    writes the archive (``record_jvm``)."""

    options: str
    lock: Path | None = None

    def record_jvm(self, pid: int) -> None:
        if self.lock is not None:
            self.lock.write_text(str(pid))


def cache_folder() -> Path:
    root = os.environ.get("KCODEC_CACHE")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "kcodec"


def running(pid: int) -> bool:
    """Whether the Java process ``pid`` still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a process id reused by another program since
        return b"java" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True


def _archive(java_home: Path) -> Path:
    import pyspark

    version = pyspark.__version__
    tag = hashlib.sha256(f"{java_home}|{sys.prefix}|{version}".encode()).hexdigest()[:12]
    return cache_folder() / f"spark-{version}-{tag}.jsa"


def plan_archive(java_home: Path) -> CdsPlan:
    """What this local run does with the archive (see the module docstring)."""
    if os.environ.get("KCODEC_SPARK_CDS", "1") == "0":
        return CdsPlan("")
    archive = _archive(java_home)
    lock, temp, failed = (archive.with_suffix(s) for s in (".lock", ".jsa.tmp", ".failed"))
    try:
        if not archive.is_file() and lock.is_file() and not _settle(lock, temp, archive, failed):
            return CdsPlan("")  # another run is writing it
        if archive.is_file():
            return CdsPlan(f"-XX:SharedArchiveFile={archive} {_QUIET}")
        if failed.exists():
            return CdsPlan("")
        archive.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except OSError:  # a read-only or shared cache, a race lost: run without
        return CdsPlan("")
    return CdsPlan(f"-XX:ArchiveClassesAtExit={temp} {_QUIET}", lock)


def _settle(lock: Path, temp: Path, archive: Path, failed: Path) -> bool:
    """Finish what the run holding ``lock`` left, if its JVM is gone; False while it may still run."""
    text = lock.read_text().strip()
    if text.isdigit():
        if running(int(text)):
            return False
        if temp.is_file():
            os.replace(temp, archive)
        else:
            failed.touch()
    elif time.time() - lock.stat().st_mtime < _STALE_LOCK:
        return False
    temp.unlink(missing_ok=True)
    lock.unlink(missing_ok=True)
    return True
