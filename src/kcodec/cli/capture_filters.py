"""Which events ``kcodec decode-capture`` shows: ``--api``, ``--client``/``--server``, ``--topic``,
``--group``, ``--errors-only``. Bad values are usage errors (``click.BadParameter``: one line, exit 2).

``--group`` keeps the frames about the groups named (``CapturedFrame.groups``: a request's groups,
and its response's). ``--topic`` keeps the frames that name the topics, and the frames of a group
whose subscriptions or assignments seen so far in the capture (:class:`GroupTopics`) name them."""

from __future__ import annotations

from _socket import AF_INET, AF_INET6, inet_ntop, inet_pton  # (socket's own: without socket.py's enums)
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import click

from kcodec.capture import CapturedFrame, CaptureEvent, CaptureIssue
from kcodec.capture.facts import Facts
from kcodec.protocol.errors import KcodecError
from kcodec.protocol.registry import api

__all__ = [
    "EventFilter",
    "GroupTopics",
    "frame_topics",
    "parse_addresses",
    "parse_apis",
    "parse_groups",
    "parse_topics",
]


def _names(value: str, option: str, what: str) -> list[str]:
    """The comma-separated names of one option value (blanks around them dropped); a value that
    names nothing (``""``, ``","``: an empty variable in a script, say) is a usage error, not a
    filter that keeps everything or nothing."""
    names = [item.strip() for item in value.split(",") if item.strip()]
    if not names:
        raise click.BadParameter(f"{value!r} names no {what}", param_hint=option)
    return names


def parse_topics(values: Iterable[str]) -> frozenset[str] | None:
    """``("orders,payments", "audit")`` -> topic names (a Kafka topic name has no comma); None if no
    value was given."""
    topics = {name for value in values for name in _names(value, "--topic", "topic")}
    return frozenset(topics) if topics else None


def parse_groups(values: Iterable[str]) -> frozenset[str] | None:
    """``("grp-a,grp-b",)`` -> group ids (blanks around them dropped); None if no value was given."""
    groups = {name for value in values for name in _names(value, "--group", "group")}
    return frozenset(groups) if groups else None


class GroupTopics(dict[str, set[str]]):
    """The topics each group's subscriptions and assignments named so far (``--topic``)."""

    def learn(self, pairs: Iterable[tuple[str, Iterable[str]]]) -> None:
        for group, topics in pairs:
            self.setdefault(group, set()).update(topics)


def frame_topics(frame: CapturedFrame, facts: Facts | None) -> set[str | None]:
    """The topics a frame names: in its body (its facts) and in its embedded protocol values."""
    names: set[str | None] = (
        set() if facts is None else {n for n, _ in facts.topics} | {p.topic for p in facts.partitions}
    )
    if frame.embedded:
        from kcodec.capture.groups import embedded_topics

        for _, topics in embedded_topics(frame.embedded):
            names.update(topics)
    return names


def parse_apis(values: Iterable[str]) -> frozenset[int] | None:
    """``("Fetch,Produce", "3")`` -> api keys; names are case-insensitive, "Request"/"Response" allowed."""
    keys: set[int] = set()
    for value in values:
        for item in _names(value, "--api", "API"):
            name: int | str = int(item) if item.lstrip("-").isdigit() else item
            if isinstance(name, str):
                for suffix in ("Request", "Response"):
                    if name.lower().endswith(suffix.lower()) and len(name) > len(suffix):
                        name = name[: -len(suffix)]
                name = next((a.name for a in _all_apis() if a.name.lower() == name.lower()), name)
            try:
                keys.add(api(name).key)
            except KcodecError:
                import difflib  # (only for this message)

                close = difflib.get_close_matches(item, [a.name for a in _all_apis()], n=3, cutoff=0.6)
                hint = f"; did you mean {', '.join(close)}?" if close else " (see `kcodec apis`)"
                raise click.BadParameter(f"no Kafka API named {item!r}{hint}", param_hint="--api") from None
    return frozenset(keys) if keys else None


def _all_apis() -> list:  # type: ignore[type-arg]
    from kcodec.protocol.registry import apis

    return apis()


@dataclass(frozen=True, slots=True)
class Address:
    host: str | None
    port: int | None

    def matches(self, endpoint: str | None) -> bool:
        if endpoint is None:
            return False
        host, _, port = endpoint.rpartition(":")
        host = host.strip("[]")
        return (self.host is None or self.host == host) and (self.port is None or str(self.port) == port)


