"""API version negotiation: the ApiVersions handshake (KIP-511) and choosing a version per API.

The handshake logic is a small sans-I/O state machine (:class:`ApiVersionsHandshake`), driven over a
blocking :class:`~kcodec.net.client.Connection` by :func:`handshake` or over an
:class:`~kcodec.net.client.AsyncConnection` by :func:`async_handshake`:

1. send ApiVersionsRequest at kcodec's highest version, with ClientSoftwareName/Version;
2. a reply with error UNSUPPORTED_VERSION (35) is read in the v0 layout (KIP-511: the broker answers
   in v0 when it does not know the request's version) and the request is retried at the highest
   ApiVersions version the broker advertises, always strictly lower than the version that failed;
3. a reply that decodes neither at the version sent nor as v0 is examined for known deviations
   (:data:`kcodec.protocol.quirks.QUIRKS`): the layout of another ApiVersions version, a flexible response
   header, or the 1-byte ApiKeys count that librdkafka's mock cluster writes for v3+ requests. A
   recognised reply is recorded with its quirk and handled by its error code (35: retry at the
   advertised maximum; 0: not trusted, retry lower); an unrecognised one is recorded with both
   decode errors and the handshake falls back to v0. A failure at v0 ends it. Every attempt (version
   sent, outcome) is recorded, nothing hangs (every read has a timeout), the version only ever goes
   down, and broker misbehaviour never raises out of :func:`handshake`.

:func:`negotiate` then picks, per API, the highest version both sides support (or says why there is
none); versions that only a proposal spec set defines (kcodec's KIP-359 Produce v14, see
``ApiInfo.proposals``) are left out of kcodec's side unless ``proposals=True``. And
:meth:`Negotiation.require` checks that a field a feature needs is available, e.g.
``require("FetchRequest", "CurrentLeaderEpoch")`` for KIP-320 fencing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kcodec import __version__
from kcodec.net.client import AsyncConnection, Connection
from kcodec.net.client_errors import (
    ClientError,
    FieldUnavailableError,
    NoCommonVersionError,
    ProtocolError,
)
from kcodec.protocol.codec import message_class, message_info
from kcodec.protocol.errors import KcodecError, UnknownMessageError
from kcodec.protocol.frames import decode_response
from kcodec.protocol.model import Message
from kcodec.protocol.quirks import QUIRKS, QuirkReading, diagnose_api_versions_reply, ranges_from_response
from kcodec.protocol.registry import ApiInfo, api, apis

__all__ = [
    "FENCING_FIELDS",
    "QUIRKS",
    "UNSUPPORTED_VERSION",
    "ApiChoice",
    "ApiVersionsHandshake",
    "Attempt",
    "ClientProfile",
    "FieldRequirement",
    "HandshakeResult",
    "Negotiation",
    "QuirkReading",
    "async_handshake",
    "diagnose_api_versions_reply",
    "field_requirement",
    "handshake",
    "kcodec_profile",
    "negotiate",
    "ranges_from_response",
]

# A client's ranges by API key or name: ``{"Fetch": (0, 8), 3: (0, 12)}`` (see kcodec_profile).
ClientProfile = (
    Mapping[int, tuple[int, int]] | Mapping[str, tuple[int, int]] | Mapping[int | str, tuple[int, int]]
)

_Cap = tuple[int, int] | None

UNSUPPORTED_VERSION = 35
API_VERSIONS_KEY = 18
CLIENT_SOFTWARE_NAME = "kcodec"

# Leader-epoch fields behind KIP-232 (clients detect outdated metadata and committed offsets by leader
# epoch), KIP-320 (fetches and offset lookups fenced by the current leader epoch), KIP-359 (leader
# epoch verification on produce: no released spec carries the field, only kcodec's proposal version
# (Produce v14), so it counts only in a negotiation with proposals=True) and KIP-570 (leader epoch in
# StopReplica). (kip, message, field); a field the specs do not have is skipped by
# `Negotiation.fencing` and `key_fields`.
FENCING_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("KIP-232", "MetadataResponse", "LeaderEpoch"),
    ("KIP-232", "OffsetCommitRequest", "CommittedLeaderEpoch"),
    ("KIP-232", "OffsetFetchResponse", "CommittedLeaderEpoch"),
    ("KIP-320", "FetchRequest", "CurrentLeaderEpoch"),
    ("KIP-320", "ListOffsetsRequest", "CurrentLeaderEpoch"),
    ("KIP-320", "OffsetForLeaderEpochRequest", "CurrentLeaderEpoch"),
    ("KIP-320", "MetadataResponse", "LeaderEpoch"),
    ("KIP-359", "ProduceRequest", "CurrentLeaderEpoch"),
    ("KIP-570", "StopReplicaRequest", "LeaderEpoch"),
)
# Other epoch fields worth labelling in `key_fields` (not fencing in the sense above).
_OTHER_EPOCH_KIPS: dict[tuple[str, str], str] = {("FetchRequest", "LastFetchedEpoch"): "KIP-595"}

# --- the handshake -------------------------------------------------------------------------------


@dataclass(slots=True)
class Attempt:
    """One ApiVersionsRequest sent: its version and what came back."""

    version: int
    outcome: str  # ok|unsupported_version|error|malformed|timeout|connection_error|protocol_error
    error_code: int | None = None
    decoded_as: int | None = None  # the ApiVersionsResponse version whose layout the reply was read in
    detail: str = ""
    quirk: str | None = None  # a key of QUIRKS when the reply deviates from KIP-511 in a known way

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version, "outcome": self.outcome, "error_code": self.error_code,
            "decoded_as": self.decoded_as, "detail": self.detail, "quirk": self.quirk,
        }


@dataclass(slots=True)
class HandshakeResult:
    """What the ApiVersions handshake found: the broker's ranges, or why there are none."""

    attempts: list[Attempt] = field(default_factory=list)
    version: int | None = None  # the ApiVersions version that succeeded
    response: Message | None = None  # the ApiVersionsResponse that succeeded
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.response is not None

    @property
    def broker_ranges(self) -> dict[int, tuple[int, int]]:
        return ranges_from_response(self.response) if self.response is not None else {}

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok, "version": self.version, "error": self.error,
            "attempts": [a.to_dict() for a in self.attempts],
        }


