"""The merged API registry: per API key, its messages, versions, owning spec sets and header versions."""

from __future__ import annotations

from dataclasses import dataclass

from kcodec.codegen.merge import MergedMessage
from kcodec.codegen.spec.errors import SpecError
from kcodec.codegen.spec.fields import to_snake

#: Kafka's exceptions to the header-version rules (ApiMessageType.requestHeaderVersion/responseHeaderVersion).
CONTROLLED_SHUTDOWN = 7
API_VERSIONS = 18


@dataclass(frozen=True, slots=True)
class ApiRow:
    key: int
    name: str
    request: MergedMessage
    response: MergedMessage
    aliases: tuple[str, ...] = ()  # older message names of a renamed API (e.g. ListClientMetricsResources)

    @property
    def versions(self) -> tuple[int, int]:
        return self.request.versions.lowest, self.request.versions.highest

    def owner(self, v: int) -> str:
        return self.request.owner(v).source

    def flexible(self, v: int) -> bool:
        return self.request.owner(v).is_flexible(v)

    def request_header(self, v: int) -> int:
        if self.key == CONTROLLED_SHUTDOWN and v == 0:
            return 0
        return 2 if self.flexible(v) else 1

    def response_header(self, v: int) -> int:
        if self.key == API_VERSIONS:
            return 0  # clients must parse it before they know the broker's versions
        return 1 if self.flexible(v) else 0

    def flexible_from(self) -> int | None:
        lo, hi = self.versions
        return next((v for v in range(lo, hi + 1) if self.flexible(v)), None)

    def deprecated(self) -> list[int]:
        lo, hi = self.versions
        return [v for v in range(lo, hi + 1) if v in self.request.owner(v).deprecated_versions]

    def unstable(self) -> list[int]:
        newest = self.request.newest
        return [newest.valid_versions.highest] if newest.latest_version_unstable else []

    def listeners(self) -> list[str]:
        return list(self.request.newest.listeners)


def api_rows(messages: list[MergedMessage], set_order: list[str]) -> list[ApiRow]:
    """One row per API key. When a newer set renamed an API (same key, new message names), the
    newest name wins and the older message names become aliases (their codecs stay available)."""
    rank = {name: i for i, name in enumerate(set_order)}

    def newest(cands: list[MergedMessage]) -> MergedMessage:
        return max(cands, key=lambda m: (rank.get(m.newest.source, -1), m.versions.highest))

    by_kind: dict[str, dict[int, list[MergedMessage]]] = {"request": {}, "response": {}}
    for m in messages:
        if m.kind in by_kind and m.api_key is not None:
            by_kind[m.kind].setdefault(m.api_key, []).append(m)
    rows = []
    for key in sorted(by_kind["request"]):
        reqs, resps = by_kind["request"][key], by_kind["response"].get(key, [])
        if not resps:
            raise ValueError(f"api key {key} has a request spec but no response spec")
        req, resp = newest(reqs), newest(resps)
        if req.versions != resp.versions:
            raise ValueError(f"{req.name} versions {req.versions} differ from {resp.name} {resp.versions}")
        aliases = tuple(sorted(m.name for m in reqs + resps if m not in (req, resp)))
        rows.append(ApiRow(key, req.name[: -len("Request")], req, resp, aliases))
    return rows


def proposal_sets(sets: list[dict[str, object]]) -> dict[str, str]:
    """Set name -> what it proposes (``"KIP-359"``) for the sets ``sets.json`` marks as proposals."""
    return {str(s["name"]): str(s["proposal"]) for s in sets if s.get("proposal")}


def check_proposals(messages: list[MergedMessage], proposals: dict[str, str]) -> None:
    """A proposal set may only add versions: none it defines may be defined by a released set too."""
    for m in messages:
        released = {v for s in m.specs if s.source not in proposals for v in s.valid_versions}
        for s in m.specs:
            clash = sorted(released & set(s.valid_versions)) if s.source in proposals else []
            if clash:
                raise SpecError(
                    f"{s.source}/{m.name}.json",
                    f"the proposal set redefines released versions {clash}; it may only add versions",
                )


def index_plan(
    messages: list[MergedMessage], sources: list[str], sets: list[dict[str, object]]
) -> dict[str, object]:
    """What the generated package's ``__init__`` (the index) holds: API rows, message table, spec sets."""
    rows = []
    proposals = proposal_sets(sets)
    check_proposals(messages, proposals)
    for row in api_rows(messages, [str(s["name"]) for s in sets]):
        lo, hi = row.versions
        vs = range(lo, hi + 1)
        rows.append({
            "key": row.key,
            "name": row.name,
            "request": row.request.name,
            "response": row.response.name,
            "lo": lo,
            "hi": hi,
            "owners": {v: row.owner(v) for v in vs},
            "flexible_from": row.flexible_from(),
            "request_headers": {v: row.request_header(v) for v in vs},
            "response_headers": {v: row.response_header(v) for v in vs},
            "deprecated": row.deprecated(),
            "unstable": row.unstable(),
            "listeners": row.listeners(),
            "aliases": list(row.aliases),
            "proposals": {v: proposals[row.owner(v)] for v in vs if row.owner(v) in proposals},
        })
    table = [
        {"name": m.name, "module": to_snake(m.name), "kind": m.kind, "api_key": m.api_key,
         "lo": m.versions.lowest, "hi": m.versions.highest}
        for m in messages
    ]
    return {"apis": rows, "messages": table, "sources": sources, "sets": sets}
