"""Test-run settings and fixtures shared by every test module.

Hypothesis: every run draws the same examples (``derandomize``) and remembers nothing between runs
(no example database), so the suite gives the same verdict twice in a row in any checkout: a red run
is reproducible and never an accident of the draw, and no example found once turns every later run
red. No deadlines: a loaded 2-core machine is slow. That is the ``ci`` profile, the default.
``HYPOTHESIS_PROFILE=explore`` draws new examples every run and keeps failing ones in .hypothesis/
for replay (for hunting bugs; an example it finds belongs in the test as an ``@example``).

``spark``: the test run's one local Spark session (2 cores, loopback only). Tests that use it are
marked ``xdist_group("spark")`` so that pytest-xdist (``--dist loadgroup`` in tools/test.sh) runs
them all in one worker: Spark starts once per test run, not once per worker.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark", reason="the pipeline tests need pip install -e '.[spark]'")
    from kcodec.pipeline.session import spark_session

    session = spark_session("local[2]", app_name="kcodec tests")
    session.conf.set("spark.sql.shuffle.partitions", "4")
    yield session
    session.stop()
