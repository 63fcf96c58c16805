"""The version report of ``kcodec versions``: a broker's (or a captured) ApiVersions answer against
kcodec's ranges, the version negotiated per API and why, the key fields each version carries, the
leader-epoch fencing it allows, and a release fingerprint. JSON-ready, plus a plain-text rendering.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from kcodec.net.client import ConnectionSettings
from kcodec.net.negotiation import (
    API_VERSIONS_KEY,
    UNSUPPORTED_VERSION,
    Attempt,
    ClientProfile,
    HandshakeResult,
    api_or_none,
    client_ranges,
    handshake,
    key_fields,
    negotiate,
    top_version,
)
from kcodec.protocol.error_codes import error_name
from kcodec.protocol.errors import KcodecError
from kcodec.protocol.frames import decode_response
from kcodec.protocol.quirks import diagnose_api_versions_reply
from kcodec.protocol.registry import api, apis

__all__ = ["captured_handshake", "render_versions_report", "versions_report"]



def captured_handshake(data: bytes) -> HandshakeResult:
    """Read a captured ApiVersionsResponse (a frame, size prefix included, or without the prefix)
    at each version kcodec knows, newest first; the first strict decode without an error wins."""
    frame = bytes(data)
    if len(frame) < 4 or struct.unpack_from(">i", frame)[0] != len(frame) - 4:
        frame = struct.pack(">i", len(frame)) + frame
    info = api(API_VERSIONS_KEY)
    result = HandshakeResult()
    for v in reversed(info.versions):
        try:
            body = decode_response(frame, API_VERSIONS_KEY, v, strict=True).body
        except KcodecError as e:
            result.attempts.append(Attempt(v, "malformed", None, None, f"captured reply as v{v}: {e}"))
            continue
        code = int(body.error_code)  # type: ignore[attr-defined]
        if code != 0:
            outcome = "unsupported_version" if code == UNSUPPORTED_VERSION else "error"
            result.attempts.append(Attempt(v, outcome, code, v, f"captured reply as v{v}"))
            continue
        result.attempts.append(Attempt(v, "ok", 0, v, f"captured reply as v{v}"))
        result.version, result.response = v, body
        return result
    result.error = "the captured bytes are no ApiVersionsResponse kcodec can read without an error code"
    reading = diagnose_api_versions_reply(frame, None)
    if reading is not None:
        result.error += f"; {reading.detail}"
    return result


def _profile_differences(profile: ClientProfile | None, proposals: bool = False) -> dict[str, Any] | None:
    """How a client profile differs from kcodec's own ranges: ``{api_name: [min, max] | None}``."""
    if profile is None:
        return None
    client = client_ranges(profile, proposals)
    out: dict[str, Any] = {}
    for a in apis():
        got = client.get(a.key)
        if got != (a.min_version, top_version(a, proposals)):
            out[a.name] = None if got is None else list(got)
    return out


def versions_report(
    target: str | tuple[str, int] | bytes | bytearray | memoryview,
    *,
    timeout: float = 5.0,
    client_profile: ClientProfile | None = None,
    settings: ConnectionSettings | None = None,
    proposals: bool = False,
) -> dict[str, Any]:
    """The version report of one broker (``"host:port"`` or ``(host, port)``: runs the handshake) or of
    captured ApiVersionsResponse bytes. JSON-serialisable::

        {"source": ..., "apis": [{"api_key", "api_name", "broker_min", "broker_max", "kcodec_min",
          "kcodec_max", "negotiated", "reason", "key_fields": [...]}, ...],
         "fencing": {"KIP-320": bool, ...}, "fencing_gaps": {"KIP-320": [reason, ...], ...},
         "fingerprint": {...}, "handshake": {"attempts": [...], ...},
         "client_profile": None | {api_name: [min, max] | None}}

    ``negotiated`` is None when there is no common version (``reason`` says why). Only APIs the broker
    advertises are listed. ``kcodec_min``/``kcodec_max`` are the client side's range: kcodec's codecs,
    or ``client_profile`` (see :func:`kcodec_profile`) when given, whose differences from kcodec's
    ranges are listed under ``client_profile``. Never raises for an unreachable or misbehaving broker:
    see ``handshake``. ``settings`` (TLS, SASL, its own timeout) say how to connect; without them,
    a plaintext connection with ``timeout``.
    """
    from kcodec.net.fingerprint import fingerprint

    if isinstance(target, bytes | bytearray | memoryview):
        result = captured_handshake(bytes(target))
        source = f"captured ApiVersionsResponse ({len(target)} bytes)"
    else:
        from kcodec.net.client import parse_host_port

        host, port = parse_host_port(target) if isinstance(target, str) else target
        source = f"{host}:{port}"
        conn = (settings or ConnectionSettings(timeout=timeout)).connection(host, port)
        try:
            result = handshake(conn)
        finally:
            conn.close()
    broker = result.broker_ranges
    nego = negotiate(broker, client_profile, proposals=proposals)
    rows: list[dict[str, Any]] = []
    for key in sorted(broker):
        c = nego.choices[key]
        rows.append({
            "api_key": key,
            "api_name": c.api_name,
            "broker_min": broker[key][0],
            "broker_max": broker[key][1],
            "kcodec_min": c.client[0] if c.client is not None else None,
            "kcodec_max": c.client[1] if c.client is not None else None,
            "negotiated": c.version,
            "reason": _with_gap(key, broker[key], c.reason),
            "key_fields": key_fields(key, c.version) if c.version is not None else [],
            "proposal": _proposal_of(key, c.version),
        })
    return {
        "source": source,
        "apis": rows,
        "fencing": nego.fencing() if result.ok else {},
        "fencing_gaps": nego.fencing_gaps() if result.ok else {},
        "fingerprint": fingerprint(broker),
        "handshake": result.to_dict(),
        "client_profile": _profile_differences(client_profile, proposals),
        "proposals": proposals,
    }


