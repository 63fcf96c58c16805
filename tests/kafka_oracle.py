"""Kafka's own message classes as a live oracle: a driver for ``tests/oracle/KafkaOracle.java``.

For one Apache Kafka release this module resolves ``kafka-clients`` and ``jackson-databind`` with Maven
(into ``~/.m2``; the classpath is cached in ``~/.cache/kcodec/oracle/<release>/``), compiles
``KafkaOracle.java`` with ``javac`` once per source version (the classes are cached under the hash of
the source, so an edit recompiles), and runs it as one long-lived JVM that answers JSON lines:
``Oracle.encode`` / ``Oracle.decode`` send a whole batch in one line and read one line back.

Plain helper module (tests are not a package): ``import kafka_oracle``.  Missing Java, javac or Maven,
or a release Maven cannot resolve, raise ``OracleUnavailable`` with one line saying what is missing;
the tests turn it into a skip on a user's machine and a failure in CI (``CI`` set).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kcodec.protocol.schema import FieldInfo, MessageInfo, in_range

SOURCE = Path(__file__).resolve().parent / "oracle" / "KafkaOracle.java"
MAIN_CLASS = "KafkaOracle"

# jackson-databind is not a dependency of kafka-clients (Kafka declares it compile-only), but the
# generated *JsonConverter classes need it: the version each release's broker ships with.
JACKSON = {"3.9": "2.16.2", "4.4": "2.21.7"}

# One JVM answers every request of a test run; this is only a safety net against a hung process.
ANSWER_TIMEOUT_S = 600.0
MAVEN_TIMEOUT_S = 900.0
JAVA_OPTIONS = ("-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss4m")
MAX_BATCH_CHARS = 4_000_000  # Jackson's default limit for one string is 20M characters


class OracleUnavailable(RuntimeError):
    """The oracle cannot run here (no Java/javac/Maven, or Maven cannot resolve the release)."""


class OracleError(RuntimeError):
    """The oracle process failed (died, hung or answered something unreadable)."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kcodec" / "oracle"


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise OracleUnavailable(f"the Kafka oracle needs {tool} (Java 17+ JDK and Maven) on PATH")
    return path


def _pom(release: str) -> str:
    jackson = JACKSON[".".join(release.split(".")[:2])]
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kcodec.test</groupId>
  <artifactId>kafka-oracle-{release}</artifactId>
  <version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-clients</artifactId>
      <version>{release}</version></dependency>
    <dependency><groupId>com.fasterxml.jackson.core</groupId><artifactId>jackson-databind</artifactId>
      <version>{jackson}</version></dependency>
  </dependencies>
