"""Coverage-guided fuzzing of kcodec's decoders with atheris (libFuzzer for Python).

    python tools/fuzz_atheris.py -max_total_time=3600 corpus/        # a long run
    KCODEC_ATHERIS_SCOPE=sample python tools/fuzz_atheris.py -runs=6000 -seed=12 corpus/   # short
    python tools/fuzz_atheris.py --write-seeds corpus/               # seed a corpus folder first

Input layout: byte 0 picks the check (body, request frame, response frame, records, capture), bytes 1-2
pick the (message, version) for bodies and response frames, the rest is the data. Every check is
kcodec.fuzz.selfcheck: anything but a KcodecError or a byte-exact round trip crashes the run (atheris
writes the input to crash-<sha1>). Seeds: the golden fixtures (tests/golden), the regression corpus
(tests/fuzz_corpus) and the sample capture.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import atheris

ROOT = Path(__file__).resolve().parent.parent

#: KCODEC_ATHERIS_SCOPE=sample instruments the runtime and the codecs of these messages only (the
#: others still run, without coverage feedback): instrumenting all 190 generated modules takes ~30 s
#: of CPU, too long for the test suite's short run. The default, "all", is for long runs.
SAMPLE = (
    "ApiVersionsRequest", "ApiVersionsResponse", "FetchRequest", "FetchResponse", "ProduceRequest",
    "ProduceResponse", "MetadataRequest", "MetadataResponse", "HeartbeatResponse", "JoinGroupRequest",
    "DescribeTopicPartitionsResponse", "RequestHeader", "ResponseHeader",
)
SCOPE = os.environ.get("KCODEC_ATHERIS_SCOPE", "all")

with atheris.instrument_imports(include=["kcodec"]):
    # Only modules imported inside this block are instrumented: load the generated codecs, the
    # record readers and the capture reader now rather than lazily on first use.
    from kcodec.fuzz import selfcheck
    from kcodec.protocol.codec import message_names, module
    from kcodec.protocol.registry import api

    for _name in message_names() if SCOPE == "all" else SAMPLE:
        module(_name)

PAIRS = selfcheck.pairs()
_INDEX = {pair: i for i, pair in enumerate(PAIRS)}
CHECKS = ("body", "request_frame", "response_frame", "records", "capture")


def test_one_input(data: bytes) -> None:
    if len(data) < 3:
        return
    check = CHECKS[data[0] % len(CHECKS)]
    name, version = PAIRS[int.from_bytes(data[1:3], "big") % len(PAIRS)]
    payload = data[3:]
    if check == "body":
        selfcheck.check_body(name, version, payload)
    elif check == "request_frame":
        selfcheck.check_request_frame(payload)
    elif check == "response_frame":
        key = _response_key(name)
        if key is not None:
            selfcheck.check_response_frame(payload, key, version)
    elif check == "records":
        selfcheck.check_records(payload)
    else:
        selfcheck.check_capture(payload)


def _response_key(name: str) -> int | None:
    if not name.endswith("Response"):
        return None
    return api(name[: -len("Response")]).key


def encode_input(check: str, payload: bytes, name: str | None = None, version: int | None = None) -> bytes:
    pair = _INDEX.get((name, version), 0) if name is not None else 0
    return bytes([CHECKS.index(check)]) + pair.to_bytes(2, "big") + payload


def write_seeds(folder: Path) -> int:
    """Seed inputs: golden bodies, the regression corpus, the sample capture."""
    sys.path.insert(0, str(ROOT / "tests"))
    from golden_data import message_cases

    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    seen: set[bytes] = set()

    def put(data: bytes) -> None:
        nonlocal n
        if data not in seen:
            seen.add(data)
            (folder / f"seed-{n:05d}").write_bytes(data)
            n += 1

    for case in message_cases()[::7]:
        put(encode_input("body", bytes.fromhex(case["hex"]), case["message"], case["version"]))
    for path in sorted((ROOT / "tests" / "fuzz_corpus").glob("*.json")):
        for case in json.loads(path.read_text())["cases"]:
            name = case.get("message")
            put(encode_input(case["check"], bytes.fromhex(case["hex"]), name, case.get("version")))
    put(encode_input("capture", (ROOT / "samples" / "sample.pcap").read_bytes()))
    return n


def main() -> None:
    if len(sys.argv) >= 3 and sys.argv[1] == "--write-seeds":
        print(f"{write_seeds(Path(sys.argv[2]))} seed inputs written to {sys.argv[2]}")
        return
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
