"""The report's plots draw what their tables hold (no Spark: the tables are built by hand)."""

from __future__ import annotations

import math

import pytest

from kcodec.report.plots import _by_api


def _timeline(width: float, start: float, counts: list[int]) -> list[dict[str, object]]:
    """Timeline rows as kcodec.pipeline.aggregates makes them: one per bucket with frames, its time
    ``floor(t / width) * width`` (partials.Partials), ``requests_per_second`` = requests / width."""
    rows = []
    for i, n in enumerate(counts):
        if n == 0:
            continue
        t = start + (i + 0.5) * width
        bucket = math.floor(t / width) * width
        rows.append(
            {
                "bucket": bucket,
                "bucket_seconds": width,
                "api_name": "Produce",
                "requests": n,
                "requests_per_second": n / width,
                "responses": n,
            }
        )
    return rows


@pytest.mark.parametrize("width", [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0])
def test_requests_per_second_totals_equal_the_timeline(width: float) -> None:
    """Every bucket of steady traffic is drawn with its value: the plot's requests (value x width,
    summed) equal the table's. Bucket times are floats; matching them as floats drew many buckets of
    widths 0.01-0.2 s as zero (a comb on steady traffic)."""
    counts = [7, 0, 3] + [5] * 113
    rows = _timeline(width, 1_700_000_000.123, counts)
    series = _by_api(rows, "requests_per_second", origin=0.0, zeros=True)
    xs, ys = series["Produce"]
    assert len(xs) == len(counts)
    assert round(sum(y * width for y in ys)) == sum(counts)
    assert [round(y * width) for y in ys] == counts
