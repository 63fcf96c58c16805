"""Every error the library raises on bad input is a KcodecError (with a builtin base where one fits),
and the frame helpers refuse a message of the wrong kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import kcodec
import kcodec.records as records
from kcodec.net.client_errors import NotInFlightError
from kcodec.protocol.errors import (
    EncodeError,
    InvalidArgumentError,
    JsonError,
    KcodecError,
    UnknownMessageError,
    UnsupportedVersionError,
    WrongTypeError,
)
from kcodec.protocol.model import Uuid

FetchRequest = kcodec.message_class("FetchRequest")
FetchResponse = kcodec.message_class("FetchResponse")
NewRecord = records.NewRecord


def test_encode_request_refuses_a_response() -> None:
    with pytest.raises(WrongTypeError, match="needs a request message, not FetchResponse"):
        kcodec.encode_request(FetchResponse(), 12, correlation_id=1)


def test_encode_response_refuses_a_request() -> None:
    with pytest.raises(WrongTypeError, match="needs a response message, not FetchRequest"):
        kcodec.encode_response(FetchRequest(), 12, correlation_id=1)


def test_frame_helpers_refuse_headers_and_data_messages() -> None:
    header = kcodec.message_class("RequestHeader")()
    data = kcodec.message_class("ConsumerProtocolAssignment")()
    for body in (header, data):
        with pytest.raises(WrongTypeError):
            kcodec.encode_request(body, 0, correlation_id=1)
        with pytest.raises(WrongTypeError):
            kcodec.encode_response(body, 0, correlation_id=1)
    with pytest.raises(WrongTypeError, match="header must be a RequestHeader"):
        kcodec.encode_request(FetchRequest(), 12, correlation_id=1, header=kcodec.message_class("ResponseHeader")())


def test_frame_helpers_still_frame_the_right_kind() -> None:
    frame = kcodec.encode_request(FetchRequest(), 12, correlation_id=9)
    assert kcodec.decode_request(frame).correlation_id == 9
    frame = kcodec.encode_response(FetchResponse(), 12, correlation_id=9)
    assert kcodec.decode_response(frame, 1, 12).correlation_id == 9


BAD_CALLS: list[tuple[str, Callable[[], Any], type[KcodecError], type[Exception] | None]] = [
    ("encode_request(str)", lambda: kcodec.encode_request("x", 1, correlation_id=1), WrongTypeError, TypeError),
    ("decode(str data)", lambda: kcodec.decode("FetchRequest", 12, "abc"), WrongTypeError, TypeError),
    ("encode(str)", lambda: kcodec.encode("x", 1), WrongTypeError, TypeError),  # type: ignore[arg-type]
    ("encoder(wrong class)", lambda: kcodec.encoder("FetchRequest", 12)(FetchResponse()), WrongTypeError, TypeError),
    ("Uuid(bad base64)", lambda: Uuid("!!!!"), InvalidArgumentError, ValueError),
    ("Uuid(15 bytes)", lambda: Uuid(bytes(15)), InvalidArgumentError, ValueError),
    ("Uuid(int)", lambda: Uuid(5), WrongTypeError, TypeError),  # type: ignore[arg-type]
    ("api(999)", lambda: kcodec.api(999), UnknownMessageError, KeyError),
    ("message_class(unknown)", lambda: kcodec.message_class("Nope"), UnknownMessageError, KeyError),
    ("decode(version 99)", lambda: kcodec.decode("FetchRequest", 99, b""), UnsupportedVersionError, None),
    ("decoder(version 'x')", lambda: kcodec.decoder("FetchRequest", "x"), UnsupportedVersionError, None),  # type: ignore[arg-type]
    ("encode(str field)", lambda: kcodec.encode(FetchRequest(max_wait_ms="x"), 12), EncodeError, None),  # type: ignore[arg-type]
    ("encode(int32 overflow)", lambda: kcodec.encode(FetchRequest(max_wait_ms=2**40), 12), EncodeError, None),
    ("from_json(bad)", lambda: kcodec.from_json("FetchRequest", 12, {"maxWaitMs": "x"}), JsonError, None),
    ("to_json(records mode)", lambda: kcodec.to_json(FetchRequest(), 12, records="zzz"), InvalidArgumentError, ValueError),  # type: ignore[arg-type]
    ("decode_response(api 999)", lambda: kcodec.decode_response(b"\0\0\0\4\0\0\0\1", 999, 0), UnknownMessageError, None),
    ("build_batch(brotli)", lambda: records.build_batch([NewRecord(b"x")], compression="brotli"), InvalidArgumentError, ValueError),
    ("build_batch(timestamp str)", lambda: records.build_batch([NewRecord(b"x", timestamp="now")]), WrongTypeError, TypeError),  # type: ignore[arg-type]
    ("build_batch(level str)", lambda: records.build_batch([NewRecord(b"x")], compression="gzip", compression_level="hi"), WrongTypeError, TypeError),  # type: ignore[arg-type]
    ("build_batch(timestamp type 7)", lambda: records.build_batch([NewRecord(b"x")], timestamp_type=7), InvalidArgumentError, ValueError),  # type: ignore[arg-type]
    ("build_batch(magic 7)", lambda: records.build_batch([NewRecord(b"x")], magic=7), EncodeError, None),
    ("build_batch(producer id 2**70)", lambda: records.build_batch([NewRecord(b"x")], producer_id=2**70), EncodeError, None),
    ("iter_batches(str)", lambda: list(records.iter_batches("abc")), WrongTypeError, TypeError),  # type: ignore[arg-type]
    ("records_to_json(str)", lambda: records.records_to_json("abc"), WrongTypeError, TypeError),  # type: ignore[arg-type]
    ("records_to_json(values)", lambda: records.records_to_json(b"", values="hex"), InvalidArgumentError, ValueError),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("what", "call", "error", "builtin"), BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_input_raises_a_kcodec_error(
    what: str, call: Callable[[], Any], error: type[KcodecError], builtin: type[Exception] | None
) -> None:
    with pytest.raises(error) as exc:
        call()
    assert isinstance(exc.value, KcodecError)
    if builtin is not None:  # code that caught the builtin before keeps working
        assert isinstance(exc.value, builtin)


def test_receive_of_unknown_correlation_id_is_a_kcodec_key_error() -> None:
    from kcodec.net.client import Connection

    conn = Connection("127.0.0.1", 9)
    with pytest.raises(NotInFlightError) as exc:
        conn.receive_raw(5)
    assert isinstance(exc.value, KeyError) and isinstance(exc.value, KcodecError)
    assert str(exc.value) == "no request with correlation id 5 is in flight"
