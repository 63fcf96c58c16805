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

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
# explore's parent is hypothesis's own default profile, not the one in force: where hypothesis detects a CI
# environment (CI=true) that is its built-in "ci" profile, which keeps no database
settings.register_profile("explore", parent=settings.get_profile("default"), deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark", reason="the pipeline tests need pip install -e '.[spark]'")
    from kcodec.pipeline.session import spark_session

    session = spark_session("local[2]", app_name="kcodec tests")
    session.conf.set("spark.sql.shuffle.partitions", "4")
    yield session
    session.stop()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--dist loadgroup`` with pytest 9.2: pytest-xdist (3.8) marks a grouped test by appending
    ``@group`` to its node id through the legacy ``_nodeid`` attribute, which pytest 9.2's structured
    node ids no longer read, so groups are silently ignored (pytest-dev/pytest-xdist#1386). Runs after
    xdist's hook, in its workers, and sets the suffix where it did not take."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        names = sorted(
            {
                str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                for m in item.iter_markers("xdist_group")
            }
        )
        node_id = getattr(item, "_id", None)
        parse = getattr(type(node_id), "parse", None)
        if not names or parse is None or item.nodeid.endswith("@" + "_".join(names)):
            continue
        item._id = parse(f"{item.nodeid}@{'_'.join(names)}")
