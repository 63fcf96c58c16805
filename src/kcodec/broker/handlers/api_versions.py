"""ApiVersions (KIP-35, KIP-511): the versions this mock cluster serves."""

from __future__ import annotations

import re
from typing import Any

from kcodec.broker.handlers.common import RequestContext, cls
from kcodec.protocol.error_codes import ErrorCode

#: KIP-511: ClientSoftwareName and ClientSoftwareVersion must match this (else INVALID_REQUEST).
SOFTWARE_TEXT = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
API_VERSIONS_KEY = 18


def api_versions_body(ranges: dict[int, tuple[int, int]], error: ErrorCode = ErrorCode.NONE) -> Any:
    resp = cls("ApiVersionsResponse")
    keys = [
        resp.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in sorted(ranges.items())
    ]
    return resp(error_code=error, api_keys=keys)


async def handle_api_versions(ctx: RequestContext, req: Any, ranges: dict[int, tuple[int, int]]) -> Any:
    if ctx.version >= 3 and not (
        SOFTWARE_TEXT.fullmatch(req.client_software_name or "")
        and SOFTWARE_TEXT.fullmatch(req.client_software_version or "")
    ):
        return api_versions_body(ranges, ErrorCode.INVALID_REQUEST)
    return api_versions_body(ranges)


def unsupported_api_versions_reply(ranges: dict[int, tuple[int, int]]) -> Any:
    """KIP-511: a request above our ApiVersions maximum is answered in v0 with UNSUPPORTED_VERSION and
    only ApiVersions' own range, so the client can retry at a version we know."""
    return api_versions_body({API_VERSIONS_KEY: ranges[API_VERSIONS_KEY]}, ErrorCode.UNSUPPORTED_VERSION)
