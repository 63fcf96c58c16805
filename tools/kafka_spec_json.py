"""Reading upstream Apache Kafka message specs: "JSON with quirks".

The upstream ``*.json`` specs carry ``//`` line comments (the Apache license header among them), may
carry ``/* */`` block comments, repeat keys now and then and have shipped trailing tokens after the
root object. :func:`load_kafka_json` reads such a file into a plain dict, reporting each quirk through a
warning callback; ``tools/import_specs.py`` then keeps the protocol facts of it.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

_NORMAL_SPECIAL_RE = re.compile(r'["/]')
_STRING_SPECIAL_RE = re.compile(r'["\\]')

Warn = Callable[[str], None]
"""Callback receiving one human-readable warning message."""


class SpecError(ValueError):
    """An input spec cannot be parsed or violates a structural rule."""


def print_warning(message: str) -> None:
    """Default warning sink: print ``warning: <message>`` to stderr."""
    print(f"warning: {message}", file=sys.stderr)


def _line_of(text: str, index: int) -> int:
    """Return the 1-based line number of ``text[index]``."""
    return text.count("\n", 0, index) + 1


def strip_comments(text: str) -> str:
    """Remove ``//`` line and ``/* */`` block comments outside string literals.

    This is a tokenizer-level scan, not a regex substitution: string literals
    (with their backslash escapes) are copied untouched, so ``"http://x"``
    survives.  A line comment is removed up to, but not including, its line
    break; a block comment is replaced by a single space plus the line breaks
    it contained, so line numbers in later JSON error messages still match the
    original text and adjacent tokens are never glued together.

    Raises:
        SpecError: on an unterminated block comment.
    """
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        m = _NORMAL_SPECIAL_RE.search(text, i)
        if m is None:
            out.append(text[i:])
            break
        j = m.start()
        out.append(text[i:j])
        if text[j] == '"':
            # Copy the string literal verbatim, honouring escapes.  An
            # unterminated literal is copied as-is for json to report.
            k = j + 1
            while True:
                s = _STRING_SPECIAL_RE.search(text, k)
                if s is None:
                    k = n
                    break
                if text[s.start()] == "\\":
                    k = s.start() + 2
                    continue
                k = s.end()
                break
            out.append(text[j:k])
            i = k
        elif text.startswith("//", j):
            end = n
            for terminator in ("\n", "\r"):
                pos = text.find(terminator, j)
                if pos != -1:
                    end = min(end, pos)
            i = end
        elif text.startswith("/*", j):
            end = text.find("*/", j + 2)
            if end == -1:
                raise SpecError(f"unterminated /* comment starting on line {_line_of(text, j)}")
            out.append(" " + "\n" * text.count("\n", j, end))
            i = end + 2
        else:
            # A lone '/' is not valid JSON; keep it so json reports it.
            out.append("/")
            i = j + 1
    return "".join(out)


def _duplicate_key_checker(source: str, warn: Warn) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """Return an ``object_pairs_hook`` that polices duplicate keys.

    Upstream really ships duplicates (3.9.0 ``DescribeTopicPartitions*``
    repeat ``"versions": "0+"``): a duplicate with an identical value is
    reported and collapsed, a conflicting one is an error (ambiguous facts).
    """

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                name = dict(pairs).get("name")
                where = f" in object {name!r}" if isinstance(name, str) else ""
                if result[key] != value:
                    raise SpecError(f"conflicting duplicate key {key!r}{where}: {result[key]!r} vs {value!r}")
                warn(f"{source}: duplicate key {key!r}{where} with identical value (collapsed)")
            result[key] = value
        return result

    return hook


def load_kafka_json(text: str, *, source: str = "<string>", warn: Warn | None = None) -> dict[str, Any]:
    """Parse one upstream Kafka message spec ("JSON with quirks").

    Comments are stripped with :func:`strip_comments`, then the first JSON
    value is decoded; it must be an object.  Anything but whitespace after it
    (e.g. the stray ``}`` of Kafka 2.8's ``DescribeProducersRequest.json``) is
    ignored and reported through ``warn``.  A repeated key is reported if both
    values are equal and an error if they differ.

    Args:
        text: the file contents.
        source: name used in warnings and error messages.
        warn: warning sink; defaults to printing to stderr.

    Raises:
        SpecError: if the text is not a (quirky) JSON object.
    """
    report = warn if warn is not None else print_warning
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        stripped = strip_comments(text)
    except SpecError as exc:
        raise SpecError(f"{source}: {exc}") from None
    decoder = json.JSONDecoder(object_pairs_hook=_duplicate_key_checker(source, report))
    start = len(stripped) - len(stripped.lstrip())
    try:
        obj, end = decoder.raw_decode(stripped, start)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{source}: invalid JSON: {exc}") from None
    except SpecError as exc:
        raise SpecError(f"{source}: {exc}") from None
    if not isinstance(obj, dict):
        raise SpecError(f"{source}: root is a JSON {type(obj).__name__}, not an object")
    rest = stripped[end:]
    if rest.strip():
        offset = end + len(rest) - len(rest.lstrip())
        snippet = rest.strip()[:40]
        report(
            f"{source}: ignoring trailing tokens after the root object"
            f" (line {_line_of(stripped, offset)}): {snippet!r}"
        )
    return obj
