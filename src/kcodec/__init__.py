"""kcodec: byte-exact Apache Kafka wire-protocol codecs generated from Kafka's own message specs.

Bodies by message name and version::

    msg = kcodec.decode("FetchRequest", 12, data)     # a kcodec.protocol.messages.FetchRequest
    data = kcodec.encode(msg, 12)
    obj = kcodec.to_json(msg, 12, error_names=True)   # Kafka's JSON, plus the names of error codes

Frames (``encode_request``, ``decode_response``, ...), the API registry (``api``, ``apis``), Kafka's
error codes (``ErrorCode``, ``error_name``, ``is_retriable``) and these submodules:
``kcodec.protocol.messages`` (every message class), ``kcodec.records`` (record batches),
``kcodec.net.client`` (connections, TLS, SASL), ``kcodec.net.negotiation`` (ApiVersions),
``kcodec.net.cluster`` (Metadata: brokers, topics, partitions), ``kcodec.protocol.sentinels``
(-1/-2 epochs, ...), ``kcodec.protocol.errors`` (the ``KcodecError`` hierarchy). Each is also an
attribute of ``kcodec`` under its own name (``messages``, ``records``, ``client``, ``negotiation``,
``cluster``, ``sentinels``, ``errors``).

Everything is imported lazily, so ``import kcodec`` stays cheap; each message's codec is loaded on
first use. ``dir(kcodec)`` and ``help(kcodec)`` list the whole public API.
"""

from __future__ import annotations

import importlib
import os.path
from typing import TYPE_CHECKING, Any

from kcodec.protocol import errors
from kcodec.protocol.errors import DecodeError, EncodeError, KcodecError, UnsupportedVersionError

__version__ = "0.1.0"

#: public name -> (module, attribute; None: the module itself)
_LAZY: dict[str, tuple[str, str | None]] = {
    "decode": ("kcodec.protocol.codec", "decode"),
    "encode": ("kcodec.protocol.codec", "encode"),
    "decoder": ("kcodec.protocol.codec", "decoder"),
    "encoder": ("kcodec.protocol.codec", "encoder"),
    "encode_chunks": ("kcodec.protocol.codec", "encode_chunks"),
    "message_class": ("kcodec.protocol.codec", "message_class"),
    "message_names": ("kcodec.protocol.codec", "message_names"),
    "to_json": ("kcodec.protocol.jsonconv", "to_json"),
    "from_json": ("kcodec.protocol.jsonconv", "from_json"),
    "api": ("kcodec.protocol.registry", "api"),
    "apis": ("kcodec.protocol.registry", "apis"),
    "encode_request": ("kcodec.protocol.frames", "encode_request"),
    "encode_response": ("kcodec.protocol.frames", "encode_response"),
    "decode_request": ("kcodec.protocol.frames", "decode_request"),
    "decode_response": ("kcodec.protocol.frames", "decode_response"),
    "construct_schema": ("kcodec.protocol.construct_backend", "construct_schema"),
    "ErrorCode": ("kcodec.protocol.error_codes", "ErrorCode"),
    "error_name": ("kcodec.protocol.error_codes", "error_name"),
    "is_retriable": ("kcodec.protocol.error_codes", "is_retriable"),
    "Message": ("kcodec.protocol.model", "Message"),
    "Uuid": ("kcodec.protocol.model", "Uuid"),
    "client": ("kcodec.net.client", None),
    "cluster": ("kcodec.net.cluster", None),
    "error_codes": ("kcodec.protocol.error_codes", None),
    "messages": ("kcodec.protocol.messages", None),
    "negotiation": ("kcodec.net.negotiation", None),
    "records": ("kcodec.records", None),
    "sentinels": ("kcodec.protocol.sentinels", None),
    "strategies": ("kcodec.protocol.strategies", None),
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
# (kcodec.protocol.strategies needs hypothesis: it is reachable as an attribute but not listed)

if TYPE_CHECKING:
    build: str
    compiled: bool
    from kcodec import records as records
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
    from kcodec.net import client as client
    from kcodec.net import cluster as cluster
    from kcodec.net import negotiation as negotiation
    from kcodec.protocol import error_codes as error_codes
    from kcodec.protocol import messages as messages
    from kcodec.protocol import sentinels as sentinels
    from kcodec.protocol import strategies as strategies
    from kcodec.protocol.codec import (
        encode as encode,
    )
    from kcodec.protocol.codec import (
        encode_chunks as encode_chunks,
    )
    from kcodec.protocol.codec import (
        message_names as message_names,
    )
    from kcodec.protocol.construct_backend import (
        construct_schema as construct_schema,
    )
    from kcodec.protocol.error_codes import (
        ErrorCode as ErrorCode,
    )
    from kcodec.protocol.error_codes import (
        error_name as error_name,
    )
    from kcodec.protocol.error_codes import (
        is_retriable as is_retriable,
    )
    from kcodec.protocol.frames import (
        decode_request as decode_request,
    )
    from kcodec.protocol.frames import (
        decode_response as decode_response,
    )
    from kcodec.protocol.frames import (
        encode_request as encode_request,
    )
    from kcodec.protocol.frames import (
        encode_response as encode_response,
    )
    from kcodec.protocol.jsonconv import (
        to_json as to_json,
    )
    from kcodec.protocol.model import (
        Message as Message,
    )
    from kcodec.protocol.model import (
        Uuid as Uuid,
    )
    from kcodec.protocol.registry import (
        api as api,
    )
    from kcodec.protocol.registry import (
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
        # True in the compiled build (KCODEC_COMPILE=1 pip install .): the codecs of
        # kcodec._generated.COMPILED are mypyc extension modules, messages' as well as the headers'
        # (a standard wheel compiles only the headers' codecs, with the capture path)
        from kcodec._generated import COMPILED

        is_compiled = any(not name.endswith("Header") for name in COMPILED)
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
