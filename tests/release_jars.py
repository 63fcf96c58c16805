"""Apache Kafka's kafka-clients jars for tests (``tools/kafka_jars.py``): from ~/.m2, fetched with Maven.

Without Maven or a network to Maven Central a test needing a jar is skipped with one line saying what
is missing, on a user's machine; in CI (``CI=true``) it fails instead.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

import kafka_jars  # noqa: E402

__all__ = ["kafka_jars", "release_jar", "tool"]


def tool(name: str) -> ModuleType:
    """A module of ``tools/`` by name (``"release_specs"``, ``"import_release_versions"``, ...)."""
    return importlib.import_module(name)


def release_jar(version: str) -> kafka_jars.SpecJar:
    """The specs of ``org.apache.kafka:kafka-clients:<version>`` (skip, or fail in CI, if unobtainable)."""
    coords = kafka_jars.clients(version)
    try:
        return kafka_jars.read_jar(kafka_jars.fetch(coords), coords)
    except kafka_jars.JarError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI needs the Kafka jars: {exc}")
        pytest.skip(str(exc))
