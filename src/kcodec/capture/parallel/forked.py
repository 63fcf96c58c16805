"""Worker processes for a parallel capture decode (:mod:`kcodec.capture.parallel`): forked from the
parent, each with a pipe of length-prefixed messages back to it. (What ``multiprocessing`` gives
with its ``fork`` context and a one-way ``Pipe``, without importing it: its import pulls in about 25
modules, tempfile, shutil, bz2, lzma, random and subprocess among them, and was 32 M of the 376 M
instructions before the workers started, on the critical path of every parallel run.)

A message is a 4-byte big-endian length and that many bytes. The child runs its function and leaves
with ``os._exit`` (an exception it lets out is printed on stderr, status 1): nothing of the parent's
(buffered output, ``atexit`` handlers, ``finally`` blocks further up the stack) runs again in it.

A worker never outlives its parent: on Linux the kernel kills it when the parent ends, however the
parent ends (``prctl(PR_SET_PDEATHSIG, SIGKILL)``); elsewhere it ends at its next write to the pipe
(whose reading end went with the parent). It takes ``SIGTERM`` with the default action (the
parent's own handler, if it has one, is not inherited)."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import struct
import sys
import time
from collections.abc import Callable
from typing import IO

__all__ = ["PipeReader", "PipeWriter", "Worker", "WorkerFailed", "can_fork", "start"]

_LENGTH = struct.Struct(">I")
_SMALL = 1 << 14  # a message up to this size goes in one write with its length


class WorkerFailed(Exception):
    """A worker could not decode its shard; the text says why (a traceback if it was a bug)."""

    def __init__(self, text: str, unreadable: bool) -> None:
        super().__init__(text)
        self.unreadable = unreadable  # the file is no capture (exit 1, as one process would)


def can_fork() -> bool:
    """Whether this system can start workers (``os.fork``: not on Windows)."""
    return hasattr(os, "fork")


class PipeWriter:
    """The worker's end: ``send_bytes`` writes one message (raises ``BrokenPipeError`` once the parent
    has gone: Python ignores ``SIGPIPE``)."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def send_bytes(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data).cast("B")
        head = _LENGTH.pack(len(view))
        if len(view) <= _SMALL:
            self._write(memoryview(head + view))
        else:
            self._write(memoryview(head))
            self._write(view)

    def _write(self, view: memoryview) -> None:
        while view:
            view = view[os.write(self.fd, view) :]

    def fileno(self) -> int:
        return self.fd

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class PipeReader:
    """The parent's end: ``recv_bytes`` returns the next message, or raises ``EOFError`` at the end of
    the pipe (the worker gone, a message cut short included)."""

    __slots__ = ("_file",)

    def __init__(self, fd: int) -> None:
        self._file: IO[bytes] = open(fd, "rb", buffering=1 << 16)  # noqa: SIM115 (closed by close())

    def recv_bytes(self) -> bytes:
        head = self._file.read(4)
        if len(head) < 4:
            raise EOFError
        (n,) = _LENGTH.unpack(head)
        data = self._file.read(n)
        if len(data) < n:
            raise EOFError
        return data

    def fileno(self) -> int:
        return self._file.fileno()

    def close(self) -> None:
        self._file.close()


class Worker:
    """A forked worker process (its process id, and the pipe its messages come by)."""

    __slots__ = ("pid", "reader", "status")

    def __init__(self, pid: int, reader: PipeReader) -> None:
        self.pid = pid
        self.reader = reader
        self.status: int | None = None  # the exit status, once the process is reaped

    def is_alive(self) -> bool:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
        return self.status is None

    def terminate(self) -> None:
        """Ask the process to stop (``SIGTERM``), if it still runs."""
        if self.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)

    def join(self, timeout: float) -> None:
        """Wait for the process to end; after ``timeout`` seconds, kill it (``SIGKILL``) and wait."""
        deadline = time.monotonic() + timeout
        pause = 0.001
        while self.is_alive():
            if time.monotonic() >= deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                self.status = os.waitpid(self.pid, 0)[1]
                return
            time.sleep(pause)
            pause = min(pause * 2, 0.05)


def _widen(fd: int, size: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except (ImportError, OSError):
        pass


#: the cyclic collector's threshold for new objects in a worker (Python's default is 700)
YOUNG_OBJECTS = 100_000


def _collect_less() -> None:
    """In a new worker: collect new objects less often (a worker makes many short-lived containers
    that reference counting frees at once). What it inherited from the parent (the imported modules,
    the options) was frozen before the fork (``gc.freeze``): it is never garbage, so collections
    neither walk those objects nor write to their pages, which stay shared with the parent. With both,
    a worker of a 64 MB capture's table did 1.4 % fewer instructions."""
    gc.set_threshold(YOUNG_OBJECTS, 50, 1000)


#: prctl's option: the signal the calling process gets when its parent ends (linux/prctl.h)
PR_SET_PDEATHSIG = 1
_prctl: list[Callable[..., int] | None] = []  # libc's prctl, looked up once in the parent (or None)


def _libc_prctl() -> Callable[..., int] | None:
    """libc's ``prctl`` on Linux (looked up in the parent, so that a worker only calls it)."""
    if not _prctl:
        found: Callable[..., int] | None = None
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                found = ctypes.CDLL(None, use_errno=True).prctl
            except (OSError, AttributeError):
                found = None
        _prctl.append(found)
    return _prctl[0]


def _die_with(parent: int, prctl: Callable[..., int] | None) -> None:
    """In a new worker: be killed when ``parent`` ends (Linux), and end now if it already has."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent ended before the line above
        os._exit(1)


def start(target: Callable[[PipeWriter], None], close_in_child: list[int], pipe_size: int = 0) -> Worker:
    """Fork a worker that runs ``target`` with the writing end of its pipe, then exits (status 0, or
    1 if ``target`` raised). ``close_in_child``: descriptors the child closes first (the reading ends
    of the workers started before it, which are no business of its). ``pipe_size``: the pipe's
    capacity in bytes, where the system allows setting it (Linux: 64 KiB by default; larger means
    fewer, larger reads and writes)."""
    prctl = _libc_prctl()
    parent = os.getpid()
    r, w = os.pipe()
    if pipe_size:
        _widen(w, pipe_size)
    gc.freeze()  # (see _collect_less; the parent's own later collections skip these objects too)
    try:
        pid = os.fork()
    except OSError:  # (a limit on processes or memory reached)
        os.close(r)
        os.close(w)
        raise
    if pid == 0:  # the child
        code = 1
        try:
            _die_with(parent, prctl)
            _collect_less()
            os.close(r)
            for fd in close_in_child:
                os.close(fd)
            target(PipeWriter(w))
            code = 0
        except BaseException:  # (what the target did not catch: its traceback, as an uncaught one)
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
        finally:
            os._exit(code)
    os.close(w)
    return Worker(pid, PipeReader(r))
