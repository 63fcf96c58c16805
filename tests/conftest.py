"""Test-run settings and fixtures shared by every test module.

Hypothesis: locally every run draws new examples (and remembers failures in .hypothesis/); CI
(`HYPOTHESIS_PROFILE=ci`, set by .ci/run) draws the same examples every run, so a red CI run is
reproducible and never an accident of the draw, and it has no deadlines on a loaded 2-core machine.

``spark``: the test run's one local Spark session (2 cores, loopback only). Tests that use it are
marked ``xdist_group("spark")`` so that pytest-xdist (``--dist loadgroup`` in tools/test.sh) runs
them all in one worker: Spark starts once per test run, not once per worker.

Apache Kafka (``apache_kafka``, ``apache_kafka_release``, ``apache_kafka_cluster``...): the fixtures of
tests/apache_kafka.py, registered here as a plugin (its docstring lists them).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings

pytest_plugins = ["apache_kafka"]

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark", reason="the pipeline tests need pip install -e '.[spark]'")
    from kcodec.pipeline.session import spark_session

    session = spark_session("local[2]", app_name="kcodec tests")
    session.conf.set("spark.sql.shuffle.partitions", "4")
    yield session
    session.stop()