def _address_text(host: str) -> str | None:
    """An IP address as a capture's endpoints write it (None if ``host`` is not one): the same
    text for every way of writing one address (``0:0::1`` and ``::1``)."""
    for family in (AF_INET, AF_INET6):
        try:
            return inet_ntop(family, inet_pton(family, host))
        except (OSError, ValueError):
            continue
    return None


def parse_addresses(values: Iterable[str], option: str) -> tuple[Address, ...]:
    """``HOST``, ``HOST:PORT``, ``:PORT``, ``[V6]:PORT`` or ``V6``; HOST is an IP address, as a
    capture names its endpoints (a name would match nothing, so it is a usage error)."""
    out: list[Address] = []
    for value in values:
        text = value.strip()
        host: str | None
        port: int | None = None
        if text.startswith("["):
            host, _, rest = text[1:].partition("]")
            port_text = rest[1:] if rest.startswith(":") else ""
        elif text.count(":") == 1:
            host, _, port_text = text.partition(":")
        else:
            host, port_text = text, ""
        if port_text:
            if not port_text.isdigit() or not 0 < int(port_text) < 65536:
                raise click.BadParameter(f"{value!r}: the port must be 1-65535", param_hint=option)
            port = int(port_text)
        if not host and port is None:
            raise click.BadParameter(f"{value!r}: expected HOST, HOST:PORT or :PORT", param_hint=option)
        if host:
            address = _address_text(host)
            if address is None:
                raise click.BadParameter(
                    f"{host!r} is not an IP address (a capture names its endpoints by "
                    "address, e.g. 10.0.0.5:9092, [fd00::5]:9092 or :9092)",
                    param_hint=option,
                )
            host = address
        out.append(Address(host or None, port))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class EventFilter:
    apis: frozenset[int] | None = None
    clients: tuple[Address, ...] = ()
    servers: tuple[Address, ...] = ()
    topics: frozenset[str] | None = None
    errors_only: bool = False
    groups: frozenset[str] | None = None

    @property
    def needs_facts(self) -> bool:
        return self.topics is not None or self.errors_only

    @property
    def keeps_all(self) -> bool:
        """No filter is set: every event is kept."""
        return (
            self.apis is None
            and not self.clients
            and not self.servers
            and self.topics is None
            and not self.errors_only
            and self.groups is None
        )

    def connection_ok(self, client: str | None, server: str | None) -> bool:
        if self.clients and not any(a.matches(client) for a in self.clients):
            return False
        return not self.servers or any(a.matches(server) for a in self.servers)

    def keep(
        self, event: CaptureEvent, facts: Facts | None, group_topics: Mapping[str, set[str]] | None = None
    ) -> bool:
        if isinstance(event, CaptureIssue):
            if event.connection is None:
                return True  # a problem with the file itself
            return (
                self.connection_ok(event.client, event.server)
                and self.apis is None
                and self.topics is None
                and self.groups is None
            )
        return self.keep_frame(event, facts, group_topics=group_topics)

    def keep_frame(
        self,
        frame: CapturedFrame,
        facts: Facts | None,
        *,
        topics: bool = True,
        group_topics: Mapping[str, set[str]] | None = None,
    ) -> bool:
        """Whether the frame is shown; ``topics=False``: leaving ``--topic`` aside (for a worker of a
        parallel decode, which cannot know the names of topics named by id elsewhere, nor what other
        connections tell of a group). ``group_topics``: what the capture so far tells of each group's
        topics (:class:`GroupTopics`)."""
        if self.apis is not None and frame.api_key not in self.apis:
            return False
        if not self.connection_ok(frame.client, frame.server):
            return False
        if self.groups is not None and not self.groups.intersection(frame.groups):
            return False
        if (
            self.topics is not None
            and topics
            and not frame_topics(frame, facts) & self.topics
            and not self.group_named(frame.groups, group_topics)
        ):
            return False
        if self.errors_only:
            return frame.error is not None or bool(facts is not None and facts.error_codes)
        return True

    def group_named(self, groups: Iterable[str], group_topics: Mapping[str, set[str]] | None) -> bool:
        """Whether what is known of one of ``groups`` names a ``--topic`` topic."""
        if not group_topics or self.topics is None:
            return False
        return any(not self.topics.isdisjoint(group_topics.get(g, ())) for g in groups)
