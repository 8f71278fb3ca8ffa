"""The kernels imported at their first use (``twin.kernels_lazy``, issue 41): a run that calls no kernel imports no
numba; a thermal run imports the kernels when its model first calls one, after which the model modules' globals
are the kernel modules and functions themselves (no stand-in left on the hot paths). The runs are subprocesses,
so what this process imported does not count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from twin import kernels_lazy

ROOT = Path(__file__).resolve().parent.parent

_RUN = """
import json, sys
from twin.cli import main
rc = main(['run', sys.argv[1], '--set', 'horizon_days=' + sys.argv[3], '--results', sys.argv[2], '--quiet'])
import twin.model.cluster as cl, twin.model.it_power as ip, twin.model.fan_law as fl
import twin.model.workload.progress as pg, twin.model.cooling.gpu as gp, twin.model.cooling.replay as rp
import twin.model.cooling.ageing as ag
names = {'cluster.any_lt': cl.any_lt, 'it_power.kernels': ip.kernels, 'fan_law.kernels': fl.kernels,
         'progress.min_of_at': pg.min_of_at, 'gpu.kernels_units': gp.kernels_units, 'replay.kernels_replay': rp.kernels_replay,
         'ageing.kernels_ageing': ag.kernels_ageing}
print(json.dumps({'rc': rc, 'numba': 'numba' in sys.modules,
                  'kernels': sorted(m for m in sys.modules if m.startswith('twin.kernels') and m != 'twin.kernels_lazy'),
                  'stand_ins': sorted(k for k, v in names.items() if type(v).__module__ == 'twin.kernels_lazy')}))
"""


def _run(scenario: str, tmp_path: Path, days: int = 3) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}  # (imports, not the kernels' Python
    env["PYTHONPATH"] = str(ROOT)  # forms: the CI step that runs tests/test_kernels*.py without the JIT runs these compiled)
    out = subprocess.run([sys.executable, "-c", _RUN, str(ROOT / scenario), str(tmp_path / "r"), str(days)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("scenario", ["scenarios/baseline.yaml", "scenarios/pretrain-16k.yaml"])
def test_a_run_without_kernels_imports_no_numba(scenario: str, tmp_path: Path) -> None:
    r = _run(scenario, tmp_path)
    assert r["rc"] == 0
    assert not r["numba"] and r["kernels"] == [], r


def test_a_thermal_run_imports_the_kernels_and_binds_them(tmp_path: Path) -> None:
    """The benchmark's air hall over 10 days: GPUs throttle (thermal caps, pace changes), fans, cool nodes' replay."""
    r = _run("benchmarks/halls/air.yaml", tmp_path, 10)
    assert r["rc"] == 0 and r["numba"]
    assert {"twin.kernels", "twin.kernels_events", "twin.kernels_replay", "twin.kernels_units",
            "twin.kernels_ageing"} <= set(r["kernels"])  # (the air hall ages its node parts by the X-factor)
    assert r["stand_ins"] == [], r  # every stand-in replaced by the real module or function at its first use


def test_stand_ins_import_on_first_use_and_replace_themselves() -> None:
    ns: dict = {}
    ns["kr"] = kernels_lazy.module("twin.kernels_replay", ns, "kr")
    ns["peak"] = kernels_lazy.function("twin.kernels_replay", "peak_pairs", ns, "peak")
    ns["other"] = ns["peak"]  # (a stand-in bound to another name is not what its key holds: left alone)
    import numpy as np

    x = np.array([20.0])
    one = np.ones(1)
    got = ns["peak"](x, np.array([0]), np.array([1]), one * 0.5, one * 0.5, one * 60.0, -np.inf)
    assert got == 40.0 and x[0] == 40.0
    import twin.kernels_replay as real

    assert ns["peak"] is real.peak_pairs
    assert type(ns["other"]).__name__ == "_Function"
    assert ns["kr"].replay_units is real.replay_units
    assert isinstance(ns["kr"], types.ModuleType) and ns["kr"] is real
