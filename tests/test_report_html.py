"""Experiment reports: self-contained HTML (base64 figures, Plotly charts with plotly.js inline, no
external resources) and Markdown, rebuilt from stored tables; driven in headless Chromium when it is
installed (Debian package ``chromium``; CI installs it, elsewhere the browser tests are skipped):
no console errors, the decision summary above the fold, every chart drawn, a hover shows a value,
and the page works with the network switched off."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from twin.experiment.compare import run_compare
from twin.experiment.runner import run_experiment
from twin.experiment.sweep import run_sensitivity, run_sweep
from twin.experiment import summary
from twin.report.html import build_report
from twin.scenario import load_scenario


def _scenario(tmp: Path, name: str, crews: int) -> Path:
    doc = {
        "name": name, "seed": 4, "horizon_days": 30,
        "cluster": {"racks": 1, "nodes_per_rack": 4, "node": {"gpus": 8, "parts": {
            "gpu": {"failure": {"mtbf_h": 150}, "repair": {"time": {"dist": "exponential", "mean_h": 15}}},
            "psu": {"count": 2, "required": 1, "effect": "redundant", "failure": {"mtbf_h": 400}},
        }}},
        "maintenance": {"crews": {"technicians": {"count": crews}}},
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def experiments(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("report")
    a = _scenario(tmp, "one_crew", 1)
    b = _scenario(tmp, "three_crews", 3)
    root = tmp / "results"
    quiet = {"progress": False, "echo": lambda s: None}
    mc = run_experiment(load_scenario(a), 8, folder=root / "mc", progress=False).folder
    summary.write(mc)  # the command line writes it (twin montecarlo); run_experiment does not
    cmp_ = run_compare([str(a), str(b)], [], 8, results_root=root, **quiet).folder
    sw = run_sweep(str(a), [], ["maintenance.crews.technicians.count=1,2,3"], 4, results_root=root, **quiet).folder
    se = run_sensitivity(str(a), [], ["maintenance.crews.technicians.count=1,2"], 2.0, 4, results_root=root,
                         **quiet).folder
    return {"montecarlo": mc, "compare": cmp_, "sweep": sw, "sensitivity": se}


def _self_contained(text: str) -> None:
    """Nothing is fetched: no script, image, style or frame with a source outside the file (plotly.js
    is inline: its own text names web addresses, which the browser test checks are never requested)."""
    assert not re.search(r"""<(script|img|link|iframe)\b[^>]*\b(src|href)\s*=\s*["'](?!data:)""", text, re.I), \
        "external resource referenced"
    assert text.count("plotly.js v") <= 1, "plotly.js is included once per page"


@pytest.mark.parametrize("kind,figures", [
    ("montecarlo", {"dist_node_availability.png", "failure_pareto.png"}),
    ("compare", {"forest_availability.png", "dist_node_availability.png"}),
    ("sweep", {"sweep_node_availability.png"}),
    ("sensitivity", {"tornado_node_availability.png"}),
])
def test_report_is_self_contained_with_markdown_twin(experiments: dict[str, Path], kind: str,
                                                    figures: set[str]) -> None:
    html_path, md_path, warnings = build_report(experiments[kind])
    assert warnings == []
    text = html_path.read_text()
    _self_contained(text)
    n_img = len(re.findall(r'<img [^>]*src="data:image/png;base64,[A-Za-z0-9+/=]{200,}"', text))
    n_chart = text.count('<div class="chart"')
    assert n_img + n_chart >= len(figures)
    assert text.index('id="decision-summary"') < text.index("<h2>", text.index('id="decision-summary"') + 30)
    made = {p.name for p in (experiments[kind] / "figures").glob("*.png")}
    assert figures <= made
    md = md_path.read_text()
    for f in figures:
        assert f"(figures/{f})" in md
    assert "95 % CI" in md


def test_montecarlo_report_content(experiments: dict[str, Path]) -> None:
    _, md_path, _ = build_report(experiments["montecarlo"])
    md = md_path.read_text()
    ld = load_scenario(experiments["montecarlo"].parent.parent / "one_crew.yaml")
    assert ld.hash in md and "node availability" in md and "p50 95 % CI" in md
    assert md.index("## Decision summary") < md.index("## Scenario")


