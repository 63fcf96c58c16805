"""Commands that refuse what cannot work, in one line, before doing anything: ``kcodec generate`` into
a folder whose name cannot be imported (the package is named after it), ``kcodec proxy`` forwarding to
its own listener (every connection would come back to it, up to its connection limit)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KCODEC = [sys.executable, "-m", "kcodec.cli"]


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KCODEC, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.mark.parametrize(
    ("name", "suggested"), [("my-codecs", "my_codecs"), ("1codecs", "_1codecs"), ("class", "_class"),
                            ("codecs.v2", "codecs_v2")],
)
def test_generate_refuses_a_package_name_that_cannot_be_imported(
    name: str, suggested: str, tmp_path: Path
) -> None:
    done = _run("generate", "--specs", str(ROOT / "schemas"), "--out", str(tmp_path / "out" / name))
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert f"generate: Invalid value for '--out': {name!r} cannot be imported" in line
    assert f"(such as {suggested!r})" in line
    assert not (tmp_path / "out").exists()  # refused before anything was written


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return int(s.getsockname()[1])


@pytest.mark.parametrize("upstream_host", ["127.0.0.1", "localhost", "0.0.0.0"])
def test_proxy_refuses_to_forward_to_itself(upstream_host: str) -> None:
    port = _free_port()
    done = _run("proxy", "--listen", f"127.0.0.1:{port}", "--upstream", f"{upstream_host}:{port}")
    assert done.returncode == 1 and done.stdout == "", done.stdout
    (line,) = done.stderr.splitlines()
    assert line == (
        f"kcodec proxy: the upstream broker {upstream_host}:{port} is this proxy's own listener "
        f"127.0.0.1:{port}: it would forward every connection to itself"
    )


def test_proxy_library_refuses_it_and_frees_the_port() -> None:
    import asyncio

    from kcodec.proxy import Proxy, ProxyConfig
    from kcodec.proxy.errors import ProxySetupError

    port = _free_port()

    async def start() -> None:
        await Proxy(ProxyConfig(("127.0.0.1", port), ("127.0.0.1", port))).start()

    with pytest.raises(ProxySetupError, match="would forward every connection to itself"):
        asyncio.run(start())
    with socket.create_server(("127.0.0.1", port)):  # the listener it opened was closed again
        pass
