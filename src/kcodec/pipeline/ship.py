"""Shipping kcodec to a cluster's executors: a zip of the installed package, added to every
executor's Python path with ``SparkContext.addPyFile``.

PySpark puts only ``.zip``, ``.egg`` and ``.jar`` files on the executors' path (``--py-files`` of a
wheel is copied but never importable), so :func:`package_zip` writes the package's Python sources
(the generated codecs included) into a zip. Compiled modules cannot be imported from a zip: shipped
kcodec runs as the pure build does. kcodec's own dependencies (``pip install 'kcodec[spark]'``
lists them) must be installed on the nodes; or ship a packed virtual environment instead, with
``spark.archives`` (see the pipeline's documentation).
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

__all__ = ["package_zip", "ship_package"]

_SKIP_DIRS = frozenset({"__pycache__"})
_SUFFIXES = (".py", ".json", ".typed", ".j2", ".html", ".css", ".js")


def package_zip(target: Path) -> Path:
    """Write the installed ``kcodec`` package's sources and data into the zip ``target``."""
    import kcodec

    root = Path(next(iter(kcodec.__path__)))
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
            for name in sorted(names):
                if name.endswith(_SUFFIXES):
                    path = Path(folder) / name
                    zf.write(path, Path("kcodec") / path.relative_to(root))
    return target


def ship_package(spark: object) -> Path:
    """Zip the installed package and add it to ``spark``'s executors (a SparkSession). Returns the
    zip's path (a temporary file, removed when the process exits)."""
    folder = Path(tempfile.mkdtemp(prefix="kcodec-ship-"))
    target = package_zip(folder / "kcodec.zip")
    spark.sparkContext.addPyFile(str(target))  # type: ignore[attr-defined]
    import atexit
    import shutil

    atexit.register(shutil.rmtree, folder, True)
    return target
