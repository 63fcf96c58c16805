"""The public names of ``kcodec`` survive the move of the codec core into ``kcodec.protocol`` and of the
network client into ``kcodec.net``: every name ``kcodec`` exported before still imports from
``kcodec``, the submodule attributes are the moved modules, and the old flat module paths are gone."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import kcodec

#: ``kcodec.__all__`` as it was before the layers became folders
PUBLIC_NAMES = [
    "DecodeError", "EncodeError", "ErrorCode", "KcodecError", "Message", "UnsupportedVersionError", "Uuid",
    "api", "apis", "build", "client", "cluster", "compiled", "construct_schema", "decode", "decode_request",
    "decode_response", "decoder", "encode", "encode_chunks", "encode_request", "encode_response", "encoder",
    "error_codes", "error_name", "errors", "from_json", "is_retriable", "message_class", "message_names",
    "messages", "negotiation", "records", "sentinels", "to_json",
]  # fmt: skip

#: the submodule attributes of ``kcodec`` and the module each one is now
SUBMODULES = {
    "client": "kcodec.net.client",
    "cluster": "kcodec.net.cluster",
    "negotiation": "kcodec.net.negotiation",
    "error_codes": "kcodec.protocol.error_codes",
    "errors": "kcodec.protocol.errors",
    "messages": "kcodec.protocol.messages",
    "sentinels": "kcodec.protocol.sentinels",
    "strategies": "kcodec.protocol.strategies",
    "records": "kcodec.records",
}


def test_all_lists_the_same_public_names() -> None:
    assert sorted(kcodec.__all__) == sorted(PUBLIC_NAMES)
    assert set(PUBLIC_NAMES) <= set(dir(kcodec))


def test_every_public_name_imports_from_kcodec_in_a_fresh_interpreter() -> None:
    # A fresh interpreter: no other import has loaded the submodules first.
    names = ", ".join(PUBLIC_NAMES)
    code = (
        f"from kcodec import {names}\nimport kcodec\n"
        "print(len([getattr(kcodec, n) for n in kcodec.__all__]))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(len(PUBLIC_NAMES))


@pytest.mark.parametrize("name", sorted(SUBMODULES))
def test_submodule_attributes_are_the_moved_modules(name: str) -> None:
    assert getattr(kcodec, name) is importlib.import_module(SUBMODULES[name])


def test_public_functions_and_classes_come_from_the_codec_core() -> None:
    assert kcodec.decode.__module__.startswith(("kcodec.protocol.", "kcodec._generated."))
    assert kcodec.encode.__module__ == "kcodec.protocol.codec"
    assert kcodec.decode_response.__module__ == "kcodec.protocol.frames"
    assert kcodec.Message.__module__ == "kcodec.protocol.model"
    assert kcodec.KcodecError.__module__ == "kcodec.protocol.errors"
    assert kcodec.ErrorCode.__module__ == "kcodec.protocol.error_codes"
    assert kcodec.client.Connection.__module__ == "kcodec.net.client"


@pytest.mark.parametrize("name", ["codec", "_wire", "errors", "messages", "client", "quirks"])
def test_the_flat_module_paths_are_gone(name: str) -> None:
    # a clean move: no module is left at the old path (the root's attributes are the public way in)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"kcodec.{name}")
