"""The hypothesis fuzz harness over every decoder (a short run here; tools/selffuzz.py is the long one):
mutated encodings of generated messages for every (message, version) as bodies and frames, mutated
record batches of every codec, and a mutated capture file. Whatever kcodec accepts must re-encode
byte for byte (kcodec.fuzz.selfcheck); everything else must be a KcodecError."""

from __future__ import annotations

import os
import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kcodec
from kcodec.fuzz import selfcheck
from kcodec.fuzz.layout import layout
from kcodec.fuzz.mutate import Mutator, mutate_frame
from kcodec.protocol import strategies
from kcodec.records import NewRecord, build_batch

# tools/selffuzz.py --mode hypothesis runs these with many more examples (KCODEC_SELFFUZZ_EXAMPLES)
EXAMPLES = int(os.environ.get("KCODEC_SELFFUZZ_EXAMPLES", "150"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
SAMPLE = (Path(__file__).resolve().parent.parent / "samples" / "sample.pcap").read_bytes()


@SETTINGS
@given(st.data(), st.randoms(use_true_random=False))
def test_mutated_bodies(data: st.DataObject, rng: random.Random) -> None:
    name, version = data.draw(st.sampled_from(selfcheck.pairs()))
    body = kcodec.encode(data.draw(strategies.messages(name, version)), version)
    assert selfcheck.check_body(name, version, body) == "round-trip"
    spans = layout(name, version, body)
    mutator = Mutator(rng)
    for _ in range(5):
        selfcheck.check_body(name, version, mutator.mutate(body, spans).body)


@SETTINGS
@given(st.data(), st.randoms(use_true_random=False))
def test_mutated_frames(data: st.DataObject, rng: random.Random) -> None:
    info = data.draw(st.sampled_from(kcodec.apis()))
    version = data.draw(st.integers(info.min_version, info.max_version))
    req = data.draw(strategies.messages(info.request, version))
    resp = data.draw(strategies.messages(info.response, version))
    frame = kcodec.encode_request(req, version, correlation_id=rng.randrange(2**31))
    assert selfcheck.check_request_frame(frame) == "round-trip"
    rframe = kcodec.encode_response(resp, version, correlation_id=7)
    assert selfcheck.check_response_frame(rframe, info.key, version) == "round-trip"
    body = kcodec.encode(req, version)
    spans = layout(info.request, version, body)
    m = Mutator(rng).mutate(body, spans)
    selfcheck.check_request_frame(frame[: len(frame) - len(body)] + m.body)
    for f in mutate_frame(rng, info.key, version, 1, body, info.max_version).frames:
        selfcheck.check_request_frame(f)
    cut = rng.randrange(len(rframe) + 1)
    selfcheck.check_response_frame(rframe[:cut] + rng.randbytes(rng.randint(0, 3)), info.key, version)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]),
    st.sampled_from([0, 1, 2]),
    st.randoms(use_true_random=False),
)
def test_mutated_record_batches(codec: str, magic: int, rng: random.Random) -> None:
    if magic < 2 and codec == "zstd":
        codec = "gzip"
    data = build_batch(
        [NewRecord(rng.randbytes(rng.randint(0, 200)), key=b"k", headers=[] if magic < 2 else [("h", b"1")])],
        compression=codec,
        magic=magic,
    )
    assert selfcheck.check_records(data) == "read"
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(buf))
        buf[i] = rng.randrange(256)
    selfcheck.check_records(bytes(buf))
    selfcheck.check_records(data[: rng.randrange(len(data))])


@settings(max_examples=max(EXAMPLES // 4, 10), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False))
def test_mutated_capture(rng: random.Random) -> None:
    buf = bytearray(SAMPLE)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(buf))
        buf[i] = rng.randrange(256)
    selfcheck.check_capture(bytes(buf))
