"""Opening an input file from a Spark executor, by the path Spark listed it under.

Local paths (``/x``, ``file:/x``, ``file:///x``) are opened directly; every other scheme (``hdfs://``,
``s3://``, ``gs://``, ``abfs://``, ...) through ``pyarrow.fs`` (HDFS through libhdfs and the Hadoop
classpath, S3/GCS with the credentials the environment provides). The file is read as a stream with
seeks, never whole: a task reading a byte range of a multi-GB file holds one block at a time.
"""

from __future__ import annotations

from typing import IO, Any
from urllib.parse import unquote, urlparse

__all__ = ["local_path", "open_input"]


def local_path(path: str) -> str | None:
    """The local file system path of ``path``, or None if it names another file system."""
    parsed = urlparse(path)
    if parsed.scheme == "":
        return path
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return unquote(parsed.path)
    return None


def open_input(path: str) -> IO[bytes]:
    """A binary, seekable file object for ``path`` (raises OSError if it cannot be opened)."""
    local = local_path(path)
    if local is not None:
        return open(local, "rb")
    try:
        from pyarrow import fs
    except ImportError as e:  # pragma: no cover - pyarrow comes with kcodec[spark]
        raise OSError(f"cannot open {path}: pyarrow is needed for non-local paths ({e})") from None
    try:
        filesystem, inner = fs.FileSystem.from_uri(path)
        handle: Any = filesystem.open_input_file(inner)
    except Exception as e:  # pyarrow raises its own error types (ArrowInvalid, ArrowIOError, ...)
        raise OSError(f"cannot open {path}: {e}") from None
    return handle  # type: ignore[no-any-return]
