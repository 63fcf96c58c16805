"""Apache Kafka's jars from Maven Central, with Maven, and the classpath that runs a broker from them.

:func:`fetch` resolves ``org.apache.kafka:kafka_2.13`` (the broker), ``kafka-tools`` (kafka-topics,
kafka-metadata-quorum and the rest) and a logging backend at one release into the local Maven
repository (``~/.m2``), and writes the resolved classpath to a file in the cache directory
(``$KCODEC_CACHE_DIR/apache-kafka/<version>.classpath``, by default under ``~/.cache/kcodec``). A second
call finds that file, checks that every jar it names is still there, and returns it without running
Maven. :func:`resolve_release` turns a release line ("4.4", "3.9") into the newest release of it that
Maven Central has (:data:`RELEASE_LINES` lists the candidates, newest first).

Missing Java or Maven, or Maven Central out of reach, raise :class:`KafkaUnavailable` whose message is
one line saying what is missing and how to provide it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

__all__ = [
    "NEWEST_3_9",
    "NEWEST_4X",
    "RELEASE_LINES",
    "KafkaUnavailable",
    "ReleaseNotFound",
    "cache_dir",
    "classpath_file",
    "fetch",
    "java_binary",
    "maven_binary",
    "missing_requirements",
    "resolve_release",
]

# Candidates per release line, newest first: the first one Maven Central has is used.
RELEASE_LINES: dict[str, tuple[str, ...]] = {"4.4": ("4.4.0",), "3.9": ("3.9.2", "3.9.1")}
NEWEST_4X = "4.4"
NEWEST_3_9 = "3.9"

DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath"
MAVEN_TIMEOUT_S = 1800.0  # a safety net for a first download on a slow link, not a pace


class KafkaUnavailable(RuntimeError):
    """Apache Kafka cannot be fetched or run here; the message (one line) says what is missing."""


class ReleaseNotFound(KafkaUnavailable):
    """Maven Central has no such release."""


def cache_dir() -> Path:
    base = os.environ.get("KCODEC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kcodec"
    )
    return Path(base) / "apache-kafka"


def classpath_file(version: str) -> Path:
    return cache_dir() / f"{version}.classpath"


def java_binary() -> str:
    """The ``java`` to run Kafka with: ``$JAVA_HOME/bin/java`` when JAVA_HOME is set, else the PATH's."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
        raise KafkaUnavailable(f"JAVA_HOME={home} has no bin/java: point JAVA_HOME at a JDK 17+ or unset it")
    found = shutil.which("java")
    if found is None:
        raise KafkaUnavailable(
            "java is not installed: install a JDK 17+ (e.g. apt-get install default-jdk-headless) "
            "or set JAVA_HOME"
        )
    return found


def maven_binary() -> str:
    found = shutil.which("mvn")
    if found is None:
        raise KafkaUnavailable(
            "Maven (mvn) is not installed: install it (e.g. apt-get install maven) to fetch Apache Kafka"
        )
    return found


def missing_requirements(need_maven: bool = True) -> str | None:
    """One line saying what is missing to run Apache Kafka (None when nothing is)."""
    try:
        java_binary()
        if need_maven:
            maven_binary()
    except KafkaUnavailable as e:
        return str(e)
    return None


def _pom(version: str) -> str:
    # 4.x logs through log4j 2 (its jars come with kafka-server); 3.9 through reload4j (log4j 1 API).
    if int(version.split(".")[0]) >= 4:
        backend = [("org.apache.logging.log4j", "log4j-slf4j-impl", "2.25.5")]
    else:
        backend = [("org.slf4j", "slf4j-reload4j", "1.7.36")]
    artifacts = [("org.apache.kafka", a, version) for a in ("kafka_2.13", "kafka-clients", "kafka-tools")]
    deps = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version></dependency>"
        for g, a, v in artifacts + backend
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n  <modelVersion>4.0.0</modelVersion>\n'
        f"  <groupId>kcodec.apache-kafka</groupId><artifactId>kafka-{version}</artifactId>"
        "<version>1</version>\n"
        f"  <dependencies>\n{deps}\n  </dependencies>\n</project>\n"
    )


def cached_classpath(version: str) -> Path | None:
    """The classpath file of ``version`` when it exists and every jar it names is still present."""
    path = classpath_file(version)
    try:
        entries = path.read_text().strip().split(os.pathsep)
    except OSError:
        return None
    if entries and all(e and os.path.isfile(e) for e in entries):
        return path
    return None


def _maven_failure(version: str, output: str) -> KafkaUnavailable:
    output = re.sub(r"\x1b\[[0-9;]*m", "", output)
    errors = [line.removeprefix("[ERROR]").strip() for line in output.splitlines() if "[ERROR]" in line]
    first = next((e for e in errors if e), output.strip().splitlines()[-1] if output.strip() else "")
    if re.search(r"Could not find artifact org\.apache\.kafka|was not found in https?://", output) and not (
        re.search(r"Unknown host|Connection refused|Network is unreachable|timed out", output)
    ):
        return ReleaseNotFound(f"Maven Central has no Apache Kafka {version}")
    if re.search(
        r"Could not transfer|Unknown host|Connection refused|Network is unreachable|timed out", output
    ):
        return KafkaUnavailable(
            "Maven could not download Apache Kafka from Maven Central (repo.maven.apache.org): check the "
            f"network, or a mirror/proxy in ~/.m2/settings.xml ({first[:200]})"
        )
    return KafkaUnavailable(f"Maven failed to resolve Apache Kafka {version}: {first[:300]}")


def fetch(version: str) -> Path:
    """The classpath file of Apache Kafka ``version`` (an exact release), fetching it with Maven if needed."""
    cached = cached_classpath(version)
    if cached is not None:
        return cached
    java_binary()
    mvn = maven_binary()
    work = cache_dir() / version
    work.mkdir(parents=True, exist_ok=True)
    (work / "pom.xml").write_text(_pom(version))
    out = work / "classpath.tmp"
    command = [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(work / "pom.xml"), DEPENDENCY_PLUGIN]
    command += [f"-Dmdep.outputFile={out}", "-Dmdep.pathSeparator=" + os.pathsep]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise KafkaUnavailable(
            f"Maven did not finish fetching Apache Kafka {version} within {MAVEN_TIMEOUT_S:g} s"
        ) from None
    if proc.returncode != 0 or not out.is_file():
        raise _maven_failure(version, proc.stdout + proc.stderr)
    out.replace(classpath_file(version))
    cached = cached_classpath(version)
    if cached is None:
        raise KafkaUnavailable(f"Maven's classpath for Apache Kafka {version} names jars that are missing")
    return cached


def resolve_release(line_or_version: str) -> str:
    """An exact release for a release line ("4.4", "3.9": the newest candidate Maven Central has; one
    already fetched is taken without asking Maven) or for an exact version (returned as is)."""
    candidates = RELEASE_LINES.get(line_or_version)
    if candidates is None:
        return line_or_version
    for version in candidates:
        if cached_classpath(version) is not None:
            return version
    for version in candidates:
        try:
            fetch(version)
        except ReleaseNotFound:
            continue
        return version
    raise KafkaUnavailable(f"Maven Central has none of Apache Kafka {', '.join(candidates)}")
