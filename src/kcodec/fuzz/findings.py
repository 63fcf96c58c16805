"""Findings: one JSON file per (kind, API), minimized, replayable.

A file holds at least ``kind``, ``severity``, ``api_name``, ``api_key``, ``api_version``,
``summary`` (one sentence), ``request_hex`` (the whole frame as sent, size prefix included; the
minimized one when minimizing worked), ``response_hex`` (if any), ``seed``, ``iteration``,
``negotiated`` (api name -> version) and ``target``; also ``mutation``, ``detail``, ``count`` (how
often the kind was seen for that API in the run), ``original_request_hex`` and ``minimized``. A
crash (``broker_died``, ``broker_unresponsive``) also keeps ``history_hex``: the requests sent just
before it, since the request after which a broker was found gone is not always the one that killed
it (``tools/fuzz_brokers.py`` narrows that down against fresh brokers).
"""

from __future__ import annotations

import json
import os
import re
import struct
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kcodec.protocol.errors import KcodecError

__all__ = ["Finding", "FindingError", "FindingStore", "load_finding", "minimize"]

FORMAT = "kcodec-fuzz-finding/1"


class FindingError(KcodecError):
    """A finding file that cannot be read."""


#: the largest finding file read: a finding holds one request frame (as hex) and a few lines about it
MAX_FINDING_BYTES = 64 << 20


@dataclass(slots=True)
class Finding:
    kind: str
    severity: str
    api_name: str
    api_key: int
    api_version: int
    summary: str
    request_hex: str
    response_hex: str | None
    seed: int
    iteration: int
    negotiated: dict[str, int]
    target: str
    mutation: str | None = None
    detail: str = ""
    count: int = 1
    minimized: bool = False
    original_request_hex: str | None = None
    frame_level: bool = False  # the frame itself lies (size prefix, header): no reply is owed
    reproduced: bool | None = None  # seen again alone on a fresh connection (None: not tried)
    history_hex: list[str] = field(default_factory=list)  # crashes: the requests sent just before
    target_status: str = ""  # what became of the broker process, when the caller knows (crashes)
    target_log: str = ""  # the end of its log then
    time: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    format: str = FORMAT

    @property
    def key(self) -> tuple[str, str]:
        return self.kind, self.api_name

    @property
    def filename(self) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{self.kind}-{self.api_name}") + ".json"

    def request(self) -> bytes:
        return bytes.fromhex(self.request_hex)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def load_finding(path: str | Path) -> Finding:
    """The finding in the JSON file ``path``; a file over ``MAX_FINDING_BYTES`` is refused unread."""
    try:
        with open(path, "rb") as f:  # its size first, then at most one byte past the limit
            size = os.fstat(f.fileno()).st_size
            text = f.read(MAX_FINDING_BYTES + 1) if size <= MAX_FINDING_BYTES else b""
        if max(size, len(text)) > MAX_FINDING_BYTES:
            raise FindingError(
                f"{path}: not a kcodec fuzz finding (larger than the {MAX_FINDING_BYTES}-byte limit)"
            )
        raw = json.loads(text)
        known = {k: v for k, v in raw.items() if k in Finding.__dataclass_fields__}
        finding = Finding(**known)
        finding.request()
    except (OSError, ValueError, TypeError) as e:
        raise FindingError(f"{path}: not a kcodec fuzz finding ({e})") from None
    return finding


class FindingStore:
    """The findings of a run, one per (kind, API), written to ``out`` as they come."""

    def __init__(self, out: Path | None) -> None:
        self.out = out
        self.findings: dict[tuple[str, str], Finding] = {}
        self.earlier: dict[tuple[str, str], Finding] = {}  # found by earlier runs into the same folder
        self.seen_again: set[tuple[str, str]] = set()  # earlier findings this run met again
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            for path in sorted(out.glob("*.json")):
                try:
                    f = load_finding(path)
                except FindingError:
                    continue
                self.earlier[f.key] = f

    def known(self, key: tuple[str, str]) -> bool:
        return key in self.findings or key in self.earlier

    def add(self, finding: Finding) -> bool:
        """Record ``finding``; ``False`` when its (kind, API) was already seen (counted only)."""
        seen = self.findings.get(finding.key) or self.earlier.get(finding.key)
        if finding.key in self.earlier:
            self.seen_again.add(finding.key)
        if seen is not None:
            seen.count += 1
            self.write(seen)
            return False
        self.findings[finding.key] = finding
        self.write(finding)
        return True

    def write(self, finding: Finding) -> Path | None:
        if self.out is None:
            return None
        path = self.out / finding.filename
        path.write_text(json.dumps(finding.to_json(), indent=2) + "\n")
        return path

    def flush(self) -> None:
        for f in self.findings.values():
            self.write(f)


def _with_size(frame: bytes) -> bytes:
    return struct.pack(">i", len(frame) - 4) + frame[4:]


def minimize(
    frame: bytes,
    still_fails: Callable[[bytes], bool],
    *,
    keep: int = 12,
    max_tries: int = 48,
    fix_size: bool = True,
) -> tuple[bytes, int]:
    """The shortest frame found that ``still_fails`` (delta debugging on the bytes after the first
    ``keep``: size prefix and the header's api key, version and correlation id stay), and the number
    of tries used. With ``fix_size`` each candidate's size prefix is made true again."""
    best = frame
    tries = 0
    chunk = max((len(best) - keep) // 2, 1)
    while chunk >= 1 and tries < max_tries:
        shrunk = False
        start = keep
        while start < len(best) and tries < max_tries:
            candidate = best[:start] + best[start + chunk :]
            if fix_size:
                candidate = _with_size(candidate)
            tries += 1
            if still_fails(candidate):
                best = candidate
                shrunk = True
            else:
                start += chunk
        if not shrunk:
            chunk //= 2
    return best, tries