def test_report_warns_when_twin_versions_are_mixed(experiments: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "mc"
    shutil.copytree(experiments["montecarlo"], folder)
    t = pd.read_parquet(folder / "replications.parquet")
    t.loc[0, "twin_version"] = "0.0.1"
    t.to_parquet(folder / "replications.parquet", index=False)
    html_path, md_path, warnings = build_report(folder)
    assert warnings and "different twin versions" in warnings[0] and "0.0.1" in warnings[0]
    assert "different twin versions" in html_path.read_text()
    assert "**Warning:**" in md_path.read_text()


@pytest.mark.parametrize("damage", ["json-syntax", "json-list", "parquet-garbage", "parquet-missing", "forecast"])
def test_damaged_folder_is_bad_input(experiments: dict[str, Path], tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str], damage: str) -> None:
    """`twin report` on a damaged experiment folder: one line naming the file, exit 2 (was exit 3)."""
    from twin import cli

    folder = tmp_path / "mc"
    shutil.copytree(experiments["montecarlo"], folder)
    target = {"json-syntax": "experiment.json", "json-list": "experiment.json", "forecast": "experiment.json",
              "parquet-garbage": "replications.parquet", "parquet-missing": "replications.parquet"}[damage]
    if damage == "parquet-missing":
        (folder / target).unlink()
    else:
        (folder / target).write_text({"json-syntax": "{", "json-list": "[]", "parquet-garbage": "not parquet",
                                      "forecast": '{"kind": "forecast"}'}[damage])
    code = cli.main(["report", str(folder)])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1 and str(folder) in err[0], err
    assert target in err[0] or damage == "forecast"


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="headless rendering needs Debian's chromium package "
                    "(apt-get install chromium fonts-dejavu-core); CI installs it")
def test_report_renders_in_headless_chromium(experiments: dict[str, Path], tmp_path: Path) -> None:
    assert CHROMIUM is not None
    html_path, _, _ = build_report(experiments["compare"])
    shot = tmp_path / "shot.png"
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--enable-logging=stderr", "--v=0"]
    run = subprocess.run([*base, f"--user-data-dir={tmp_path / 'profile1'}", f"--screenshot={shot}",
                          "--window-size=1200,2000", html_path.resolve().as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert shot.is_file(), run.stderr[-2000:]
    assert shot.stat().st_size > 20_000  # a blank 1200x2000 page is a few kB
    dom = subprocess.run([*base, f"--user-data-dir={tmp_path / 'profile2'}", "--dump-dom",
                          html_path.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    imgs = re.findall(r'<img [^>]*src="data:image/png;base64,', dom.stdout)
    drawn = dom.stdout.count('class="main-svg"')  # Plotly draws its charts into these SVGs when the page runs
    assert len(imgs) + drawn >= 2
    assert "Decision summary" in dom.stdout and "Forest plots by group" in dom.stdout


CHARTS_JS = "[...document.querySelectorAll('.js-plotly-plot')]"


@pytest.mark.skipif(CHROMIUM is None, reason="the browser tests need Debian's chromium package "
                    "(apt-get install chromium fonts-dejavu-core); CI installs it")
@pytest.mark.parametrize("kind", ["montecarlo", "compare", "sweep", "sensitivity"])
def test_report_in_the_browser(experiments: dict[str, Path], tmp_path: Path, kind: str) -> None:
    """With the network off: loads without console errors, the decision summary is above the fold,
    every chart is drawn (traces in its SVG; every image decoded), hovering a point shows a value,
    and nothing is requested but the file itself."""
    from tests.cdp import Browser

    html_path, _, _ = build_report(experiments[kind])
    n_charts = html_path.read_text().count('<div class="chart"')
    assert n_charts >= 1
    b = Browser(tmp_path / "profile")
    try:
        b.offline()
        b.open(html_path.resolve().as_uri())
        drawn = b.wait_for(f"{CHARTS_JS}.filter(el => el.querySelector('.main-svg')).length >= {n_charts}")
        assert drawn, f"{kind}: not every chart was drawn"
        top, height = b.js("(() => {const r = document.getElementById('decision-summary')"
                           ".getBoundingClientRect(); return [r.top, r.height]})()")
        assert 0 <= top < b.height and height > 20, (top, height)
        assert len(b.js("document.getElementById('decision-summary').innerText")) > 40
        traces = b.js(f"{CHARTS_JS}.map(el => el.querySelectorAll('.scatterlayer .trace path, .barlayer .point path')"
                      ".length)")
        assert len(traces) == n_charts and all(t > 0 for t in traces), traces
        assert all(b.js("[...document.images].map(i => i.complete && i.naturalWidth > 0)"))
        for i in range(n_charts):
            x, y = b.js(f"(() => {{const el = {CHARTS_JS}[{i}]; el.scrollIntoView({{block: 'center'}}); "
                        "const p = el.querySelector('.scatterlayer .point, .barlayer .point'); "
                        "const r = p.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]})()")
            b.hover(x, y)
            text = b.wait_for(f"{CHARTS_JS}[{i}].querySelector('.hoverlayer').textContent", timeout=10)
            assert text and re.search(r"\d", text), f"{kind}: chart {i} shows no value on hover"
            b.hover(1, 1)
        assert b.errors() == [], b.errors()
        assert all(u.startswith(("file:", "data:")) for u in b.requests()), b.requests()
    finally:
        b.close()
