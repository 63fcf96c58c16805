"""kcodec's one error hierarchy. Everything kcodec raises on bad input derives from ``KcodecError``."""

from __future__ import annotations


class KcodecError(Exception):
    """Base of every error kcodec raises on bad input, bad values or bad specs."""


class InvalidArgumentError(KcodecError, ValueError):
    """An argument has a value kcodec does not accept: an unknown compression codec or output mode, a
    malformed UUID, a bad host:port, ... (also a builtin ``ValueError``)."""


class WrongTypeError(KcodecError, TypeError):
    """A value of the wrong kind: not a kcodec message, not a byte buffer, or a message of the wrong
    kind for the call (a response given to ``encode_request``) (also a builtin ``TypeError``)."""


class SpecError(KcodecError):
    """A spec file, or a name/version asked of the registry, is invalid or unknown."""


class UnknownMessageError(SpecError, KeyError):
    """No message or API of that name or key is known."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class UnsupportedVersionError(KcodecError):
    """The version does not exist for that message, or a value cannot be written at it.

    Kafka's wording is kept: ``Attempted to write a non-default <field> at version <v>``.
    """


class EncodeError(KcodecError):
    """A value cannot be encoded: out of range, wrong type, too long. ``path`` names the field."""

    def __init__(self, reason: str, path: str = "") -> None:
        self.reason = reason
        self._segments: list[str] = []
        self._path = path
        super().__init__(reason)

    @property
    def path(self) -> str:
        return self._path or ".".join(reversed(self._segments)).replace(".[", "[")

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}" if self.path else self.reason


class NullValueError(EncodeError):
    """``None`` given for a field that is not nullable at the version being written (Kafka: NPE)."""


class DecodeError(KcodecError):
    """Bytes that are not a valid encoding. ``offset`` is the byte position in the decoded buffer and
    ``path`` the field being read, e.g. ``FetchRequest.topics[3].partitions[0].current_leader_epoch``.
    """

    def __init__(self, reason: str, offset: int, path: str = "") -> None:
        self.reason = reason
        self.offset = offset
        self._segments: list[str] = [path] if path else []
        super().__init__(reason)

    @property
    def path(self) -> str:
        return ".".join(reversed(self._segments)).replace(".[", "[")

    def __str__(self) -> str:
        where = f" in {self.path}" if self._segments else ""
        return f"{self.reason} at byte {self.offset}{where}"


class TrailingBytesError(DecodeError):
    """A body decoded completely but bytes were left over (strict mode only)."""


class JsonError(KcodecError):
    """A JSON value does not fit the message's schema (``from_json``); ``path`` names the field."""

    def __init__(self, reason: str, path: str = "") -> None:
        self.reason = reason
        self.path = path
        super().__init__(f"{path}: {reason}" if path else reason)
