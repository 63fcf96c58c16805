"""ApiVersions handshake fallbacks (KIP-511) against an in-process fake broker, version choice, field
requirements, the versions report and the release fingerprint."""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_broker import FakeBroker, api_versions_response, frame, read_request

import kcodec
from kcodec.net.client import AsyncConnection, Connection
from kcodec.net.client_errors import FieldUnavailableError, NoCommonVersionError
from kcodec.net.fingerprint import fingerprint, known_releases, release_ranges
from kcodec.net.negotiation import (
    async_handshake,
    field_requirement,
    handshake,
    kcodec_profile,
    key_fields,
    negotiate,
)
from kcodec.net.versions_report import render_versions_report, versions_report
from kcodec.protocol.frames import RequestFrame

KMAX = kcodec.api("ApiVersions").max_version
# What librdkafka's mock cluster (2.16) answers to ApiVersions v3/v4 (after the correlation id): error 35,
# a 1-byte ApiKeys count of 1 (not the compact 2), ApiVersions 0-2 without tagged fields, ThrottleTimeMs 0.
RDKAFKA_MOCK_REPLY = bytes.fromhex("00230100120000000200000000")
V0_UNSUPPORTED_UP_TO_2 = struct.pack(">hi", 35, 1) + struct.pack(">hhh", 18, 0, 2)


def broker_for(reply: Callable[[RequestFrame], bytes | None]):  # type: ignore[no-untyped-def]
    """A session answering each request with ``reply(req)`` (None: close the connection)."""

    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (r := await read_request(reader)) is not None:
            data = reply(r)
            if data is None:
                return
            writer.write(data)
            await writer.drain()

    return session


def run(reply: Callable[[RequestFrame], bytes | None], timeout: float = 5.0) -> list[tuple[int, str]]:
    with FakeBroker(broker_for(reply)) as broker, Connection("127.0.0.1", broker.port, timeout=timeout) as c:
        result = handshake(c)
    run.last = result  # type: ignore[attr-defined]
    return [(a.version, a.outcome) for a in result.attempts]


def kip511(max_version: int) -> Callable[[RequestFrame], bytes]:
    """A broker that knows ApiVersions up to ``max_version`` and answers higher ones as KIP-511 says."""

    def reply(r: RequestFrame) -> bytes:
        if r.api_version > max_version:
            return frame(
                r.correlation_id, struct.pack(">hi", 35, 1) + struct.pack(">hhh", 18, 0, max_version)
            )
        return api_versions_response(r, r.api_version, k18=(0, max_version), k1=(0, 11))

    return reply


def test_modern_broker_one_attempt() -> None:
    assert run(kip511(KMAX)) == [(KMAX, "ok")]
    result = run.last  # type: ignore[attr-defined]
    assert result.ok and result.version == KMAX and result.broker_ranges == {18: (0, KMAX), 1: (0, 11)}


def test_unsupported_version_retries_at_advertised_max() -> None:
    assert run(kip511(2)) == [(KMAX, "unsupported_version"), (2, "ok")]
    first = run.last.attempts[0]  # type: ignore[attr-defined]
    assert first.error_code == 35 and first.decoded_as == 0


def test_unsupported_version_in_requested_layout_is_accepted() -> None:
    def reply(r: RequestFrame) -> bytes:
        if r.api_version > 1:
            return api_versions_response(r, r.api_version, error_code=35, k18=(0, 1))
        return api_versions_response(r, r.api_version, k18=(0, 1))

    assert run(reply) == [(KMAX, "unsupported_version"), (1, "ok")]


def test_advertised_max_not_lower_steps_down_by_one() -> None:
    def reply(r: RequestFrame) -> bytes:
        if r.api_version >= KMAX - 1:  # buggy: claims to support what it rejects
            return frame(r.correlation_id, struct.pack(">hi", 35, 1) + struct.pack(">hhh", 18, 0, KMAX))
        return api_versions_response(r, r.api_version, k18=(0, KMAX))

    assert run(reply) == [(KMAX, "unsupported_version"), (KMAX - 1, "unsupported_version"), (KMAX - 2, "ok")]