def _advertised_api_versions_max(response: Message) -> int | None:
    for k in response.api_keys:  # type: ignore[attr-defined]
        if int(k.api_key) == API_VERSIONS_KEY:
            return int(k.max_version)
    return None


class ApiVersionsHandshake:
    """The handshake as a state machine: ``request()`` → send it → ``feed(raw reply)``; repeat while
    ``done`` is false. ``feed_failure`` records a timeout or broken connection (which ends it)."""

    def __init__(
        self,
        *,
        start_version: int | None = None,
        software_name: str = CLIENT_SOFTWARE_NAME,
        software_version: str = __version__,
    ) -> None:
        info = api(API_VERSIONS_KEY)
        self._info = info
        self.version = info.max_version if start_version is None else start_version
        info.request_header_version(self.version)  # raises UnsupportedVersionError if unknown
        self.software_name = software_name
        self.software_version = software_version
        self.result = HandshakeResult()
        self.done = False

    def request(self) -> Message:
        """The ApiVersionsRequest to send at ``self.version``."""
        return message_class("ApiVersionsRequest")(
            client_software_name=self.software_name,  # type: ignore[call-arg]
            client_software_version=self.software_version,
        )

    def _decode(self, raw: bytes, version: int) -> Message:
        return decode_response(raw, API_VERSIONS_KEY, version, strict=True).body

    def feed(self, raw: bytes) -> None:
        """Take the raw reply frame (size prefix included) to the request sent at ``self.version``."""
        sent = self.version
        attempts = self.result.attempts
        body: Message | None = None
        decoded_as: int | None = None
        first_problem = ""
        try:
            body, decoded_as = self._decode(raw, sent), sent
        except KcodecError as e:
            first_problem = f"v{sent} layout: {e}"
        if sent != 0 and (body is None or int(body.error_code) == UNSUPPORTED_VERSION):  # type: ignore[attr-defined]
            # KIP-511: an UNSUPPORTED_VERSION reply is written in the v0 layout.
            try:
                body, decoded_as = self._decode(raw, 0), 0
            except KcodecError as e:
                if body is None:
                    reading = diagnose_api_versions_reply(raw, sent)
                    if reading is not None:
                        return self._feed_quirk(sent, reading)
                    detail = f"reply matches neither layout ({first_problem}; v0 layout: {e})"
                    attempts.append(Attempt(sent, "malformed", None, None, detail))
                    return self._retry(0, detail)
        if body is None:  # sent == 0 and v0 did not decode
            reading = diagnose_api_versions_reply(raw, sent)
            detail = first_problem if reading is None else f"{first_problem}; {reading.detail}"
            quirk = None if reading is None else reading.quirk
            attempts.append(Attempt(sent, "malformed", None, None, detail, quirk))
            return self._fail(f"ApiVersions v0 reply does not decode: {detail}")
        code = int(body.error_code)  # type: ignore[attr-defined]
        if code == 0:
            if decoded_as != sent:
                detail = f"reply to v{sent} is in the v0 layout without an error code"
                attempts.append(Attempt(sent, "malformed", code, decoded_as, detail))
                return self._retry(0, detail)
            attempts.append(Attempt(sent, "ok", code, decoded_as, f"{len(body.api_keys)} APIs"))  # type: ignore[attr-defined]
            self.result.version = sent
            self.result.response = body
            self.done = True
            return None
        if code == UNSUPPORTED_VERSION:
            nxt, why = self._lower(sent, _advertised_api_versions_max(body))
            attempts.append(Attempt(sent, "unsupported_version", code, decoded_as, why))
            if sent == 0:
                return self._fail("broker rejected ApiVersions v0 as unsupported")
            return self._retry(nxt, why)
        attempts.append(Attempt(sent, "error", code, decoded_as, f"error code {code}"))
        return self._fail(f"ApiVersions v{sent} failed with error code {code}")

    def _lower(self, sent: int, advertised: int | None) -> tuple[int, str]:
        """The version to retry at after ``sent`` was rejected, and why."""
        if advertised is None:
            nxt, why = 0, "broker advertised no ApiVersions range"
        elif advertised >= sent:
            nxt, why = sent - 1, f"broker advertised ApiVersions max v{advertised}, not below v{sent}"
        else:
            nxt, why = advertised, f"broker advertised ApiVersions max v{advertised}"
        return max(self._info.min_version, min(nxt, self._info.max_version)), why

    def _feed_quirk(self, sent: int, reading: QuirkReading) -> None:
        """A reply that is neither v``sent`` nor v0 but deviates in a known way (see :data:`QUIRKS`)."""
        nxt, why = self._lower(sent, reading.advertised_max)
        code = reading.error_code
        if code == UNSUPPORTED_VERSION:
            detail = f"{reading.detail}; {why}"
            self.result.attempts.append(
                Attempt(sent, "unsupported_version", code, reading.decoded_as, detail, reading.quirk)
            )
            return self._retry(nxt, why)
        if code == 0:  # not trusted: ask again at a lower version, where the broker may be correct
            if reading.decoded_as is not None and reading.decoded_as < sent:
                nxt = reading.decoded_as
            detail = f"{reading.detail}; not used: retrying at v{nxt}"
            self.result.attempts.append(
                Attempt(sent, "malformed", code, reading.decoded_as, detail, reading.quirk)
            )
            return self._retry(nxt, detail)
        detail = f"{reading.detail}; error code {code}"
        self.result.attempts.append(Attempt(sent, "error", code, reading.decoded_as, detail, reading.quirk))
        return self._fail(f"ApiVersions v{sent} failed with error code {code}")

    def feed_failure(self, outcome: str, detail: str) -> None:
        """Record a timeout (``"timeout"``) or broken connection (``"connection_error"``); ends it."""
        self.result.attempts.append(Attempt(self.version, outcome, None, None, detail))
        self._fail(f"ApiVersions v{self.version}: {detail}")

    def _retry(self, version: int, why: str) -> None:
        if version >= self.version:
            self._fail(f"no lower ApiVersions version to retry after v{self.version} ({why})")
            return
        self.version = version

    def _fail(self, reason: str) -> None:
        self.result.error = reason
        self.done = True


def _failure_outcome(e: ClientError) -> str:
    if isinstance(e, TimeoutError):
        return "timeout"
    return "protocol_error" if isinstance(e, ProtocolError) else "connection_error"


def handshake(conn: Connection, *, start_version: int | None = None) -> HandshakeResult:
    """Run the ApiVersions handshake over a blocking connection (opened if needed); never raises for
    broker misbehaviour: see ``result.ok`` / ``result.error`` / ``result.attempts``."""
    hs = ApiVersionsHandshake(start_version=start_version)
    while not hs.done:
        try:
            conn.connect()
            raw = conn.receive_raw(conn.send(hs.request(), hs.version))
        except ClientError as e:
            hs.feed_failure(_failure_outcome(e), str(e))
            break
        hs.feed(raw)
    return hs.result


async def async_handshake(conn: AsyncConnection, *, start_version: int | None = None) -> HandshakeResult:
    """:func:`handshake` over an :class:`~kcodec.net.client.AsyncConnection`."""
    hs = ApiVersionsHandshake(start_version=start_version)
    while not hs.done:
        try:
            await conn.connect()
            raw, _ = await conn.request_raw(hs.request(), hs.version)
        except ClientError as e:
            hs.feed_failure(_failure_outcome(e), str(e))
            break
        hs.feed(raw)
    return hs.result


# --- choosing versions ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ApiChoice:
    """The outcome for one API: the version to use, or why there is none."""

    api_key: int
    api_name: str
    broker: tuple[int, int] | None
    client: tuple[int, int] | None
    version: int | None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """Where a field exists (from the specs) and whether the negotiated version carries it."""

    message: str
    field: str
    api_key: int
    versions: tuple[int, ...]  # versions of the message that carry the field
    negotiated: int | None
    usable: tuple[int, ...]  # versions that carry the field and both sides support
    broker: tuple[int, int] | None = None  # the broker's range of the API
    client: tuple[int, int] | None = None  # the client's (kcodec's or the profile's) range of the API
    no_version_reason: str | None = None  # why no version is negotiated (ApiChoice.reason)

    @property
    def since(self) -> int | None:
        return self.versions[0] if self.versions else None

    @property
    def available(self) -> bool:
        return bool(self.usable)

    @property
    def reason(self) -> str:
        name = f"{self.message}.{self.field}"
        if self.available:
            return f"{name} is available at v{self.usable[0]}-v{self.usable[-1]}"
        if not self.versions:
            return f"{self.message} has no field {self.field!r} at any version kcodec knows"
        if self.negotiated is None:
            why = self.no_version_reason or "no version is shared with the broker"
            return f"{name} needs v{self.since}+; no version is negotiated: {why}"
        if self.negotiated < self.versions[0]:
            b, c = self.broker, self.client
            if b is not None and c is not None and c[1] < b[1]:
                return (
                    f"{name} needs v{self.since}+, but the client profile goes only up to v{c[1]} "
                    f"(the broker up to v{b[1]})"
                )
            return f"{name} needs v{self.since}+, but the broker supports only up to v{self.negotiated}"
        return (
            f"{name} exists only at v{self.versions[0]}-v{self.versions[-1]}, none of which both sides "
            f"support (up to v{self.negotiated})"
        )


def _message_api(message_name: str) -> tuple[ApiInfo, bool]:
    info = api(message_name)
    return info, message_name == info.response or message_name.endswith("Response")


def field_requirement(message_name: str, field_name: str) -> tuple[int, ...]:
    """Versions of ``message_name`` (request or response) that carry ``field_name`` (spec facts)."""
    info, response = _message_api(message_name)
    return tuple(info.versions_with_field(field_name, response=response))


def api_or_none(key: int) -> ApiInfo | None:
    """The API with that key, or None for a key kcodec does not know (a newer broker's)."""
    try:
        return api(key)
    except UnknownMessageError:
        return None


