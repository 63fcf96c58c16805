"""What a Python user gets: py.typed, typed by-name functions, public message classes, dir()/help(),
submodules as attributes, error names in JSON."""

from __future__ import annotations

import importlib.resources
import pydoc
import re
import subprocess
import sys
from pathlib import Path

import pytest

import kcodec
import kcodec.protocol.messages
from kcodec._generated import MESSAGES

SAMPLES = Path(__file__).parent / "typing_samples"


def test_py_typed_marker_ships_in_the_package() -> None:
    assert (importlib.resources.files("kcodec") / "py.typed").is_file()


def _mypy(tmp_path: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), *map(str, files)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False)


def test_mypy_strict_on_user_code(tmp_path: Path) -> None:
    """user_ok.py (the API as the README uses it) passes mypy --strict without ignores; every line of
    user_bad.py marked ``# E: code`` is reported with that code, and nothing else: the types are real,
    not Any."""
    ok, bad = SAMPLES / "user_ok.py", SAMPLES / "user_bad.py"
    assert "type: ignore" not in ok.read_text()
    proc = _mypy(tmp_path, ok, bad)
    reported = set()
    for line in proc.stdout.splitlines():
        m = re.match(r"(.+?):(\d+): error: .*\[([\w-]+)\]$", line)
        if m:
            reported.add((Path(m.group(1)).name, int(m.group(2)), m.group(3)))
    expected = set()
    for no, text in enumerate(bad.read_text().splitlines(), 1):
        m = re.search(r"# E: ([\w-]+)", text)
        if m:
            expected.add(("user_bad.py", no, m.group(1)))
    assert len(expected) >= 5
    assert reported == expected, proc.stdout + proc.stderr


def test_the_typed_user_code_runs() -> None:
    proc = subprocess.run(
        [sys.executable, str(SAMPLES / "user_ok.py")], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_typing_module_covers_every_message() -> None:
    from kcodec._generated import typing_api

    assert typing_api.__all__ == sorted(MESSAGES)
    source = Path(typing_api.__file__).read_text()
    for name in MESSAGES:
        for fn in ("decode", "decoder", "encoder", "message_class", "from_json"):
            assert re.search(rf"def {fn}\(\s*message_name: Literal\['{name}'\]", source), (fn, name)
    # at run time the names are the real functions
    assert typing_api.decode is kcodec.decode and typing_api.from_json is kcodec.from_json


def test_every_message_class_is_public() -> None:
    for name in MESSAGES:
        cls = getattr(kcodec.protocol.messages, name)
        assert cls is kcodec.message_class(name)
        assert cls.MESSAGE_NAME == name
    assert sorted(MESSAGES) == kcodec.protocol.messages.__all__
    assert set(MESSAGES) <= set(dir(kcodec.protocol.messages))
    from kcodec.protocol.codec import message_info
    from kcodec.protocol.messages import FetchRequest, MetadataResponse

    assert FetchRequest.FetchTopic is message_info("FetchRequest").structs["FetchTopic"].cls
    assert MetadataResponse.MetadataResponseBroker(node_id=3).node_id == 3
    with pytest.raises(AttributeError, match="no such message"):
        _ = kcodec.protocol.messages.FetchReqest


def test_dir_and_help_list_the_public_api() -> None:
    names = dir(kcodec)
    for name in kcodec.__all__:
        assert name in names
    for name in ("decode", "encode", "encode_request", "decode_response", "to_json", "api", "records", "client"):
        assert name in names
    text = pydoc.render_doc(kcodec, renderer=pydoc.plaintext)
    for fn in ("decode(message_name", "encode(message", "encode_request(body", "to_json(message", "apis()"):
        assert fn in text, fn


@pytest.mark.parametrize("name", ["records", "client", "messages", "sentinels", "error_codes", "negotiation"])
def test_submodules_are_attributes_without_an_import(name: str) -> None:
    code = f"import kcodec, types; m = kcodec.{name}; assert isinstance(m, types.ModuleType); print(m.__name__)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    package, _, last = proc.stdout.strip().rpartition(".")
    assert last == name and package in ("kcodec", "kcodec.protocol", "kcodec.net")


def test_import_kcodec_stays_lazy() -> None:
    code = (
        "import sys, kcodec; dir(kcodec); "
        "print(sorted(m for m in sys.modules if m.startswith('kcodec._generated.')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_to_json_adds_error_names() -> None:
    from kcodec.protocol.messages import FetchResponse

    part = FetchResponse.PartitionData(partition_index=0, error_code=75)
    resp = FetchResponse(error_code=0, responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[part])])
    obj = kcodec.to_json(resp, 12, error_names=True)
    assert obj["errorCode"] == 0 and obj["errorCodeName"] == "NONE"
    p = obj["responses"][0]["partitions"][0]
    assert p["errorCode"] == 75 and p["errorCodeName"] == "UNKNOWN_LEADER_EPOCH"
    assert "errorCodeName" not in kcodec.to_json(resp, 12)
    # the names are a view: from_json reads the same message back
    assert kcodec.from_json("FetchResponse", 12, obj) == resp


def test_with_error_names_on_any_json() -> None:
    from kcodec.protocol.error_codes import with_error_names

    got = with_error_names({"a": [{"topicErrorCode": 74}, {"errorCode": 999}], "errorCode": True})
    assert got == {
        "a": [
            {"topicErrorCode": 74, "topicErrorCodeName": "FENCED_LEADER_EPOCH"},
            {"errorCode": 999, "errorCodeName": "UNKNOWN_ERROR_CODE_999"},
        ],
        "errorCode": True,
    }
