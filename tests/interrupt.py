"""For tests that press Ctrl-C on a child process (SIGINT)."""

from __future__ import annotations

import signal


def ctrl_c_as_in_a_terminal() -> None:
    """``preexec_fn`` for the child: SIGINT with its default action, as a command typed in a terminal
    has it. A test run started in the background of a script (``bash tools/test.sh &``) has SIGINT
    ignored, a child inherits that, and Python then never raises KeyboardInterrupt in it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
