"""The fingerprint names each Apache Kafka release from what Kafka's own classes say its broker advertises.

``tests/java/BrokerApiVersions.java`` asks a release's ``kafka-clients`` jar
(``ApiVersionsResponse.filterApis`` for the broker listener, unstable versions hidden, client telemetry
off) which API versions its brokers advertise by default; the fingerprint must name that release and no
other. Needs Java (``javac``) and the jars (Maven): skipped with the reason on a machine without them,
failed in CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from release_jars import release_jar

from kcodec.net.fingerprint import fingerprint, known_releases

SOURCE = Path(__file__).resolve().parent / "java" / "BrokerApiVersions.java"
RELEASES = ("3.9.0", "3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0")


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI needs {tool} (a JDK)")
        pytest.skip(f"{tool} not found: install a JDK (17+) to run the Kafka class checks")
    return path


@pytest.fixture(scope="module")
def classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("broker-api-versions")
    jar = release_jar("4.4.0").path
    cmd = [_need("javac"), "-J-Xmx256m", "-cp", str(jar), "-d", str(out), str(SOURCE)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    return out


def advertised(classes: Path, release: str) -> dict[int, tuple[int, int]]:
    jar = release_jar(release).path
    cmd = [_need("java"), "-Xmx128m", "-cp", f"{classes}{os.pathsep}{jar}", "BrokerApiVersions"]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300)
    rows = [line.split() for line in done.stdout.splitlines() if line.strip()]
    return {int(k): (int(lo), int(hi)) for k, lo, hi in rows}


@pytest.mark.parametrize("release", RELEASES)
def test_each_release_is_named_from_kafkas_own_api_versions(classes: Path, release: str) -> None:
    ranges = advertised(classes, release)
    assert len(ranges) > 55
    named = release if release in known_releases() else "3.9.0"  # 3.9.2 advertises what 3.9.0 does
    assert fingerprint(ranges)["consistent"] == [named], fingerprint(ranges)["verdict"]
    if release >= "4":
        assert ranges[0][0] == 0  # Produce: advertised from v0 though 4.0 removed v0-2 (KIP-896)