</project>
"""


def classpath(release: str) -> list[str]:
    """The runtime classpath of ``kafka-clients`` ``release`` plus jackson-databind (Maven, cached)."""
    folder = cache_root() / release
    cp_file = folder / "classpath.txt"
    if cp_file.exists():
        jars = cp_file.read_text().strip().split(os.pathsep)
        if jars and all(Path(j).exists() for j in jars):
            return jars
    mvn = _need("mvn")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pom.xml").write_text(_pom(release))
    tmp = folder / f"classpath.{os.getpid()}.txt"
    cmd = [mvn, "-q", "-B", "-f", str(folder / "pom.xml"), "dependency:build-classpath",
           "-Dmdep.includeScope=runtime", f"-Dmdep.outputFile={tmp}"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise OracleUnavailable(f"Maven did not resolve kafka-clients {release} in time") from exc
    if done.returncode != 0 or not tmp.exists():
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        raise OracleUnavailable(f"Maven cannot resolve org.apache.kafka:kafka-clients:{release}: {tail}")
    os.replace(tmp, cp_file)
    return cp_file.read_text().strip().split(os.pathsep)


def compiled(release: str, jars: Sequence[str]) -> Path:
    """The folder holding ``KafkaOracle.class`` compiled against ``jars`` (cached by source hash)."""
    source = SOURCE.read_bytes()
    key = hashlib.sha256(source).hexdigest()[:16]
    target = cache_root() / release / f"classes-{key}"
    if (target / f"{MAIN_CLASS}.class").exists():
        return target
    javac = _need("javac")
    target.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix="classes-", dir=target.parent))
    done = subprocess.run(
        [javac, "-nowarn", "-encoding", "UTF-8", "-cp", os.pathsep.join(jars), "-d", str(build), str(SOURCE)],
        capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S, check=False,
    )
    if done.returncode != 0:
        shutil.rmtree(build, ignore_errors=True)
        raise OracleError(f"javac failed on {SOURCE.name} for Kafka {release}:\n{done.stderr[-4000:]}")
    try:
        os.replace(build, target)
    except OSError:  # another process compiled the same source first
        shutil.rmtree(build, ignore_errors=True)
    return target


def resolve_release(candidates: Sequence[str]) -> tuple[str, list[str]]:
    """The first release of ``candidates`` Maven resolves, with its classpath."""
    failures: list[str] = []
    for release in candidates:
        try:
            return release, classpath(release)
        except OracleUnavailable as exc:
            failures.append(str(exc))
            if "on PATH" in str(exc):
                raise
    raise OracleUnavailable("; ".join(failures))


@dataclass(frozen=True)
class KafkaClass:
    name: str  # the generated class, e.g. FetchRequestData or ConsumerProtocolAssignment
    lowest: int
    highest: int


class Oracle:
    """One running KafkaOracle JVM for one Kafka release. Stop it with ``stop()``."""

    def __init__(self, release: str, jars: Sequence[str]) -> None:
        java = _need("java")
        classes = compiled(release, jars)
        self.release = release
        self._log_path = cache_root() / release / f"oracle.{os.getpid()}.log"
        self._log: IO[bytes] = self._log_path.open("wb")
        cp = os.pathsep.join([str(classes), *jars])
        self._proc = subprocess.Popen(
            [java, *JAVA_OPTIONS, "-cp", cp, MAIN_CLASS],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            text=True, encoding="utf-8", bufsize=1 << 20,
        )
        self.pid = self._proc.pid
        info = self._call({"op": "info"})
        self.kafka_version: str = info["kafka"]
        self.classes: dict[str, KafkaClass] = {
            name: KafkaClass(name, lo, hi) for name, (lo, hi) in info["classes"].items()
        }
        self.unstable: dict[str, frozenset[int]] = {
            name: frozenset(versions) for name, versions in info["unstable"].items()
        }

    def kafka_class(self, message_name: str) -> KafkaClass | None:
        """Kafka's class for a kcodec message name: ``<Name>Data`` (requests, responses, headers) or
        ``<Name>`` (the ``data`` specs), or None when the release has no such message."""
        return self.classes.get(message_name + "Data") or self.classes.get(message_name)

    def _call(self, request: dict[str, Any]) -> Any:
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        watchdog = threading.Timer(ANSWER_TIMEOUT_S, proc.kill)
        watchdog.start()
        try:
            proc.stdin.write(json.dumps(request, ensure_ascii=False) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        except (BrokenPipeError, OSError) as exc:
            raise OracleError(f"Kafka oracle {self.release} died: {self._log_tail()}") from exc
        finally:
            watchdog.cancel()
        if not line:
            raise OracleError(f"Kafka oracle {self.release} died or hung: {self._log_tail()}")
        answer = json.loads(line)
        if "error" in answer:
            raise OracleError(f"Kafka oracle {self.release}: {answer['error']}")
        return answer

    def batch(self, items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Answers to ``items`` (encode/decode requests), in order; a failed item is ``{"error": ...}``."""
        results: list[dict[str, Any]] = []
        chunk: list[dict[str, Any]] = []
        size = 0
        for item in items:
            text_size = len(json.dumps(item, ensure_ascii=False))
            if chunk and size + text_size > MAX_BATCH_CHARS:
                results.extend(self._call({"op": "batch", "items": chunk})["results"])
                chunk, size = [], 0
            chunk.append(item)
            size += text_size
        if chunk:
            results.extend(self._call({"op": "batch", "items": chunk})["results"])
        return results

    def _log_tail(self) -> str:
        self._log.flush()
        text = self._log_path.read_text(errors="replace").strip().splitlines()
        return " | ".join(text[-5:]) or "(no output)"

    def stop(self) -> None:
        """Close the JVM's input (it exits), or kill it by pid after a grace period."""
        proc = self._proc
        if proc.poll() is None:
            try:
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait(timeout=20)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()
        self._log.close()
        self._log_path.unlink(missing_ok=True)


def start(candidates: Sequence[str]) -> Oracle:
    """Resolve the first available release of ``candidates`` and start its oracle."""
    _need("java")
    _need("javac")
    release, jars = resolve_release(candidates)
    return Oracle(release, jars)


