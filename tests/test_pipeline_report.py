"""``kcodec report`` on a pipeline output, checked in a real browser: Debian's headless Chromium
(through chromedriver and selenium) loads the page from disk with the network unused; every plot
has drawn (its SVG has a visible box and marks; the screenshot has ink where each plot is) and the
page logged no error (a script error or a resource it failed to fetch would show there)."""

from __future__ import annotations

import io
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kcodec.cli import main

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]
ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
PLOTS = ("requests-per-second", "latency-over-time", "latency-by-api", "error-counts", "fencing-timeline")


@pytest.fixture(scope="module")
def report(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kcodec.pipeline import run_pipeline

    out = tmp_path_factory.mktemp("report-out")
    inputs = [str(ROOT / "tests" / "captures" / "rotated")]
    run_pipeline(inputs, str(out), progress=False)
    result = CliRunner().invoke(main, ["report", str(out)])
    assert result.exit_code == 0, result.output
    return out / "report.html"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs pip install -e '.[browser]'")
    if not (Path(CHROMIUM).exists() and Path(DRIVER).exists()):
        pytest.skip("needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1200,900",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_report_is_self_contained(report: Path) -> None:
    html = report.read_text()
    assert "<script" not in html
    assert not re.search(r"""(src|href)\s*=\s*["'](https?:)?//""", html), "nothing may be fetched"
    assert not re.search(r"@import|url\(\s*['\"]?https?:", html)
    for pid in PLOTS:
        assert f'id="{pid}"' in html
    assert "FENCED_LEADER_EPOCH" in html and "LEADER_EPOCH_CHANGE" in html


def test_report_draws_every_plot_in_chromium(report: Path, browser: Any, tmp_path: Path) -> None:
    from PIL import Image

    browser.get(report.as_uri())
    assert browser.title.startswith("kcodec report")
    boxes = browser.execute_script(
        """
        return Array.from(document.querySelectorAll('figure.plot')).map(f => {
            const svg = f.querySelector('svg');
            const r = svg.getBoundingClientRect();
            const marks = svg.querySelectorAll('path, use, rect, line, polyline');
            return {id: f.id, w: r.width, h: r.height, x: r.left + window.scrollX, y: r.top + window.scrollY,
                    marks: marks.length, bbox: svg.getBBox().width * svg.getBBox().height};
        });
        """
    )
    assert [b["id"] for b in boxes] == list(PLOTS)
    for b in boxes:
        assert b["w"] > 300 and b["h"] > 100 and b["bbox"] > 0, b
        assert b["marks"] > 20, b
    # one screenshot of the whole page: every plot's area holds drawn (non-white) pixels
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1200, int(height) + 200)
    png = browser.get_screenshot_as_png()
    (tmp_path / "report.png").write_bytes(png)
    image = Image.open(io.BytesIO(png)).convert("L")
    scale = image.width / browser.execute_script("return window.innerWidth")
    for b in boxes:
        crop = image.crop(
            (
                int(b["x"] * scale),
                int(b["y"] * scale),
                int((b["x"] + b["w"]) * scale),
                int((b["y"] + b["h"]) * scale),
            )
        )
        dark = sum(crop.histogram()[:200])
        assert dark > 0.005 * crop.width * crop.height, (b["id"], dark)
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []
