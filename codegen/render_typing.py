"""Render the typing module of the generated package (``kcodec._generated.typing_api``).

It gives type checkers what the lazily loaded, by-name API cannot show by itself: every message class
under its name (re-exported by ``kcodec.messages``) and one overload per message name of the
functions that take a message name (``decode("FetchRequest", ...)`` returns a ``FetchRequest``).
The module has no run-time cost: its imports and overloads sit under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import jinja2

from codegen.merge import MergedMessage
from codegen.render import module_name, tidy

#: module name of the typing module inside the generated package
TYPING_MODULE = "typing_api"


def render_typing(env: jinja2.Environment, messages: list[MergedMessage], sources: list[str]) -> str:
    """The source of ``typing_api.py`` for ``messages`` (every message of the generated package)."""
    rows = [{"name": m.name, "module": module_name(m.name)} for m in sorted(messages, key=lambda m: m.name)]
    return tidy(env.get_template("typing_api.py.j2").render(messages=rows, sources=sources))


__all__ = ["TYPING_MODULE", "render_typing"]
