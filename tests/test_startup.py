"""What a command imports (issue 31): a Monte-Carlo run that writes no report imports no plotting
and no optimiser. Start-up is most of a short run's time (pyplot ~0.25 s, scipy.optimize ~0.1 s of
CPU): the 128-node peer comparison (benchmarks/peers.py) is a whole program of about a second."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_montecarlo_without_report_imports_no_pyplot_nor_optimize(tmp_path: Path) -> None:
    doc = {"name": "startup", "seed": 1, "horizon_days": 30,
           "cluster": {"racks": 1, "nodes_per_rack": 4, "node": {"gpus": 8, "parts": {
               "gpu": {"count": 8, "failure": {"dist": "exponential", "mean_h": 5000.0},
                       "repair": {"time": {"dist": "fixed", "value_h": 8.0}}}}}}}
    scen = tmp_path / "s.yaml"
    scen.write_text(yaml.safe_dump(doc))
    code = ("import sys\n"
            "from twin.cli import main\n"
            f"rc = main(['montecarlo', {str(scen)!r}, '--reps', '3', '--results', {str(tmp_path / 'r')!r}, "
            "'--quiet', '--no-report'])\n"
            "print(rc, sorted(m for m in ('matplotlib', 'matplotlib.pyplot', 'scipy.optimize') if m in sys.modules))\n")
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    assert out == "0 []", out


def test_main_leaves_the_environment_as_it_found_it(tmp_path: Path, monkeypatch) -> None:
    """main() picks Agg through MPLBACKEND for its own command only: a notebook kernel the same process starts
    afterwards (tests/test_notebooks.py after any in-process CLI test) must keep its inline backend. Failed
    when main() set the variable for good: the checkpoint_interval notebook then drew no image."""
    from twin.cli import main

    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)  # (the path that sets the variable)
    monkeypatch.delenv("MPLBACKEND", raising=False)
    assert main(["--help"]) == 0
    assert "MPLBACKEND" not in os.environ
    monkeypatch.setenv("MPLBACKEND", "module://custom")
    assert main(["--help"]) == 0
    assert os.environ["MPLBACKEND"] == "module://custom"
