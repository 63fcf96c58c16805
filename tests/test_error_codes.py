"""The error-code table (kcodec.protocol.error_codes) agrees with two independent sources: kio's ErrorCode
(generated from Kafka's sources) and kafka-python's error classes."""

from __future__ import annotations

import inspect

import kafka.errors as kp_errors
import pytest
from kio.schema.errors import ErrorCode as KioErrorCode

from kcodec.protocol import sentinels
from kcodec.protocol.error_codes import ErrorCode, error_name, is_retriable

# Names kafka-python still spells the pre-rename way (Kafka renamed these codes over the years).
KAFKA_PYTHON_OLD_NAMES = {
    -1: "UNKNOWN",
    0: "NO_ERROR",
    6: "NOT_LEADER_FOR_PARTITION",
    10: "MESSAGE_SIZE_TOO_LARGE",
    17: "INVALID_TOPIC",
    39: "INVALID_REPLICATION_ASSIGNMENT",
}


def test_every_kio_code_has_kafkas_name_and_retriable_flag() -> None:
    kio = {m.value: m for m in KioErrorCode}
    ours = {m.value: m for m in ErrorCode}
    assert set(ours) == set(kio)
    for code, member in ours.items():
        assert member.name == kio[code].name.upper()
        assert member.retriable == kio[code].retriable, member.name


@pytest.mark.interop
def test_kafka_python_agrees_on_codes_names_and_retriable() -> None:
    checked = 0
    for _, cls in inspect.getmembers(kp_errors, inspect.isclass):
        code = getattr(cls, "errno", None)
        if not issubclass(cls, kp_errors.BrokerResponseError) or code is None:
            continue
        member = ErrorCode.of(code)
        assert member is not None, code
        assert cls.message in (member.name, KAFKA_PYTHON_OLD_NAMES.get(code)), code
        if code != 2:  # kafka-python treats CORRUPT_MESSAGE as final; Kafka's exception is retriable
            assert cls.retriable == member.retriable, member.name
        checked += 1
    assert checked > 120


def test_lookups_and_leader_epoch_codes() -> None:
    # KIP-320's two codes are 74 and 75 (76 is UNSUPPORTED_COMPRESSION_TYPE)
    assert ErrorCode.FENCED_LEADER_EPOCH == 74 and ErrorCode.UNKNOWN_LEADER_EPOCH == 75
    assert error_name(76) == "UNSUPPORTED_COMPRESSION_TYPE"
    assert error_name(74) == "FENCED_LEADER_EPOCH" and ErrorCode(75).snake_name == "unknown_leader_epoch"
    assert error_name(0) == "NONE" and error_name(-1) == "UNKNOWN_SERVER_ERROR"
    assert error_name(31999) == "UNKNOWN_ERROR_CODE_31999" and is_retriable(31999) is None
    assert is_retriable(74) is True and is_retriable(35) is False
    assert ErrorCode.of(12345) is None


def test_sentinels() -> None:
    assert sentinels.NO_LEADER_EPOCH == -1 and sentinels.LEADER_EPOCH_DURING_DELETE == -2
    assert sentinels.EARLIEST_TIMESTAMP == -2 and sentinels.LATEST_TIMESTAMP == -1
