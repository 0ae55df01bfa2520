"""The HTML report as a whole report: every section of the text report, the ``--measure`` chart,
and counts named for what they count. Checked on the parsed DOM (stdlib ``HTMLParser``) and,
where a headless Chromium is installed, on the page a browser renders."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

pytest.importorskip("torch")

from regcomp_lint.trace.graph_output import render_html  # noqa: E402
from regcomp_lint.trace.measure import MeasureOptions, Row, summarize  # noqa: E402
from regcomp_lint.trace.report import to_json, to_text  # noqa: E402
from tests.trace.conftest import traced  # noqa: E402


class Dom(HTMLParser):
    """Text per section (``h2`` id), the svg bars, and every element's attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: dict[str, str] = {}
        self.current = "top"
        self.bars: list[dict] = []
        self.tags: list[tuple[str, dict]] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag == "h2":
            self.current = attributes.get("id") or f"h2-{len(self.sections)}"
        if tag == "rect" and "bar" in (attributes.get("class") or ""):
            self.bars.append(attributes)
        self._in_script = tag in ("script", "style")

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._in_script = False

    def handle_data(self, data):
        if not self._in_script:
            self.sections[self.current] = self.sections.get(self.current, "") + data


def measured() -> dict:
    rows = [
        Row("eager", True, cold_start_s=0.5, steady_median_ms=90.0, steady_min_ms=80.0, steady_max_ms=99.0),
        Row("full", True, cold_start_s=40.0, steady_median_ms=50.0, steady_min_ms=45.0, steady_max_ms=60.0),
        Row("regions", True, cold_start_s=20.0, steady_median_ms=52.0, steady_min_ms=49.0, steady_max_ms=55.0),
        Row("nested", False, "Unsupported: Failed to trace builtin operator"),
    ]
    for r in rows:
        r.peak_memory_bytes, r.graphs, r.graph_breaks, r.recompiles = 300 << 20, 1, 0, 0
    return summarize(rows, "cpu", MeasureOptions(), total_s=100.0, children_s=95.0)


def page_of(name: str) -> tuple[str, dict, str]:
    analysis = traced(name)
    data = to_json(analysis)
    data["plan"] = analysis.recommendation.plan(analysis.model_name).to_dict()
    data["measure"] = measured()
    return render_html(analysis.regions.graph, report=data), data, to_text(analysis)


def test_every_text_section_is_on_the_page(in_repo):
    page, data, text = page_of("planted_breaks")
    dom = Dom()
    dom.feed(page)
    assert {"breaks", "recompiles", "recommendation", "plan", "measured"} <= set(dom.sections)
    breaks = dom.sections["breaks"]
    for b in data["graph_breaks"]:
        assert f"{b['file']}:{b['line']}" in breaks and b["gb_id"] in breaks and b["code"] in breaks
        assert b["source"] and b["source"] in breaks  # the code excerpt
        assert "hint: " + b["hints"][0] in breaks
    recommendation = dom.sections["recommendation"]
    assert data["recommendation"]["how_to_apply"][0] in recommendation  # the plugin line
    for reason in data["recommendation"]["why"]:
        assert reason in recommendation
    assert '"strategy": "regional"' in dom.sections["plan"]
    assert "Recompiles" in text and str(len(data["recompiles"])) in dom.sections["recompiles"]


def test_break_counts_name_sites_and_occurrences_and_agree_with_the_text(in_repo):
    page, data, text = page_of("planted_breaks")
    sites = len(data["graph_breaks"])
    occurrences = sum(len(b["regions"]) for b in data["graph_breaks"])
    assert f"{sites} graph-break sites" in text
    dom = Dom()
    dom.feed(page)
    header = " ".join(dom.sections["top"].split())
    assert f"{sites} graph-break sites ({occurrences} occurrences in module instances)" in header
    assert f"Graph breaks: {sites} sites" in dom.sections["breaks"]


def test_the_legend_uses_no_sample_numbers(in_repo):
    page, _, _ = page_of("planted_breaks")
    legend = page.split("<h2>Legend</h2>", 1)[1].split("</div>", 1)[0]
    assert not re.search(r">\s*×?\d", legend), legend


def test_the_measure_chart_has_a_bar_per_strategy_that_ran(in_repo):
    page, data, _ = page_of("gpt2")
    dom = Dom()
    dom.feed(page)
    ran = [r["strategy"] for r in data["measure"]["strategies"] if r["ok"]]
    assert sorted(b["data-strategy"] for b in dom.bars if b["data-metric"] == "cold_start_s") == sorted(ran)
    widths = {b["data-strategy"]: float(b["width"]) for b in dom.bars if b["data-metric"] == "cold_start_s"}
    assert widths["full"] > widths["regions"] > widths["eager"]  # bars scale with the figures
    assert "Unsupported: Failed to trace builtin operator" in dom.sections["measured"]  # the failed row
    assert "winner for --optimize balanced" in dom.sections["measured"]
    assert "http://" not in page and "src=" not in page  # self-contained


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(_chromium() is None, reason="no headless Chromium here (apt-get install chromium)")
def test_a_headless_browser_renders_every_section(tmp_path, in_repo):
    """The DOM Chromium builds (scripts run) has each section, the chart and the break sites."""
    page, data, _ = page_of("planted_breaks")
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    result = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    dom = Dom()
    dom.feed(result.stdout)
    assert {"breaks", "recompiles", "recommendation", "plan", "measured"} <= set(dom.sections)
    assert len([b for b in dom.bars if b["data-metric"] == "steady_median_ms"]) == 3
    assert data["graph_breaks"][0]["file"] in dom.sections["breaks"]
    shot = tmp_path / "report.png"
    subprocess.run(
        [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--screenshot={shot}",
            "--window-size=1200,2400",
            path.as_uri(),
        ],
        capture_output=True,
        timeout=120,
    )
    assert shot.exists() and shot.stat().st_size > 10_000
