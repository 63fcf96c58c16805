"""The merged API registry: ``kcodec.api("Fetch")`` / ``kcodec.api(1)`` and ``kcodec.apis()``."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from kcodec.protocol.errors import UnknownMessageError, UnsupportedVersionError


@dataclass(frozen=True, slots=True)
class ApiInfo:
    """One API: its key, messages, versions, where each version's spec came from, header versions."""

    key: int
    name: str
    request: str  # request message name, e.g. FetchRequest
    response: str
    min_version: int
    max_version: int
    sources: dict[int, str]  # version -> spec set that defines it (newest wins)
    flexible_from: int | None
    request_headers: dict[int, int]
    response_headers: dict[int, int]
    deprecated_versions: tuple[int, ...]
    unstable_versions: tuple[int, ...]
    listeners: tuple[str, ...]
    aliases: tuple[str, ...] = ()  # message names this API had before a rename
    # versions that come from a proposal spec set (not an Apache Kafka spec) -> what they propose,
    # e.g. {14: "KIP-359"} for Produce; negotiation never picks them unless told to
    proposals: dict[int, str] = field(default_factory=dict)

    @property
    def versions(self) -> range:
        return range(self.min_version, self.max_version + 1)

    @property
    def proposal_versions(self) -> tuple[int, ...]:
        return tuple(sorted(self.proposals))

    def is_proposal(self, version: int) -> bool:
        """True if ``version`` is defined only by a proposal spec set (e.g. kcodec's KIP-359 Produce v14)."""
        return version in self.proposals

    @property
    def released_max_version(self) -> int:
        """The highest version an Apache Kafka spec defines (``max_version`` without proposal versions)."""
        return max((v for v in self.versions if v not in self.proposals), default=self.min_version)

    def source(self, version: int) -> str:
        self._check(version)
        return self.sources[version]

    def is_flexible(self, version: int) -> bool:
        self._check(version)
        return self.flexible_from is not None and version >= self.flexible_from

    def request_header_version(self, version: int) -> int:
        self._check(version)
        return self.request_headers[version]

    def response_header_version(self, version: int) -> int:
        self._check(version)
        return self.response_headers[version]

    def is_deprecated(self, version: int) -> bool:
        return version in self.deprecated_versions

    def versions_with_field(self, field: str, *, response: bool = False) -> list[int]:
        """Versions whose request (or response) carries ``field``.

        ``field`` is a spec name or attribute, optionally a dotted path through structs:
        ``"CurrentLeaderEpoch"``, ``"Topics.Partitions.CurrentLeaderEpoch"`` or ``"current_leader_epoch"``.
        A bare name matches at any depth.
        """
        from kcodec.protocol.codec import message_info

        info = message_info(self.response if response else self.request)
        return [v for v in self.versions if field_at(info, info.name, field.split("."), v, anywhere=True)]

    def _check(self, version: int) -> None:
        if version not in self.sources:
            raise UnsupportedVersionError(
                f"{self.name} has no version {version} (kcodec knows {self.min_version}-{self.max_version})"
            )


def field_at(info: Any, struct: str, parts: list[str], version: int, *, anywhere: bool) -> bool:
    """True if the field path ``parts`` exists in ``struct`` at ``version``."""
    head, rest = parts[0], parts[1:]
    for f in info.fields_at(struct, version):
        child = f.struct_name
        if head in (f.name, f.attr, f.json_name):
            if not rest:
                return True
            if child is not None and field_at(info, child, rest, version, anywhere=False):
                return True
        if anywhere and child is not None and field_at(info, child, parts, version, anywhere=True):
            return True
    return False


@cache
def _table() -> tuple[dict[int, ApiInfo], dict[str, ApiInfo]]:
    from kcodec._generated import APIS

    by_key: dict[int, ApiInfo] = {}
    by_name: dict[str, ApiInfo] = {}
    for row in APIS:
        info = ApiInfo(
            key=row["key"], name=row["name"], request=row["request"], response=row["response"],
            min_version=row["versions"][0], max_version=row["versions"][1], sources=row["owners"],
            flexible_from=row["flexible_from"], request_headers=row["request_headers"],
            response_headers=row["response_headers"], deprecated_versions=tuple(row["deprecated"]),
            unstable_versions=tuple(row["unstable"]), listeners=tuple(row["listeners"]),
            aliases=tuple(row["aliases"]), proposals=dict(row.get("proposals", {})),
        )
        by_key[info.key] = info
        for alias in (info.name, info.request, info.response, info.name.lower(), *info.aliases):
            by_name[alias] = info
            if alias.endswith("Request"):
                by_name[alias[: -len("Request")]] = info
    return by_key, by_name


def api(name_or_key: str | int) -> ApiInfo:
    """Look an API up by key (``1``), name (``"Fetch"``) or message name (``"FetchRequest"``)."""
    by_key, by_name = _table()
    if isinstance(name_or_key, int) and not isinstance(name_or_key, bool):
        found = by_key.get(name_or_key)
    else:
        key = str(name_or_key)
        found = by_name.get(key) or by_name.get(key.lower())
    if found is None:
        raise UnknownMessageError(f"no API {name_or_key!r}")
    return found


def apis() -> list[ApiInfo]:
    """Every API kcodec knows, by key."""
    return [v for _, v in sorted(_table()[0].items())]
