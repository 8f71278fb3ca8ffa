"""Results follow the user's umask (issue 30 item 6): every file and folder the twin writes has the
mode an ordinary ``open``/``mkdir`` would give, 0666/0777 less the umask, not the 0600/0700 of
``tempfile.mkstemp``/``mkdtemp`` (results a team sharing a folder could not read)."""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pandas as pd
import pytest
import yaml

from twin import cli
from twin.atomic import atomic_folder, atomic_path, atomic_write_parquet, atomic_write_text, atomic_write_text_new


@pytest.fixture(params=[0o022, 0o027, 0o002])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_atomic_files_and_folders_follow_the_umask(tmp_path: Path, umask: int) -> None:
    f_mode, d_mode = 0o666 & ~umask, 0o777 & ~umask
    atomic_write_text(tmp_path / "a" / "x.txt", "hello")
    assert mode(tmp_path / "a" / "x.txt") == f_mode
    assert mode(tmp_path / "a") == d_mode  # created on the way
    atomic_write_parquet(tmp_path / "t.parquet", pd.DataFrame({"x": [1, 2]}))
    assert mode(tmp_path / "t.parquet") == f_mode
    assert atomic_write_text_new(tmp_path / "new.txt", "once")
    assert mode(tmp_path / "new.txt") == f_mode
    with atomic_path(tmp_path / "raw.bin") as tmp:
        assert mode(tmp) == f_mode  # the temporary file already has its final mode
        tmp.write_bytes(b"\0")
    assert mode(tmp_path / "raw.bin") == f_mode
    with atomic_folder(tmp_path / "run", overwrite=False) as folder:
        (folder / "inner.txt").write_text("x")
        atomic_write_text(folder / "sub" / "y.txt", "y")
    assert mode(tmp_path / "run") == d_mode
    assert mode(tmp_path / "run" / "sub") == d_mode
    assert mode(tmp_path / "run" / "sub" / "y.txt") == f_mode
    with atomic_folder(tmp_path / "run", overwrite=True) as folder:  # replacing keeps the umask's modes
        (folder / "z.txt").write_text("z")
    assert mode(tmp_path / "run") == d_mode and mode(tmp_path / "run" / "z.txt") == f_mode
    assert not [p for p in tmp_path.rglob(".*tmp")], "temporary names left behind"


def test_a_results_folder_is_readable_by_the_group(tmp_path: Path) -> None:
    """End to end: every file and folder of a `twin run` results folder, with umask 022."""
    doc = {
        "name": "tiny", "seed": 3, "horizon_days": 5,
        "cluster": {"racks": 1, "nodes_per_rack": 2, "node": {"gpus": 8, "parts": {
            "gpu": {"count": 8, "failure": {"mtbf_h": 5000}, "repair": {"time": {"dist": "fixed", "value_h": 2}}}}}},
        "maintenance": {"crews": {"technicians": {"count": 1}}},
    }
    s = tmp_path / "s.yaml"
    s.write_text(yaml.safe_dump(doc))
    old = os.umask(0o022)
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()) as err:
            code = cli.main(["run", str(s), "--results", str(tmp_path / "r"), "--quiet"])
    finally:
        os.umask(old)
    assert code == 0, err.getvalue()
    written = list((tmp_path / "r").rglob("*"))
    assert any(p.name == "summary.json" for p in written) and any(p.suffix == ".parquet" for p in written)
    wrong = {str(p.relative_to(tmp_path)): oct(mode(p)) for p in written
             if mode(p) != (0o755 if p.is_dir() else 0o644)}
    assert not wrong, wrong
