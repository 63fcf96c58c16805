"""kcodec: byte-exact Apache Kafka wire-protocol codecs generated from Kafka's own message specs.

Bodies by message name and version::

    msg = kcodec.decode("FetchRequest", 12, data)     # a kcodec.messages.FetchRequest
    data = kcodec.encode(msg, 12)
    obj = kcodec.to_json(msg, 12, error_names=True)   # Kafka's JSON, plus the names of error codes

Frames (``encode_request``, ``decode_response``, ...), the API registry (``api``, ``apis``), Kafka's
error codes (``ErrorCode``, ``error_name``, ``is_retriable``) and these submodules:
``kcodec.messages`` (every message class), ``kcodec.records`` (record batches),
``kcodec.client`` (connections, TLS, SASL), ``kcodec.negotiation`` (ApiVersions),
``kcodec.cluster`` (Metadata: brokers, topics, partitions), ``kcodec.sentinels`` (-1/-2 epochs, ...),
``kcodec.errors`` (the ``KcodecError`` hierarchy).

Everything is imported lazily, so ``import kcodec`` stays cheap; each message's codec is loaded on
first use. ``dir(kcodec)`` and ``help(kcodec)`` list the whole public API.
"""

from __future__ import annotations

import importlib
import os.path
from typing import TYPE_CHECKING, Any

from kcodec import errors
from kcodec.errors import DecodeError, EncodeError, KcodecError, UnsupportedVersionError

__version__ = "0.1.0"

#: public name -> (module, attribute; None: the module itself)
_LAZY: dict[str, tuple[str, str | None]] = {
    "decode": ("kcodec.codec", "decode"),
    "encode": ("kcodec.codec", "encode"),
    "decoder": ("kcodec.codec", "decoder"),
    "encoder": ("kcodec.codec", "encoder"),
    "encode_chunks": ("kcodec.codec", "encode_chunks"),
    "message_class": ("kcodec.codec", "message_class"),
    "message_names": ("kcodec.codec", "message_names"),
    "to_json": ("kcodec.jsonconv", "to_json"),
    "from_json": ("kcodec.jsonconv", "from_json"),
    "api": ("kcodec.registry", "api"),
    "apis": ("kcodec.registry", "apis"),
    "encode_request": ("kcodec.frames", "encode_request"),
    "encode_response": ("kcodec.frames", "encode_response"),
    "decode_request": ("kcodec.frames", "decode_request"),
    "decode_response": ("kcodec.frames", "decode_response"),
    "construct_schema": ("kcodec.construct_backend", "construct_schema"),
    "ErrorCode": ("kcodec.error_codes", "ErrorCode"),
    "error_name": ("kcodec.error_codes", "error_name"),
    "is_retriable": ("kcodec.error_codes", "is_retriable"),
    "Message": ("kcodec.model", "Message"),
    "Uuid": ("kcodec.model", "Uuid"),
    "client": ("kcodec.client", None),
    "cluster": ("kcodec.cluster", None),
    "error_codes": ("kcodec.error_codes", None),
    "messages": ("kcodec.messages", None),
    "negotiation": ("kcodec.negotiation", None),
    "records": ("kcodec.records", None),
    "sentinels": ("kcodec.sentinels", None),
    "strategies": ("kcodec.strategies", None),
}

__all__ = [
    "DecodeError",
    "EncodeError",
    "ErrorCode",
    "KcodecError",
    "Message",
    "UnsupportedVersionError",
    "Uuid",
    "api",
    "apis",
    "build",
    "client",
    "cluster",
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
    "error_codes",
    "error_name",
    "errors",
    "from_json",
    "is_retriable",
    "message_class",
    "message_names",
    "messages",
    "negotiation",
    "records",
    "sentinels",
    "to_json",
]
# (kcodec.strategies needs hypothesis: it is reachable as an attribute but not listed)

if TYPE_CHECKING:
    build: str
    compiled: bool
    from kcodec import client as client
    from kcodec import cluster as cluster
    from kcodec import error_codes as error_codes
    from kcodec import messages as messages
    from kcodec import negotiation as negotiation
    from kcodec import records as records
    from kcodec import sentinels as sentinels
    from kcodec import strategies as strategies
    from kcodec._generated.typing_api import (
        decode as decode,
    )
    from kcodec._generated.typing_api import (
        decoder as decoder,
    )
    from kcodec._generated.typing_api import (
        encoder as encoder,
    )
    from kcodec._generated.typing_api import (
        from_json as from_json,
    )
    from kcodec._generated.typing_api import (
        message_class as message_class,
    )
    from kcodec.codec import (
        encode as encode,
    )
    from kcodec.codec import (
        encode_chunks as encode_chunks,
    )
    from kcodec.codec import (
        message_names as message_names,
    )
    from kcodec.construct_backend import (
        construct_schema as construct_schema,
    )
    from kcodec.error_codes import (
        ErrorCode as ErrorCode,
    )
    from kcodec.error_codes import (
        error_name as error_name,
    )
    from kcodec.error_codes import (
        is_retriable as is_retriable,
    )
    from kcodec.frames import (
        decode_request as decode_request,
    )
    from kcodec.frames import (
        decode_response as decode_response,
    )
    from kcodec.frames import (
        encode_request as encode_request,
    )
    from kcodec.frames import (
        encode_response as encode_response,
    )
    from kcodec.jsonconv import (
        to_json as to_json,
    )
    from kcodec.model import (
        Message as Message,
    )
    from kcodec.model import (
        Uuid as Uuid,
    )
    from kcodec.registry import (
        api as api,
    )
    from kcodec.registry import (
        apis as apis,
    )


def __getattr__(name: str) -> Any:
    if name == "build":
        # which build is installed: "compiled" (KCODEC_COMPILE=1 and the like: codecs compiled, with the
        # capture path), "capture" (the capture path compiled, the codecs interpreted: the default of
        # `pip install .`) or "pure" (`pip install -e .`, KCODEC_COMPILE=0, or a compile that failed)
        # (mypyc's runtime module, kcodec__mypyc, ships beside the kcodec package only with compiled
        # modules; the capture stages are not imported to find out)
        from importlib.util import find_spec

        spec = find_spec("kcodec__mypyc")
        beside = os.path.dirname(os.path.dirname(__file__))
        compiled_any = spec is not None and os.path.dirname(str(spec.origin)) == beside
        kind = "compiled" if __getattr__("compiled") else "capture" if compiled_any else "pure"
        globals()[name] = kind
        return kind
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
    mod = importlib.import_module(target[0])
    value = mod if target[1] is None else getattr(mod, target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, "build", "compiled"})