def test_no_api_versions_range_falls_back_to_v0() -> None:
    def reply(r: RequestFrame) -> bytes:
        if r.api_version > 0:
            return frame(r.correlation_id, struct.pack(">hi", 35, 0))
        return api_versions_response(r, 0, k18=(0, 0))

    assert run(reply) == [(KMAX, "unsupported_version"), (0, "ok")]


@pytest.mark.parametrize(
    "garbage", [b"", b"\x00", b"\xff" * 40, b"\x00\x23\x05"], ids=["empty", "1", "ff", "short"]
)
def test_reply_matching_neither_layout_falls_back_to_v0(garbage: bytes) -> None:
    def reply(r: RequestFrame) -> bytes:
        if r.api_version > 0:
            return frame(r.correlation_id, garbage)
        return api_versions_response(r, 0, k18=(0, 2))

    assert run(reply) == [(KMAX, "malformed"), (0, "ok")]
    assert "neither layout" in run.last.attempts[0].detail  # type: ignore[attr-defined]
    assert run.last.attempts[0].quirk is None  # type: ignore[attr-defined]


def int8_count_reply(error_code: int, ranges: dict[int, tuple[int, int]]) -> bytes:
    """The body layout librdkafka's mock writes for ApiVersions v3+ requests."""
    entries = b"".join(struct.pack(">hhh", k, lo, hi) for k, (lo, hi) in ranges.items())
    return struct.pack(">hB", error_code, len(ranges)) + entries + struct.pack(">i", 0)


def mock_like(max_version: int, ranges: dict[int, tuple[int, int]]) -> Callable[[RequestFrame], bytes]:
    """Like librdkafka's mock: v3+ requests get the 1-byte-count layout (error 35 above
    ``max_version`` with only ApiVersions' range, else error 0 with all); v0-v2 are answered correctly."""

    def reply(r: RequestFrame) -> bytes:
        if r.api_version >= 3:
            if r.api_version > max_version:
                return frame(r.correlation_id, int8_count_reply(35, {18: ranges[18]}))
            return frame(r.correlation_id, int8_count_reply(0, ranges))
        return api_versions_response(r, r.api_version, **{f"k{k}": v for k, v in ranges.items()})

    return reply


def test_rdkafka_mock_layout_is_recognised() -> None:
    assert int8_count_reply(35, {18: (0, 2)}) == RDKAFKA_MOCK_REPLY
    assert run(mock_like(2, {18: (0, 2), 1: (0, 16)})) == [(KMAX, "unsupported_version"), (2, "ok")]
    first = run.last.attempts[0]  # type: ignore[attr-defined]
    assert first.quirk == "int8_api_keys_count" and first.error_code == 35 and first.decoded_as is None
    assert "1-byte ApiKeys count of 1" in first.detail and "max v2" in first.detail
    assert run.last.broker_ranges == {18: (0, 2), 1: (0, 16)}  # type: ignore[attr-defined]


def test_rdkafka_mock_layout_without_error_is_not_trusted() -> None:
    # ApiVersions capped at v3 on the mock: v3 gets the same layout with error 0 and every API.
    ranges = {18: (0, 3), 1: (0, 16), 3: (0, 13)}
    assert run(mock_like(3, ranges)) == [(KMAX, "unsupported_version"), (3, "malformed"), (2, "ok")]
    second = run.last.attempts[1]  # type: ignore[attr-defined]
    assert second.quirk == "int8_api_keys_count" and second.error_code == 0
    assert "count of 3" in second.detail and "retrying at v2" in second.detail
    assert run.last.broker_ranges == ranges  # type: ignore[attr-defined]