# --- the release's field names ------------------------------------------------------------------------


class Redefined(ValueError):
    """The release defines the version differently on the wire from the spec set kcodec uses for it."""


def release_json(info: MessageInfo, version: int, release_set: str | None, value: dict[str, Any]) -> Any:
    """kcodec's JSON ``value`` of ``version`` with the field names ``release_set`` gives them.

    kcodec takes each version from the newest spec set that defines it; an older release may name a
    field differently at the same version (Kafka 4.0 renamed TxnOffsetCommitRequest's GenerationId to
    GenerationIdOrMemberEpoch, same type and place), and its JsonConverter uses its own names. The
    fields are paired in wire order (tagged ones by tag); ``Redefined`` if they differ on the wire.
    ``release_set`` None (kcodec has no spec set of that release) or the owner itself: ``value``.
    """
    owner = info.owners[version]
    if release_set is None or owner == release_set or release_set not in info.flexible:
        return value
    if info.is_flexible(version) != in_range(info.flexible[release_set], version):
        raise Redefined(f"{info.name} v{version}: flexible in one spec set only")
    _check_wire(info, (owner, info.name), (release_set, info.name), version)
    return _renamed(info, (owner, info.name), (release_set, info.name), version, value)


def _check_wire(info: MessageInfo, ours: tuple[str, str], theirs: tuple[str, str], version: int) -> None:
    """``Redefined`` unless every struct of the two definitions has the same fields on the wire."""
    (our_set, our_struct), (their_set, their_struct) = ours, theirs
    our_fields = _fields(info, our_set, our_struct, version)
    pairs = _paired(our_fields, _fields(info, their_set, their_struct, version), version, their_struct)
    for f in our_fields:
        struct, other = f.struct_name, pairs[f.json_name].struct_name
        if struct is not None and other is not None:
            _check_wire(info, (our_set, struct), (their_set, other), version)


def _fields(info: MessageInfo, spec_set: str, struct: str, version: int) -> list[FieldInfo]:
    found = info.structs.get(struct)
    fields = found.by_set.get(spec_set, ()) if found is not None else ()
    return [f for f in fields if f.present(version)]


def _paired(ours: list[FieldInfo], theirs: list[FieldInfo], version: int, where: str) -> dict[str, FieldInfo]:
    """Our JSON name -> the release's field, for fields equal on the wire."""
    def untagged(fields: list[FieldInfo]) -> list[FieldInfo]:
        return [f for f in fields if not f.is_tagged(version)]

    def tagged(fields: list[FieldInfo]) -> dict[int | None, FieldInfo]:
        return {f.tag: f for f in fields if f.is_tagged(version)}

    a, b = untagged(ours), untagged(theirs)
    ta, tb = tagged(ours), tagged(theirs)
    if len(a) != len(b) or ta.keys() != tb.keys():
        raise Redefined(f"{where}: different fields at v{version}")
    pairs = list(zip(a, b, strict=True)) + [(ta[t], tb[t]) for t in ta]
    for x, y in pairs:
        same_shape = x.is_array == y.is_array and (x.struct_name is None) == (y.struct_name is None)
        same_type = x.struct_name is not None or x.element_type == y.element_type
        if not (same_shape and same_type and x.is_nullable(version) == y.is_nullable(version)):
            raise Redefined(f"{where}.{x.name}: {x.type} vs {y.type} at v{version}")
    return {x.json_name: y for x, y in pairs}


def _renamed(
    info: MessageInfo, ours: tuple[str, str], theirs: tuple[str, str], version: int, value: Any
) -> Any:
    """``value`` (a struct's JSON object, or a list of them, or None) with the release's names."""
    if value is None:
        return None
    if isinstance(value, list):
        return [_renamed(info, ours, theirs, version, item) for item in value]
    (our_set, our_struct), (their_set, their_struct) = ours, theirs
    our_fields = _fields(info, our_set, our_struct, version)
    pairs = _paired(our_fields, _fields(info, their_set, their_struct, version), version, their_struct)
    ours_by_name = {f.json_name: f for f in our_fields}
    out: dict[str, Any] = {}
    for key, item in value.items():
        theirs_field = pairs[key]
        struct = ours_by_name[key].struct_name
        if struct is not None and theirs_field.struct_name is not None:
            item = _renamed(info, (our_set, struct), (their_set, theirs_field.struct_name), version, item)
        out[theirs_field.json_name] = item
    return out
