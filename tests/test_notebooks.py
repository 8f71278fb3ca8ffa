"""The worked-study notebooks (notebooks/*.ipynb, issue 14) run top to bottom at the small size.

Each notebook is executed with nbclient in a fresh kernel of this interpreter
(:func:`twin.notebooks.execute`: ipykernel's native spec, ``sys.executable``), working directory the
repository root, ``TWIN_NOTEBOOK_SMALL=1`` and a per-cell timeout. The notebooks are stored without
outputs, state their conclusions from their own results, and leave no files in the repository.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

from twin import notebooks as twin_nb  # noqa: E402
from twin.scenario.loader import load_scenario  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
NAMES = sorted(twin_nb.NOTEBOOKS)
CELL_TIMEOUT_S = 300
SMALL_LINE = 'SMALL = os.environ.get("TWIN_NOTEBOOK_SMALL", "0") == "1"'


def _read(name: str):
    return nbformat.read(str(NB_DIR / f"{name}.ipynb"), as_version=4)


def _snapshot() -> set[str]:
    """Files a notebook could leave behind: anything in notebooks/ and results/, and the top level."""
    out = {p.name for p in ROOT.iterdir()}
    for d in (NB_DIR, ROOT / "results"):
        if d.is_dir():
            out |= {str(p.relative_to(ROOT)) for p in d.rglob("*") if "__pycache__" not in p.parts}
    return out


def test_every_notebook_is_listed() -> None:
    assert {p.stem for p in NB_DIR.glob("*.ipynb")} == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_stored_without_outputs(name: str) -> None:
    nb = _read(name)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    for c in code:
        assert c.outputs == [] and c.execution_count is None, f"{name}: stored with outputs"
    assert SMALL_LINE in code[0].source, f"{name}: the first code cell must read TWIN_NOTEBOOK_SMALL"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_small(name: str) -> None:
    before = _snapshot()
    nb = twin_nb.execute(NB_DIR / f"{name}.ipynb", small=True, timeout_s=CELL_TIMEOUT_S)
    assert twin_nb.first_error(nb) == ""
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream" and o.name == "stdout")
    images = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert "small size" in text, "the notebook did not run at the small size"
    assert "Conclusions (computed above):" in text
    conclusions = text.split("Conclusions (computed above):")[-1]
    assert re.search(r"\d", conclusions), "conclusions must carry computed numbers"
    assert len(images) >= 2, f"{name}: expected its plots, got {len(images)} images"
    assert _snapshot() == before, f"{name} left files in the repository"


def test_kernel_is_this_interpreter() -> None:
    """The notebooks run on the interpreter running the tests (its venv), not a kernelspec elsewhere."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import sys, twin; print(sys.executable); "
                                                                    "print(twin.__file__)")])
    twin_nb.run_notebook(nb, small=True, timeout_s=60)
    exe, mod = nb.cells[0].outputs[0].text.split()
    assert os.path.abspath(exe) == os.path.abspath(sys.executable)
    assert Path(mod).resolve() == Path(twin_nb.__file__).resolve().parent / "__init__.py"


def test_small_overrides_scale_the_workload() -> None:
    ld = load_scenario(str(ROOT / "scenarios" / "baseline.yaml"))
    sets = twin_nb.small_overrides(ld, 4, 30)
    assert sets[:2] == ["cluster.racks=4", "horizon_days=30.0"]
    small = load_scenario(str(ROOT / "scenarios" / "baseline.yaml"), sets).scenario
    f = 4 / ld.scenario.cluster.racks
    assert small.cluster.n_nodes == ld.scenario.cluster.n_nodes * f
    assert small.workload.jobs[0].gpus == ld.scenario.workload.jobs[0].gpus * f
    assert small.workload.synthetic.arrival_rate_per_h == pytest.approx(
        ld.scenario.workload.synthetic.arrival_rate_per_h * f)


def test_runner_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert twin_nb.main(["--list"]) == 0
    assert set(NAMES) <= set(capsys.readouterr().out.split())
    assert twin_nb.main(["no_such_notebook"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no_such_notebook" in err[0]
