"""Shared fixtures. ``spark``: the test run's one local Spark session (2 cores, loopback only).

Tests that use it are marked ``xdist_group("spark")`` so that pytest-xdist (``--dist loadgroup`` in
tools/test.sh) runs them all in one worker: Spark starts once per test run, not once per worker.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark", reason="the pipeline tests need pip install -e '.[spark]'")
    from kcodec.pipeline.session import spark_session

    session = spark_session("local[2]", app_name="kcodec tests")
    session.conf.set("spark.sql.shuffle.partitions", "4")
    yield session
    session.stop()
