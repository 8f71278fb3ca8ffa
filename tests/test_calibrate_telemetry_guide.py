"""The walk-through of docs/guide/telemetry.md runs at a small size (issue 45, done when): its ``twin
calibrate`` on the bundled example telemetry, with 2 replications of the check, and Decision 1 with the
measured spread, with 2 replications over 2 days; the results in a temporary folder."""

from __future__ import annotations

import glob
import re
import shlex
from pathlib import Path

import pytest

from twin import cli

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guide" / "telemetry.md"


def walk_through() -> list[list[str]]:
    """The page's commands on the bundled example and the decision, in order (the first block's generic
    command names files the reader has: left out)."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip().startswith("twin ") and ("examples/telemetry" in line or "r_sigma" in line):
                out.append(shlex.split(line)[1:])
    return out


def test_the_guide_walk_through_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    commands = walk_through()
    assert [c[0] for c in commands] == ["calibrate", "compare"]
    calibrate, compare = commands
    files = [f for a in calibrate[1:] if not a.startswith("-") for f in (sorted(glob.glob(a)) or [a])]
    argv = ["calibrate"] + [f for f in files if "examples/telemetry" in f and not f.endswith(".yaml")]
    i = calibrate.index("--base")
    argv += ["--base", calibrate[i + 1], "--out", str(tmp_path / "telemetry"), "--reps", "2"]
    code = cli.main(argv)
    out = capsys.readouterr().out
    assert code in (0, 1), out
    # the numbers the page quotes
    assert "median 0.09219 °C/W [0.0913, 0.09303], r_sigma 0.0498 [0.0444, 0.0583] from 96 GPUs" in out
    text = (tmp_path / "telemetry" / "calibrated.yaml").read_text(encoding="utf-8")
    assert "r_sigma: 0.0498" in text and "slot_preheat_c: 2.07" in text
    page = PAGE.read_text(encoding="utf-8")
    assert "σ = 0.0498 [0.0444, 0.0583]" in page and "--set cooling.gpu.r_sigma=0.0498" in page
    small = [a for a in compare if a not in ("--reps", "--workers", "30", "2")]
    code = cli.main(small + ["--reps", "2", "--set", "horizon_days=2", "--results", str(tmp_path / "results"),
                             "--quiet", "--no-report"])
    captured = capsys.readouterr()
    assert code == 0, captured.err[-2000:]
    assert "decision summary" in captured.out