def test_reply_in_another_versions_layout() -> None:
    def v2_layout(code: int, top: int) -> Callable[[RequestFrame], bytes]:
        def reply(r: RequestFrame) -> bytes:
            v = min(r.api_version, 2)
            return api_versions_response(r, v, error_code=code if r.api_version > 2 else 0, k18=(0, top))

        return reply

    assert run(v2_layout(35, 2)) == [(KMAX, "unsupported_version"), (2, "ok")]
    first = run.last.attempts[0]  # type: ignore[attr-defined]
    assert first.quirk == "other_version_layout" and first.decoded_as == 2 and "v2 layout" in first.detail
    # no error code but the wrong layout: not trusted, asked again in the layout it spoke
    assert run(v2_layout(0, KMAX)) == [(KMAX, "malformed"), (2, "ok")]
    assert run(v2_layout(7, 2)) == [(KMAX, "error")]
    assert run.last.attempts[0].quirk == "other_version_layout"  # type: ignore[attr-defined]


def test_flexible_response_header_is_recognised() -> None:
    def reply(r: RequestFrame) -> bytes:
        if r.api_version > 2:  # a tagged-field byte after the correlation id, then a v0 error body
            return frame(r.correlation_id, b"\x00" + V0_UNSUPPORTED_UP_TO_2)
        return api_versions_response(r, r.api_version, k18=(0, 2))

    assert run(reply) == [(KMAX, "unsupported_version"), (2, "ok")]
    first = run.last.attempts[0]  # type: ignore[attr-defined]
    assert first.quirk == "flexible_response_header" and first.decoded_as == 0
    assert "tagged-field byte follows the correlation id" in first.detail

    def ok_body(r: RequestFrame) -> bytes:
        good = api_versions_response(r, r.api_version, k18=(0, KMAX))
        if r.api_version < 3:
            return good
        return frame(r.correlation_id, b"\x00" + good[8:])

    # each flexible version down to v3 is tried (the layout is the same), then v2 reads
    assert run(ok_body) == [*((v, "malformed") for v in range(KMAX, 2, -1)), (2, "ok")]
    assert {a.quirk for a in run.last.attempts[:-1]} == {"flexible_response_header"}  # type: ignore[attr-defined]


def test_quirk_is_reported_for_captured_bytes() -> None:
    report = versions_report(struct.pack(">i", 7) + RDKAFKA_MOCK_REPLY)  # correlation id + body
    assert not report["handshake"]["ok"]
    assert "1-byte ApiKeys count of 1" in report["handshake"]["error"]


def test_v0_layout_without_error_is_not_trusted() -> None:
    def reply(r: RequestFrame) -> bytes:
        return api_versions_response(r, 0, k18=(0, 0))

    assert run(reply) == [(KMAX, "malformed"), (0, "ok")]


def test_failures_at_v0_end_the_handshake() -> None:
    assert run(
        lambda r: (
            frame(r.correlation_id, V0_UNSUPPORTED_UP_TO_2)
            if r.api_version == 0
            else frame(r.correlation_id, b"junk")
        )
    ) == [(KMAX, "malformed"), (0, "unsupported_version")]
    assert not run.last.ok and "v0" in run.last.error  # type: ignore[attr-defined]
    assert run(lambda r: frame(r.correlation_id, b"junk")) == [(KMAX, "malformed"), (0, "malformed")]
    assert not run.last.ok  # type: ignore[attr-defined]


def test_other_error_code_is_recorded() -> None:
    assert run(lambda r: api_versions_response(r, r.api_version, error_code=1, k18=(0, 4))) == [
        (KMAX, "error")
    ]
    assert run.last.attempts[0].error_code == 1  # type: ignore[attr-defined]


def test_silence_times_out_and_close_is_recorded() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(3)

    with FakeBroker(silent) as broker, Connection("127.0.0.1", broker.port, timeout=0.3) as c:
        result = handshake(c)
    assert [(a.version, a.outcome) for a in result.attempts] == [(KMAX, "timeout")] and not result.ok
    assert run(lambda r: None) == [(KMAX, "connection_error")]
    assert run(lambda r: struct.pack(">i", -5)) == [(KMAX, "protocol_error")]


def test_async_handshake_fallback() -> None:
    async def main() -> list[tuple[int, str]]:
        async with AsyncConnection("127.0.0.1", broker.port, timeout=5) as conn:
            result = await async_handshake(conn)
        return [(a.version, a.outcome) for a in result.attempts]

    with FakeBroker(broker_for(kip511(1))) as broker:
        assert asyncio.run(main()) == [(KMAX, "unsupported_version"), (1, "ok")]