@dataclass(slots=True)
class Negotiation:
    """Chosen versions per API key (see :func:`negotiate`); ``proposals``: whether proposal versions
    (and the fields only they carry) count."""

    choices: dict[int, ApiChoice]
    proposals: bool = False

    def choice(self, name_or_key: str | int) -> ApiChoice:
        key = name_or_key if isinstance(name_or_key, int) else api(name_or_key).key
        found = self.choices.get(key)
        if found is None:
            raise NoCommonVersionError(f"API {name_or_key!r} is known to neither side")
        return found

    def version(self, name_or_key: str | int) -> int:
        """The version to use for an API; ``NoCommonVersionError`` (with the reason) if none."""
        c = self.choice(name_or_key)
        if c.version is None:
            raise NoCommonVersionError(f"{c.api_name}: {c.reason}")
        return c.version

    def check(self, message_name: str, field_name: str) -> FieldRequirement:
        """Whether ``field_name`` of ``message_name`` is available with this broker (never raises for
        an unavailable field)."""
        info, _ = _message_api(message_name)
        known = field_requirement(message_name, field_name)
        versions = tuple(v for v in known if self.proposals or not info.is_proposal(v))
        c = self.choices.get(info.key)
        negotiated = c.version if c is not None else None
        usable: tuple[int, ...] = ()
        if c is not None and c.version is not None and c.broker is not None and c.client is not None:
            lo = max(c.broker[0], c.client[0])
            usable = tuple(v for v in versions if lo <= v <= c.version)
        return FieldRequirement(
            message_name,
            field_name,
            info.key,
            versions,
            negotiated,
            usable,
            c.broker if c is not None else None,
            c.client if c is not None else None,
            c.reason if c is not None else "neither side offers this API",
        )

    def require(self, message_name: str, field_name: str) -> FieldRequirement:
        """Like :meth:`check` but raises ``FieldUnavailableError`` (with the reason) if unavailable."""
        req = self.check(message_name, field_name)
        if not req.available:
            raise FieldUnavailableError(req.reason)
        return req

    def fencing(self) -> dict[str, bool]:
        """Per KIP in :data:`FENCING_FIELDS`: whether all of its fields that exist are available."""
        out: dict[str, bool] = {}
        for kip, message, fname in FENCING_FIELDS:
            try:
                req = self.check(message, fname)
            except UnknownMessageError:
                continue
            if not req.versions:
                continue
            out[kip] = out.get(kip, True) and req.available
        return out

    def fencing_gaps(self) -> dict[str, list[str]]:
        """Per KIP that :meth:`fencing` reports unavailable: the reason of each field that is missing."""
        out: dict[str, list[str]] = {}
        for kip, message, fname in FENCING_FIELDS:
            try:
                req = self.check(message, fname)
            except UnknownMessageError:
                continue
            if req.versions and not req.available:
                out.setdefault(kip, []).append(req.reason)
        return out


def top_version(info: ApiInfo, proposals: bool) -> int:
    """kcodec's highest version of an API: proposal versions only when they are enabled."""
    return info.max_version if proposals else info.released_max_version


def client_ranges(profile: ClientProfile | None, proposals: bool = False) -> dict[int, tuple[int, int]]:
    """The client side's range per API key: kcodec's own, narrowed by ``profile`` (None: dropped)."""
    ranges = {a.key: (a.min_version, top_version(a, proposals)) for a in apis()}
    if profile is None:
        return ranges
    out: dict[int, tuple[int, int]] = {}
    for name_or_key, (lo, hi) in profile.items():
        info = api(name_or_key)
        klo, khi = ranges[info.key]
        if max(lo, klo) <= min(hi, khi):
            out[info.key] = (max(lo, klo), min(hi, khi))
        else:
            out[info.key] = (lo, hi)  # kept: reported as "no common version" against kcodec's codecs
    return out


def kcodec_profile(
    caps: Mapping[int, _Cap] | Mapping[str, _Cap] | Mapping[int | str, _Cap] | None = None,
    *,
    proposals: bool = False,
) -> dict[int, tuple[int, int]]:
    """A client profile for :func:`negotiate`: every API kcodec has codecs for at its full range, with
    ``caps`` (by API name or key) narrowing some: ``(min, max)`` is intersected with kcodec's range
    (an empty intersection is kept as given, so negotiation reports it), ``None`` drops the API.

    ``kcodec_profile({"Fetch": (0, 8), "OffsetForLeaderEpoch": None})`` models a client without
    KIP-320 fetch fencing. Proposal versions are part of the profile only with ``proposals=True``.
    """
    ranges: dict[int, tuple[int, int]] = {a.key: (a.min_version, top_version(a, proposals)) for a in apis()}
    for name_or_key, cap in (caps or {}).items():
        info = api(name_or_key)
        if cap is None:
            ranges.pop(info.key, None)
            continue
        lo, hi = cap
        klo, khi = info.min_version, top_version(info, proposals)
        ranges[info.key] = (max(lo, klo), min(hi, khi)) if max(lo, klo) <= min(hi, khi) else (lo, hi)
    return ranges


