"""How a long command stops on a signal: ``SIGTERM`` as Ctrl-C (``KeyboardInterrupt``), with its own
word and exit status. Not compiled with the capture path (mypyc): a signal handler and an exception
class of Python's own, used by ``capture_run``."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Any

import click

__all__ = ["Terminated", "interrupted", "sigterm_stops"]


class Terminated(KeyboardInterrupt):
    """``SIGTERM`` during a run: it stops as Ctrl-C stops it (workers stopped, output flushed)."""


@contextlib.contextmanager
def sigterm_stops() -> Iterator[None]:
    """While the block runs, ``SIGTERM`` raises :class:`Terminated` in the main thread."""

    def stop(signum: int, frame: Any) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # (not the main thread: signals are not ours to handle)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def interrupted(e: KeyboardInterrupt) -> int:
    """Say why the run stopped; its exit status (128 + the signal's number)."""
    if isinstance(e, Terminated):
        click.echo("terminated", err=True)
        return 128 + signal.SIGTERM
    click.echo("interrupted", err=True)
    return 130