def test_handshake_sends_client_software() -> None:
    with FakeBroker(broker_for(kip511(KMAX))) as broker, Connection("127.0.0.1", broker.port) as c:
        handshake(c)
    # the fake broker decoded the request with kcodec; recheck by a fresh request decode
    req = kcodec.message_class("ApiVersionsRequest")(
        client_software_name="kcodec", client_software_version="x"
    )
    data = kcodec.encode_request(req, KMAX, correlation_id=1)
    assert kcodec.decode_request(data).body.client_software_name == "kcodec"


# --- negotiate / require ---------------------------------------------------------------------------


def test_negotiate_and_reasons() -> None:
    n = negotiate(
        {1: (0, 8), 3: (0, 99), 9999: (0, 1), 18: (3, 4)}, {"Fetch": (0, 18), 3: (0, 5), 18: (0, 2)}
    )
    assert n.version("Fetch") == 8 and n.version(3) == 5
    with pytest.raises(NoCommonVersionError, match="broker starts at v3"):
        n.version("ApiVersions")
    assert n.choices[9999].version is None and "no codec" in (n.choices[9999].reason or "")
    with pytest.raises(NoCommonVersionError, match="does not offer"):
        negotiate({}).version("Produce")


def test_require_current_leader_epoch() -> None:
    assert field_requirement("FetchRequest", "CurrentLeaderEpoch")[0] == 9
    low = negotiate({1: (0, 8)})
    with pytest.raises(FieldUnavailableError, match=r"needs v9\+.*up to v8"):
        low.require("FetchRequest", "CurrentLeaderEpoch")
    high = negotiate({1: (0, 12), 2: (0, 3)})
    req = high.require("FetchRequest", "CurrentLeaderEpoch")
    assert req.available and req.usable == (9, 10, 11, 12)
    assert not high.check("ListOffsetsRequest", "CurrentLeaderEpoch").available
    assert high.fencing()["KIP-320"] is False
    with pytest.raises(FieldUnavailableError, match="no field"):
        high.require("FetchRequest", "NoSuchField")


def test_fencing_by_kip() -> None:
    full = negotiate(release_ranges("3.9.0"))
    # no released spec has KIP-359's field; only the proposal version does, off unless asked for
    assert full.fencing() == {"KIP-232": True, "KIP-320": True, "KIP-570": True}
    old_metadata = negotiate({**release_ranges("3.9.0"), 3: (0, 6)})
    assert old_metadata.fencing() == {"KIP-232": False, "KIP-320": False, "KIP-570": True}
    assert "up to v6" in old_metadata.check("MetadataResponse", "LeaderEpoch").reason
    assert any(f.endswith("(v7+, KIP-232, KIP-320)") for f in key_fields(3, 7))
    assert "FetchRequest.LastFetchedEpoch (v12+, KIP-595)" in key_fields(1, 12)
    gone = negotiate({3: (11, 13)}).check("MetadataResponse", "ClusterAuthorizedOperations")
    assert gone.reason == (
        "MetadataResponse.ClusterAuthorizedOperations exists only at v8-v10, none of which both sides "
        "support (up to v13)"
    )


def test_kcodec_profile_caps_the_client_side() -> None:
    profile = kcodec_profile({"Fetch": (0, 8), "OffsetForLeaderEpoch": None, 3: (0, 6)})
    assert profile[1] == (0, 8) and profile[3] == (0, 6) and 23 not in profile
    assert profile[0] == (kcodec.api(0).min_version, kcodec.api(0).released_max_version)
    n = negotiate(release_ranges("3.9.0"), profile)
    assert n.version("Fetch") == 8 and n.version("Produce") == release_ranges("3.9.0")[0][1]
    capped = r"needs v9\+, but the client profile goes only up to v8 \(the broker up to v\d+\)"
    with pytest.raises(FieldUnavailableError, match=capped):
        n.require("FetchRequest", "CurrentLeaderEpoch")
    assert n.choices[23].reason == "not in the client profile"
    assert n.fencing() == {"KIP-232": False, "KIP-320": False, "KIP-570": True}
    report = versions_report(_captured(release_ranges("3.9.0")), client_profile=profile)
    fetch = next(a for a in report["apis"] if a["api_key"] == 1)
    assert (fetch["kcodec_max"], fetch["negotiated"]) == (8, 8)
    assert report["client_profile"] == {"Fetch": [0, 8], "Metadata": [0, 6], "OffsetForLeaderEpoch": None}
    gap = report["fencing_gaps"]["KIP-320"][0]
    assert gap.startswith("FetchRequest.CurrentLeaderEpoch needs v9+, but the client profile goes only up to")
    text = render_versions_report(report)
    assert "client profile (the 'kcodec' column)" in text and f"KIP-320 no: {gap}" in text
    assert versions_report(_captured(release_ranges("3.9.0")))["client_profile"] is None