def _with_gap(api_key: int, broker: tuple[int, int], reason: str | None) -> str | None:
    """``reason``, plus the broker's versions kcodec has no spec for (see ``kcodec.protocol.coverage``)."""
    from kcodec.protocol.coverage import version_gaps

    gap = version_gaps().get(api_key)
    if reason is None or gap is None:
        return reason
    lacking = [v for v in gap.missing if broker[0] <= v <= broker[1]]
    if not lacking:
        return reason
    shown = ", ".join(f"v{v}" for v in lacking)
    return f"{reason} (kcodec has no spec for {shown}: see kcodec apis)"


def _proposal_of(api_key: int, version: int | None) -> str | None:
    """What a negotiated version proposes (``"KIP-359"``) when it is a proposal version, else None."""
    info = api_or_none(api_key)
    return None if info is None or version is None else info.proposals.get(version)


def render_versions_report(report: Mapping[str, Any]) -> str:
    """A plain-text rendering of :func:`versions_report`'s result."""
    lines = [f"ApiVersions of {report['source']}"]
    hs = report["handshake"]
    for a in hs["attempts"]:
        code = ""
        if a["error_code"] is not None:
            code = f" error_code={a['error_code']} ({error_name(a['error_code'])})"
        layout = "" if a["decoded_as"] is None else f" read as v{a['decoded_as']}"
        quirk = "" if a.get("quirk") is None else f" [{a['quirk']}]"
        line = f"  handshake: sent v{a['version']}: {a['outcome']}{code}{layout}{quirk} {a['detail']}"
        lines.append(line.rstrip())
    if not hs["ok"]:
        lines.append(f"  handshake failed: {hs['error']}")
        return "\n".join(lines) + "\n"
    lines.append(f"  handshake succeeded at ApiVersions v{hs['version']}")
    caps = report.get("client_profile")
    if caps:
        shown = ", ".join(f"{k} {'-' if v is None else f'{v[0]}-{v[1]}'}" for k, v in caps.items())
        lines.append(f"  client profile (the 'kcodec' column) differs from kcodec's codecs: {shown}")
    lines.append("")
    header = f"{'key':>4}  {'api':<32} {'broker':>9} {'kcodec':>9} {'use':>4}  key fields / reason"
    lines.append(header)
    lines.append("-" * len(header))
    for r in report["apis"]:
        broker = f"{r['broker_min']}-{r['broker_max']}"
        kc = "-" if r["kcodec_min"] is None else f"{r['kcodec_min']}-{r['kcodec_max']}"
        use = "-" if r["negotiated"] is None else str(r["negotiated"])
        extra = r["reason"] or ", ".join(r["key_fields"])
        if r.get("proposal"):
            extra = f"{r['proposal']} proposal version; {extra}"
        lines.append(f"{r['api_key']:>4}  {r['api_name']:<32} {broker:>9} {kc:>9} {use:>4}  {extra}".rstrip())
    lines.append("")
    if report["fencing"]:
        kips = report["fencing"].items()
        lines.append("fencing: " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in kips))
        for kip, reasons in report.get("fencing_gaps", {}).items():
            lines.extend(f"  {kip} no: {reason}" for reason in reasons)
    lines.append("fingerprint: " + report["fingerprint"]["verdict"])
    return "\n".join(lines) + "\n"