def negotiate(
    broker_ranges: Mapping[int, tuple[int, int]] | Message | HandshakeResult,
    client_profile: ClientProfile | None = None,
    *,
    proposals: bool = False,
) -> Negotiation:
    """Per API, the highest version both the broker and the client support, or the reason none exists.

    ``broker_ranges``: ``{api_key: (min, max)}``, an ApiVersionsResponse or a :class:`HandshakeResult`.
    ``client_profile``: the client's ranges by API name or key (default: every version kcodec has a
    codec for); restricting it models an older client. APIs only the broker offers appear with
    ``version=None``. Proposal versions (``ApiInfo.proposals``) are chosen only with ``proposals=True``
    and only when the broker advertises them: by default kcodec's side stops at the released maximum.
    """
    if isinstance(broker_ranges, HandshakeResult):
        broker = broker_ranges.broker_ranges
    elif isinstance(broker_ranges, Message):
        broker = ranges_from_response(broker_ranges)
    else:
        broker = dict(broker_ranges)
    client = client_ranges(client_profile, proposals)
    choices: dict[int, ApiChoice] = {}
    for key in sorted(set(broker) | set(client)):
        info = api_or_none(key)
        name = info.name if info is not None else f"Unknown({key})"
        b, c = broker.get(key), client.get(key)
        version: int | None = None
        reason: str | None = None
        if b is None:
            reason = "the broker does not offer this API"
        elif c is None:
            reason = "kcodec has no codec for this API" if info is None else "not in the client profile"
        elif b[0] > b[1]:
            reason = f"the broker advertises an empty range v{b[0]}-v{b[1]}"
        else:
            lo, hi = max(b[0], c[0]), min(b[1], c[1])
            if lo <= hi:
                version = hi
            elif b[1] < c[0]:
                reason = f"the broker tops out at v{b[1]}, the client starts at v{c[0]}"
            else:
                reason = f"the broker starts at v{b[0]}, the client tops out at v{c[1]}"
        choices[key] = ApiChoice(key, name, b, c, version, reason)
    return Negotiation(choices, proposals)


def key_fields(api_key: int, version: int) -> list[str]:
    """Leader-epoch (fencing) fields, and FetchRequest.LastFetchedEpoch, present at ``version`` in the
    API's request or response, as ``"FetchRequest.CurrentLeaderEpoch (v9+, KIP-320)"``."""
    info = api_or_none(api_key)
    if info is None or version not in info.sources:
        return []
    kips: dict[tuple[str, str], list[str]] = {}
    for k, m, f in FENCING_FIELDS:
        kips.setdefault((m, f), []).append(k)
    for (m, f), k in _OTHER_EPOCH_KIPS.items():
        kips.setdefault((m, f), []).append(k)
    out: list[str] = []
    for message in (info.request, info.response):
        names = _epoch_field_names(message)
        for fname in names:
            versions = field_requirement(message, fname)
            if version in versions:
                labels = "".join(f", {k}" for k in sorted(kips.get((message, fname), [])))
                out.append(f"{message}.{fname} (v{versions[0]}+{labels})")
    return out


def _epoch_field_names(message: str) -> list[str]:
    """Names of the message's ``*LeaderEpoch*`` fields and of those labelled in ``_OTHER_EPOCH_KIPS``."""
    mi = message_info(message)
    extra = {f for m, f in _OTHER_EPOCH_KIPS if m == message}
    seen: list[str] = []
    for struct_info in mi.structs.values():
        for fields in struct_info.by_set.values():
            for f in fields:
                if ("LeaderEpoch" in f.name or f.name in extra) and f.name not in seen:
                    seen.append(f.name)
    return seen