def test_versions_cli_cap_option(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kcodec.cli import main as cli_main

    path = tmp_path / "av.bin"
    path.write_bytes(_captured(release_ranges("3.9.0")))
    args = ["versions", "--captured", str(path), "--json", "--cap", "Fetch=0-8", "--cap", "23=none"]
    result = CliRunner().invoke(cli_main, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["client_profile"] == {"Fetch": [0, 8], "OffsetForLeaderEpoch": None}
    assert report["fencing"]["KIP-320"] is False
    bad = CliRunner().invoke(cli_main, ["versions", "--captured", str(path), "--cap", "Fetch=x"])
    assert bad.exit_code == 2 and "API=MIN-MAX" in bad.output


# --- report / fingerprint -----------------------------------------------------------------------------


def _captured(ranges: dict[int, tuple[int, int]], version: int = 3) -> bytes:
    cls = kcodec.message_class("ApiVersionsResponse")
    av = cls.ApiVersion  # type: ignore[attr-defined]
    body = cls(
        error_code=0,
        api_keys=[av(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in ranges.items()],
    )
    return kcodec.encode_response(body, version, correlation_id=5)


@pytest.mark.parametrize("release", ["2.2.2", "3.9.0"])
def test_versions_report_from_capture(release: str) -> None:
    ranges = release_ranges(release)
    report = versions_report(_captured(ranges))
    json.dumps(report)
    assert report["handshake"]["ok"] and report["handshake"]["version"] in (3, 4, 5)  # same layout
    assert release in report["fingerprint"]["consistent"]
    fetch = next(a for a in report["apis"] if a["api_key"] == 1)
    assert fetch["broker_max"] == ranges[1][1] and fetch["negotiated"] == ranges[1][1]
    assert any("CurrentLeaderEpoch" in f for f in fetch["key_fields"]) == (ranges[1][1] >= 9)
    text = render_versions_report(report)
    assert "Fetch" in text and "fingerprint:" in text


def test_versions_report_of_garbage_and_unreachable() -> None:
    report = versions_report(b"\x00\x00\x00\x02\x00\x01")
    assert not report["handshake"]["ok"] and report["apis"] == []
    assert "failed" in render_versions_report(report)


def test_fingerprint_rules() -> None:
    for release in known_releases():
        assert release in fingerprint(release_ranges(release))["consistent"], release
    r39 = release_ranges("3.9.0")
    # controller-only / mode-specific APIs may be missing; client-facing ones may not
    assert "3.9.0" in fingerprint({k: v for k, v in r39.items() if k != 52})["consistent"]  # Vote
    assert "3.9.0" not in fingerprint({k: v for k, v in r39.items() if k != 1})["consistent"]
    changed = dict(r39)
    changed[1] = (0, 99)
    fp = fingerprint(changed)
    assert fp["consistent"] == [] and "matches no known" in fp["verdict"]
    assert fp["closest"][0]["release"] == "3.9.0" and fp["closest"][0]["mismatched"][0]["api_key"] == 1
    # a broker advertising an API the release does not know is not that release
    r40 = dict(release_ranges("4.0.2"))
    assert "4.0.2" in fingerprint(r40)["consistent"]
    assert "4.0.2" not in fingerprint({**r40, 88: (0, 0)})["consistent"]  # StreamsGroupHeartbeat: 4.1+
    # 4.x brokers advertise Produce from v0 though their specs start at v3; nothing else is let through
    assert "4.0.2" in fingerprint({**r40, 0: (0, r40[0][1])})["consistent"]
    assert "4.0.2" not in fingerprint({**r40, 0: (1, r40[0][1])})["consistent"]
    assert "4.0.2" not in fingerprint({**r40, 1: (0, r40[1][1])})["consistent"]  # Fetch has no such rule
    empty = fingerprint({})
    assert empty["consistent"] == [] and empty["verdict"] == "no API ranges to compare"


def _default_broker(release: str) -> dict[int, tuple[int, int]]:
    """What a KRaft broker of ``release`` with default settings advertises, per the release's facts:
    the APIs of its broker listener at their stable versions (an unstable newest version is hidden, an
    API with none stable is left out), without the client telemetry APIs (only with a metrics plugin)."""
    from kcodec.net.fingerprint import _data

    out = {}
    for key, a in _data()["releases"][release]["apis"].items():
        hi = a["max"] - (1 if a["latest_version_unstable"] else 0)
        if "broker" in (a["listeners"] or []) and hi >= a["min"] and int(key) not in (71, 72):
            out[int(key)] = (a["min"], hi)
    return out


@pytest.mark.parametrize("release", ["3.9.0", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0"])
def test_fingerprint_names_each_kraft_release(release: str) -> None:
    """A default broker of every KRaft-era minor release is named, and only that release. (3.9.2
    advertises what 3.9.0 does, so the table lists 3.9.0 for both.)"""
    verdict = fingerprint(_default_broker(release))
    assert verdict["consistent"] == [release], verdict["verdict"]
    assert "3.9.2" not in known_releases()


def test_core_apis_are_the_ones_every_release_serves() -> None:
    from kcodec.net.fingerprint import core_apis

    core = core_apis()
    assert {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 18, 19, 20, 32} <= core
    assert not core & {4, 5, 6, 7}  # the ZooKeeper-era inter-broker APIs 4.0 removed
    assert not core & {52, 55, 62, 68, 71, 72, 78}  # controller-only, or newer than 2.2


def test_release_data_is_packaged_and_current() -> None:
    from importlib import resources

    assert resources.files("kcodec").joinpath("data", "release_api_versions.json").is_file()
    assert known_releases()[0] == "2.2.2" and known_releases()[-1] == "4.4.0"
    from release_jars import release_jar, tool

    for release in tool("import_release_versions").RELEASES:
        release_jar(release)  # skip (fail in CI) when a jar cannot be had
    assert tool("import_release_versions").main(["--check"]) == 0


def test_proposal_versions_are_chosen_only_when_enabled() -> None:
    produce = kcodec.api("Produce")
    assert produce.proposals == {14: "KIP-359"} and produce.is_proposal(14) and not produce.is_proposal(13)
    assert (produce.max_version, produce.released_max_version) == (14, 13)
    assert produce.source(14) == "kip-359-proposal"
    assert produce.versions_with_field("CurrentLeaderEpoch") == [14]
    assert kcodec.api("Fetch").proposals == {} and kcodec.api("Fetch").released_max_version == 18
    broker = {0: (3, 14), 1: (4, 17)}  # a broker (kcodec's mock with the flag) that advertises v14
    default = negotiate(broker)
    assert default.version("Produce") == 13 and "KIP-359" not in default.fencing()
    assert not default.check("ProduceRequest", "CurrentLeaderEpoch").versions
    enabled = negotiate(broker, proposals=True)
    assert enabled.version("Produce") == 14
    assert enabled.require("ProduceRequest", "CurrentLeaderEpoch").usable == (14,)
    assert enabled.fencing()["KIP-359"] is True
    assert negotiate({0: (3, 13)}, proposals=True).fencing()["KIP-359"] is False  # not advertised
    assert negotiate(broker, {"Produce": (0, 14)}).version("Produce") == 13  # a profile alone is not enough
    assert kcodec_profile(proposals=True)[0] == (0, 14) and kcodec_profile()[0] == (0, 13)
