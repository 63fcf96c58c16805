"""The fast paths of ``kcodec decode-capture`` give exactly what the plain code they stand in for gives."""

from __future__ import annotations

import datetime as dt

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kcodec.cli.capture_table import clock


def _datetime_clock(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC).strftime("%H:%M:%S.%f")[:-3]


@settings(max_examples=3000, deadline=None)
@given(
    st.one_of(
        st.floats(min_value=0, max_value=253402300799.0),
        st.builds(lambda s, us, d: s + us / 1e6 + d, st.integers(0, 2**34), st.integers(0, 10**6 - 1),
                  st.sampled_from([0.0, 5e-7, -5e-7, 4.9999e-7, 1e-9, -1e-9])),
    )
)
@example(0.0)
@example(1.9999995)
@example(1700000000.0000005)
@example(1700000000.0000015)
@example(86399.9999999)
def test_clock_is_datetime_s_text(ts: float) -> None:
    if 0 <= ts < 253402300800.0:
        assert clock(ts) == _datetime_clock(ts)


# --- segments: the Ethernet/IPv4/TCP fast path against the general parser ----------------------------

_IP_TCP = st.builds(
    lambda vihl, total, frag, proto, addrs, ports, seq, ack, off, flags, rest: bytes([vihl, 0])
    + total.to_bytes(2, "big") + b"\0\0" + frag.to_bytes(2, "big") + bytes([64, proto]) + b"\0\0"
    + addrs + ports + seq.to_bytes(4, "big") + ack.to_bytes(4, "big") + bytes([off, flags]) + rest,
    st.sampled_from([0x45, 0x45, 0x45, 0x46, 0x44, 0x65]),
    st.one_of(st.integers(0, 120), st.integers(0, 65535)),
    st.sampled_from([0, 0, 0, 0x4000, 0x2000, 0x0001]),
    st.sampled_from([6, 6, 6, 17]),
    st.binary(min_size=8, max_size=8),
    st.binary(min_size=4, max_size=4),
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1),
    st.sampled_from([0x50, 0x50, 0x80, 0x40, 0xF0, 0x00]),
    st.integers(0, 255),
    st.binary(max_size=80),
)


@settings(max_examples=2000, deadline=None)
@given(_IP_TCP, st.booleans(), st.integers(-1, 5000))
def test_ethernet_ipv4_fast_path_is_the_general_parse(ip: bytes, keep_acks: bool, data_offset: int) -> None:
    from kcodec.capture.segments import _DLT_EN10MB, _Fragment, _segment

    def parse(linktype: int, data: bytes, at: int) -> object:
        try:
            return _segment(linktype, data, 1.5, "f", 3, 7, at, keep_acks)
        except _Fragment:
            return "fragment"

    ether = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip
    fast = parse(_DLT_EN10MB, ether, data_offset)
    general = parse(101, ip, data_offset + 14 if data_offset >= 0 else -1)  # raw IP: no fast path
    assert fast == general
