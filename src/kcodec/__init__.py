"""kcodec: byte-exact Apache Kafka wire-protocol codecs generated from Kafka's own message specs.

The public API is imported lazily so that ``import kcodec`` stays cheap; each message's codec is
loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kcodec import errors
from kcodec.errors import DecodeError, EncodeError, KcodecError, UnsupportedVersionError

__version__ = "0.1.0"

__all__ = [
    "DecodeError",
    "EncodeError",
    "ErrorCode",
    "KcodecError",
    "UnsupportedVersionError",
    "api",
    "apis",
    "compiled",
    "construct_schema",
    "decode",
    "decode_request",
    "decode_response",
    "decoder",
    "encode",
    "encode_chunks",
    "encode_request",
    "encode_response",
    "encoder",
    "error_name",
    "errors",
    "from_json",
    "message_class",
    "to_json",
]

_LAZY = {
    "decode": ("kcodec.codec", "decode"),
    "encode": ("kcodec.codec", "encode"),
    "decoder": ("kcodec.codec", "decoder"),
    "encoder": ("kcodec.codec", "encoder"),
    "encode_chunks": ("kcodec.codec", "encode_chunks"),
    "message_class": ("kcodec.codec", "message_class"),
    "to_json": ("kcodec.jsonconv", "to_json"),
    "from_json": ("kcodec.jsonconv", "from_json"),
    "api": ("kcodec.registry", "api"),
    "apis": ("kcodec.registry", "apis"),
    "encode_request": ("kcodec.frames", "encode_request"),
    "encode_response": ("kcodec.frames", "encode_response"),
    "decode_request": ("kcodec.frames", "decode_request"),
    "decode_response": ("kcodec.frames", "decode_response"),
    "construct_schema": ("kcodec.construct_backend", "construct_schema"),
    "strategies": ("kcodec.strategies", None),
    "ErrorCode": ("kcodec.error_codes", "ErrorCode"),
    "error_name": ("kcodec.error_codes", "error_name"),
}

if TYPE_CHECKING:
    compiled: bool
    from kcodec import strategies as strategies
    from kcodec.codec import decode, decoder, encode, encode_chunks, encoder, message_class
    from kcodec.construct_backend import construct_schema
    from kcodec.error_codes import ErrorCode, error_name
    from kcodec.frames import decode_request, decode_response, encode_request, encode_response
    from kcodec.jsonconv import from_json, to_json
    from kcodec.registry import api, apis


def __getattr__(name: str) -> Any:
    if name == "compiled":
        # True in the compiled build (KCODEC_COMPILE=1 pip install .): the base classes and wire helpers
        # are mypyc extension modules, and so are the codecs of kcodec._generated.COMPILED.
        from kcodec import model

        is_compiled = not str(model.__file__).endswith(".py")
        globals()[name] = is_compiled
        return is_compiled
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'kcodec' has no attribute {name!r}")
    import importlib

    mod = importlib.import_module(target[0])
    value = mod if target[1] is None else getattr(mod, target[1])
    globals()[name] = value
    return value
