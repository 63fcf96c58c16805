#!/usr/bin/env python3
"""Refresh the compact golden fixtures in ``tests/golden/`` from the shared corpus.

The source of truth is the fixture folder produced by Apache Kafka 3.9.0's own serializer
(``../shared/golden`` relative to the repository root; see its README.md).  This script copies
every line verbatim into a handful of deterministic gzip-compressed JSON-lines files, so the
test suite ships with the repository and needs nothing outside it:

* ``messages.jsonl.gz``        all ``<MessageName>.jsonl`` lines, files in sorted order
* ``errors.jsonl.gz``          ``errors.jsonl``
* ``ignored_fields.jsonl.gz``  ``ignored_fields.jsonl``
* ``framed.jsonl.gz``          ``_framed.jsonl``
* ``record_batches.jsonl.gz``  ``_record_batches.jsonl``
* ``api_table.json.gz``        ``_api_table.json`` (the exact original text)

and writes ``tests/golden/README.md`` with the counts.  Output is byte-for-byte deterministic
(gzip mtime 0, no file name in the header), so re-running it on unchanged input changes nothing.

Usage::

    python tools/refresh_golden.py [--src DIR] [--out DIR] [--check]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SRC = ROOT.parent / "shared" / "golden"
DEFAULT_OUT = ROOT / "tests" / "golden"
MAX_BYTES = 2 * 1024 * 1024  # hard limit per compact file

# compact file name -> source file name (messages.jsonl.gz is handled separately)
SINGLE_SOURCES: dict[str, str] = {
    "errors.jsonl.gz": "errors.jsonl",
    "ignored_fields.jsonl.gz": "ignored_fields.jsonl",
    "framed.jsonl.gz": "_framed.jsonl",
    "record_batches.jsonl.gz": "_record_batches.jsonl",
}
API_TABLE = ("api_table.json.gz", "_api_table.json")


@dataclass(frozen=True)
class Output:
    name: str
    payload: bytes  # uncompressed content
    count: int  # lines (JSON-lines) or entries (api table)
    sources: tuple[str, ...]

    def compressed(self) -> bytes:
        return gzip_bytes(self.payload)


def gzip_bytes(data: bytes) -> bytes:
    """Deterministic gzip: mtime 0, empty file name, fixed level."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


def read_jsonl(path: Path) -> list[str]:
    """Return the non-empty lines of ``path`` verbatim, each checked to be one JSON object."""
    lines: list[str] = []
    text = path.read_text(encoding="utf-8")
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"{path}:{lineno}: invalid JSON: {exc}") from exc
        if not isinstance(obj, dict):
            raise SystemExit(f"{path}:{lineno}: expected a JSON object")
        lines.append(line)
    return lines


def jsonl_payload(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode("utf-8")


def message_files(src: Path) -> list[Path]:
    # <MessageName>.jsonl: every .jsonl not starting with "_" and not one of the special files
    special = set(SINGLE_SOURCES.values())
    return sorted(
        (p for p in src.glob("*.jsonl") if not p.name.startswith("_") and p.name not in special),
        key=lambda p: p.name,
    )


def build_outputs(src: Path) -> list[Output]:
    if not (src / "README.md").is_file():
        raise SystemExit(f"{src}: not a golden fixture folder (no README.md)")
    outputs: list[Output] = []

    msg_lines: list[str] = []
    msg_files = message_files(src)
    if not msg_files:
        raise SystemExit(f"{src}: no <MessageName>.jsonl files found")
    for path in msg_files:
        lines = read_jsonl(path)
        expected = path.stem
        for line in lines:
            if json.loads(line).get("message") != expected:
                raise SystemExit(f"{path}: line with a 'message' other than {expected!r}")
        msg_lines.extend(lines)
    names = tuple(p.name for p in msg_files)
    outputs.append(Output("messages.jsonl.gz", jsonl_payload(msg_lines), len(msg_lines), names))

    for out_name, src_name in SINGLE_SOURCES.items():
        lines = read_jsonl(src / src_name)
        outputs.append(Output(out_name, jsonl_payload(lines), len(lines), (src_name,)))

    out_name, src_name = API_TABLE
    raw = (src / src_name).read_bytes()
    table = json.loads(raw)
    if not isinstance(table, list):
        raise SystemExit(f"{src / src_name}: expected a JSON array")
    outputs.append(Output(out_name, raw, len(table), (src_name,)))
    return outputs


def render_readme(outputs: list[Output], compressed: dict[str, bytes]) -> str:
    rows = []
    for out in outputs:
        src = out.sources[0] if len(out.sources) == 1 else f"{len(out.sources)} `<MessageName>.jsonl` files"
        if len(out.sources) == 1:
            src = f"`{src}`"
        unit = "APIs" if out.name.endswith(".json.gz") else "lines"
        digest = hashlib.sha256(out.payload).hexdigest()[:16]
        rows.append(
            f"| `{out.name}` | {src} | {out.count} {unit} | {len(compressed[out.name]):,} | "
            f"{len(out.payload):,} | `{digest}` |"
        )
    table = "\n".join(rows)
    return f"""# Golden fixtures (compact copy)

These files are a compact, verbatim copy of the Kafka wire-protocol golden fixtures in
`../shared/golden` (relative to the repository root). Those fixtures were produced by
**Apache Kafka 3.9.0**'s own serializer (tag `3.9.0-rc3`: its generated `*Data` message classes
and `*JsonConverter`s); see `../shared/golden/README.md` for the exact format and what is covered.
The shared folder is itself a subset of a larger corpus: the count table in its README is that of
the whole corpus, the counts below are what is actually here.

**The originals are the source of truth.** Do not edit these files by hand: regenerate them with

```
python tools/refresh_golden.py            # --src DIR to read another copy, --check to verify only
```

Every line is kept as the exact original JSON text; the `.gz` files are deterministic
(gzip mtime 0, no file name), so an unchanged corpus gives byte-identical files.
Tests load them through `tests/golden_data.py`.

| file | from | count | bytes (gz) | bytes (raw) | sha256 (raw, first 16) |
| --- | --- | ---: | ---: | ---: | --- |
{table}

`messages.jsonl.gz` holds the lines of every `<MessageName>.jsonl`, files in sorted name order,
lines in their original order (sorted by version; per version the `defaults` case first, then the
`max` case, then random cases).
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--src", type=Path, default=DEFAULT_SRC, help="fixtures (default: ../shared/golden)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: tests/golden)")
    parser.add_argument(
        "--check", action="store_true", help="do not write; exit 1 if the output folder is out of date"
    )
    args = parser.parse_args(argv)
    src: Path = args.src.resolve()
    out_dir: Path = args.out

    outputs = build_outputs(src)
    files: dict[str, bytes] = {out.name: out.compressed() for out in outputs}
    for name, data in files.items():
        if len(data) >= MAX_BYTES:
            raise SystemExit(f"{name}: {len(data)} bytes compressed, over the {MAX_BYTES} byte limit")
    readme = render_readme(outputs, files).encode("utf-8")
    files["README.md"] = readme

    stale = [name for name, data in files.items() if _read(out_dir / name) != data]
    if args.check:
        for name in stale:
            print(f"out of date: {out_dir / name}", file=sys.stderr)
        return 1 if stale else 0

    out_dir.mkdir(parents=True, exist_ok=True)
    for name in stale:
        (out_dir / name).write_bytes(files[name])
    for out in outputs:
        print(f"{out.name:26} {out.count:6d} {len(files[out.name]):>10,d} bytes")
    print(f"{len(stale)} file(s) changed in {out_dir}")
    return 0


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
