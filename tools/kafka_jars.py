"""Apache Kafka's JSON message specs as its released ``kafka-clients`` jars carry them.

Every ``kafka-clients`` jar holds the specs its classes were generated from as resources
(``common/message/*.json``) and names its release in ``kafka/kafka-version.properties``. This module
finds such a jar in the local Maven repository (``~/.m2/repository``, or ``$KCODEC_M2_REPO``), fetches
it with Maven when it is missing, and reads the specs out of it with :mod:`zipfile`; nothing is
unpacked to disk.

A jar source is written ``maven:GROUP:ARTIFACT:VERSION`` (e.g.
``maven:org.apache.kafka:kafka-clients:4.4.0``) or as the path of a ``.jar`` file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

SPEC_PREFIX = "common/message/"
VERSION_RESOURCE = "kafka/kafka-version.properties"
MAVEN_PREFIX = "maven:"
CLIENTS = "org.apache.kafka:kafka-clients"

#: the last patch release of every Kafka minor release whose kafka-clients jar carries the specs the
#: project compares with (3.9 is the last 3.x minor; 4.0 removed the versions KIP-896 retired)
LAST_PATCH_RELEASES: tuple[str, ...] = ("3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0")


class JarError(ValueError):
    """A jar source cannot be found, fetched or read."""


@dataclass(frozen=True, slots=True)
class Coordinates:
    """Maven coordinates ``group:artifact:version``."""

    group: str
    artifact: str
    version: str

    @staticmethod
    def parse(text: str) -> Coordinates:
        parts = text.removeprefix(MAVEN_PREFIX).split(":")
        if len(parts) != 3 or not all(parts):
            raise JarError(f"Maven coordinates must be GROUP:ARTIFACT:VERSION, got {text!r}")
        return Coordinates(*parts)

    def __str__(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    def local_path(self, repository: Path) -> Path:
        return repository.joinpath(*self.group.split("."), self.artifact, self.version,
                                   f"{self.artifact}-{self.version}.jar")


def clients(version: str) -> Coordinates:
    """The coordinates of ``org.apache.kafka:kafka-clients`` at ``version``."""
    return Coordinates.parse(f"{CLIENTS}:{version}")


def maven_repository() -> Path:
    """The local Maven repository (``$KCODEC_M2_REPO`` or ``~/.m2/repository``)."""
    env = os.environ.get("KCODEC_M2_REPO")
    return Path(env) if env else Path.home() / ".m2" / "repository"


def is_jar_source(text: str) -> bool:
    """Whether a ``--set`` source names a jar (``maven:...`` or a ``*.jar`` path), not a folder."""
    return text.startswith(MAVEN_PREFIX) or text.endswith(".jar")


def fetch(coords: Coordinates, repository: Path | None = None, *, download: bool = True) -> Path:
    """The local path of ``coords``' jar, fetched with ``mvn dependency:get`` if it is missing.

    Raises:
        JarError: the jar is missing and cannot be fetched (no Maven, no network, no such release),
            with a line saying how to provide it.
    """
    repo = repository if repository is not None else maven_repository()
    path = coords.local_path(repo)
    if path.is_file():
        return path
    how = f"fetch it with: mvn dependency:get -Dartifact={coords} -Dtransitive=false"
    mvn = shutil.which("mvn")
    if not download or mvn is None:
        missing = "" if download else " (download disabled)"
        raise JarError(f"{coords} is not in {repo}{missing}; {how}" + ("" if mvn else " (needs Maven)"))
    cmd = [mvn, "-q", "-B", "dependency:get", f"-Dartifact={coords}", "-Dtransitive=false",
           f"-Dmaven.repo.local={repo}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0 or not path.is_file():
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        raise JarError(f"cannot fetch {coords} with Maven: {' | '.join(tail) or 'no output'}; {how}")
    return path


@dataclass(frozen=True, slots=True)
class SpecJar:
    """The specs of one jar: file name -> bytes, plus what identifies the jar."""

    path: Path
    coordinates: Coordinates | None
    sha256: str
    kafka_version: str | None
    commit: str | None
    specs: dict[str, bytes]


def _properties(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
    return {k.strip(): v.strip() for k, v in pairs}


def read_jar(path: Path, coordinates: Coordinates | None = None) -> SpecJar:
    """Read every ``common/message/*.json`` resource of a jar (top level of that folder only).

    Raises:
        JarError: the file is not a readable jar or holds no message specs.
    """
    try:
        data = path.read_bytes()
        with zipfile.ZipFile(path) as jar:
            names = sorted(
                n for n in jar.namelist()
                if n.startswith(SPEC_PREFIX) and n.endswith(".json") and "/" not in n[len(SPEC_PREFIX):]
            )
            specs = {n[len(SPEC_PREFIX):]: jar.read(n) for n in names}
            props = (
                _properties(jar.read(VERSION_RESOURCE).decode("utf-8", "replace"))
                if VERSION_RESOURCE in jar.namelist() else {}
            )
    except (OSError, zipfile.BadZipFile) as exc:
        raise JarError(f"{path}: cannot read the jar: {exc}") from None
    if not specs:
        raise JarError(f"{path}: no {SPEC_PREFIX}*.json resources in the jar")
    return SpecJar(
        path=path, coordinates=coordinates, sha256=hashlib.sha256(data).hexdigest(),
        kafka_version=props.get("version"), commit=props.get("commitId"), specs=specs,
    )


def open_source(text: str, root: Path, *, download: bool = True) -> SpecJar:
    """Read the jar a source names: ``maven:G:A:V`` (fetched if missing) or a jar path (against ``root``)."""
    if text.startswith(MAVEN_PREFIX):
        coords = Coordinates.parse(text)
        return read_jar(fetch(coords, download=download), coords)
    path = Path(text)
    return read_jar(path if path.is_absolute() else root / path)
