"""The package carries what `twin validate` reads: the Llama 3 table and the field case's scenarios
(package data read through importlib.resources), so the suite runs from an installed wheel, outside
the repository. The packaged scenarios are byte copies of the repository's `scenarios/` files."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from twin.scenario.loader import load_scenario
from twin.validation.field import (
    LLAMA_CSV,
    PACKAGED_SCENARIOS,
    packaged,
    packaged_scenario,
    published_group_counts,
    read_llama_table,
)

ROOT = Path(__file__).resolve().parents[1]


def test_packaged_scenarios_are_the_repository_files() -> None:
    """`scenarios/` is where users read and edit scenarios; the package ships copies of the ones the
    field case needs. A change to one without the other fails here."""
    for name in PACKAGED_SCENARIOS:
        shipped = packaged("scenarios", name).read_bytes()
        repo = (ROOT / "scenarios" / name).read_bytes()
        assert shipped == repo, (f"twin/validation/scenarios/{name} differs from scenarios/{name}: "
                                 f"copy it (cp scenarios/{name} twin/validation/scenarios/)")


def test_packaged_resources_load() -> None:
    """The packaged scenario resolves its `extends` inside the package and equals the repository's."""
    assert published_group_counts(read_llama_table())["total"] == 419
    assert packaged("data", LLAMA_CSV).is_file()
    with packaged_scenario() as path:
        shipped = load_scenario(path)
        assert path.parent != ROOT / "scenarios"
    assert shipped.resolved == load_scenario(ROOT / "scenarios" / "pretrain-16k.yaml").resolved


def _source_copy(dest: Path) -> Path:
    """The files a wheel is built from, copied (the build writes build/ and *.egg-info beside them)."""
    src = dest / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "twin", src / "twin", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return src


@pytest.mark.slow  # ~45 s on a loaded 2-core machine: a wheel build, a venv and the quick suite
def test_validate_quick_passes_from_an_installed_wheel(tmp_path: Path) -> None:
    """Build a wheel, install it into a fresh virtual environment (dependencies from this one's
    site-packages, the twin under test only from the wheel) and run `twin validate --quick` from a
    folder outside the repository. Needs pip's build isolation (setuptools and wheel from the
    package index). Fails at twin 0.3.20: the case looked for scenarios/ beside site-packages."""
    src = _source_copy(tmp_path)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(src)],
                   check=True, capture_output=True)
    (wheel,) = wheels.glob("twin-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # a path line in a .pth file puts the folder on sys.path without running its own .pth files, so
    # an editable install of twin there stays invisible: only the dependencies come from it
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(purelib) / "deps.pth").write_text("\n".join(deps) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q",
                    str(wheel)], check=True, capture_output=True)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    where = subprocess.run([str(py), "-c", "import twin; print(twin.__file__)"], cwd=work, env=env,
                           check=True, capture_output=True, text=True).stdout.strip()
    assert Path(where).is_relative_to(Path(purelib)), where
    run = subprocess.run([str(venv / "bin" / "twin"), "validate", "--quick", "--out", str(work / "out")],
                         check=False, cwd=work, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "llama3_54day" in run.stdout and (work / "out" / "quick" / "results.json").is_file()
