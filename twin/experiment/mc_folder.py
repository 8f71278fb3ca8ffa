"""A Monte-Carlo results folder's bookkeeping (:mod:`twin.experiment.runner` drives the runs): one
replication's row as a file, the final table assembled from rows, the folder checked or created for a
scenario (replications of another scenario or twin version are never reused), a complete folder read
back, and the summary's JSON. Moved out of the runner unchanged (a room of its own: the runner stays
under 800 lines).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd
import yaml

import twin
from twin.atomic import atomic_path, atomic_write_text, make_dirs
from twin.errors import InputError
from twin.experiment import stats
from twin.experiment.rows import ID_DTYPES, read_stored
from twin.experiment.store import versions, write_json
from twin.scenario.advice import advise
from twin.scenario.loader import Loaded

def write_row(path: Path, row: Mapping[str, Any]) -> None:
    """One replication's row as a one-row parquet file, written to a temporary name and renamed
    (a killed run never leaves a partial file under the final name)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = list(ID_DTYPES)
    metrics = sorted(k for k in row if k not in ID_DTYPES)
    fields = [pa.field(k, pa.int64() if ID_DTYPES[k] == "int64" else pa.string()) for k in ids]
    fields += [pa.field(k, pa.float64()) for k in metrics]
    table = pa.Table.from_pydict({k: [row[k]] for k in ids + metrics}, schema=pa.schema(fields))
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read_row(path: Path) -> dict[str, Any]:
    rows = read_stored(path).to_pylist()
    if len(rows) != 1:
        raise InputError(str(path), "", f"a replication file holds one row, found {len(rows)}; use --overwrite")
    row: dict[str, Any] = rows[0]
    return row


def assemble(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """The final table from row dicts, whatever their source (a worker or a stored file): sorted
    by replication, identity columns first, then metrics in name order; a metric a replication
    did not report is NaN, or 0 for a count by cause (:data:`twin.experiment.stats.ZERO_WHEN_ABSENT`)."""
    rs = sorted(rows, key=lambda r: int(r["replication"]))
    metrics = sorted({k for r in rs for k in r if k not in ID_DTYPES})
    cols: dict[str, Any] = {}
    for k, t in ID_DTYPES.items():
        cols[k] = pd.Series([r[k] for r in rs], dtype=t)
    for k in metrics:
        v = [r.get(k, 0.0 if stats.zero_when_absent(k) else None) for r in rs]
        cols[k] = pd.Series(np.array([math.nan if x is None else x for x in v], dtype=np.float64))
    return pd.DataFrame(cols)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        doc: dict[str, Any] = json.loads(path.read_text())
        return doc
    except (OSError, ValueError):
        return None


def _request(reps: int, target_ci: Mapping[str, float] | None, max_reps: int) -> dict[str, Any]:
    return {"requested_reps": int(reps), "target_ci": dict(sorted((target_ci or {}).items())) or None,
            "max_reps": int(max_reps) if target_ci else None}


def prepare_folder(folder: Path, loaded: Loaded, overwrite: bool) -> str | None:
    """Create or check the folder: it must hold this scenario's Monte Carlo or nothing. Replications
    stored by another twin version are not reused (the model may have changed: the version is bumped
    whenever results change): the folder is emptied and the returned note says so."""
    if folder.exists() and not folder.is_dir():
        raise InputError(str(folder), "", "exists and is not a folder")
    meta = folder / "experiment.json"
    note = None
    if folder.exists() and overwrite:
        shutil.rmtree(folder)
    elif folder.exists() and any(folder.iterdir()):
        data = _read_json(meta)
        if data is None or data.get("kind") != "montecarlo":
            raise InputError(str(folder), "--label", "folder exists and is not a Monte-Carlo results folder; "
                             "choose another --label or use --overwrite")
        if data.get("scenario_hash") != loaded.hash:
            raise InputError(str(folder), "--label",
                             f"folder holds replications of another scenario (hash {data.get('scenario_hash')}, "
                             f"this one is {loaded.hash}); choose another --label or use --overwrite")
        made_by = (data.get("versions") or {}).get("twin")
        if made_by != twin.__version__:
            shutil.rmtree(folder)
            note = (f"note: {folder} held replications made by twin {made_by}; recomputing them with twin "
                    f"{twin.__version__} (results of another version are never reused)")
    make_dirs(folder)
    sc = loaded.scenario
    if not meta.is_file():
        write_json(meta, {"kind": "montecarlo", "scenario": sc.name, "scenario_hash": loaded.hash,
                          "seed": sc.seed, "source": str(loaded.source), "versions": versions()})
        atomic_write_text(folder / "scenario.resolved.yaml", yaml.safe_dump(loaded.resolved, sort_keys=False))
    return note


def load_complete(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]] | None:
    """(replications, summary, COMPLETE data) of a complete folder, else None."""
    done = _read_json(folder / "COMPLETE")
    if done is None or not all((folder / f).is_file() for f in ("replications.parquet", "summary.parquet")):
        return None  # never completed, or a deleted table: rebuilt from the stored chunks
    reps = read_stored(folder / "replications.parquet", pd.read_parquet)
    summ = read_stored(folder / "summary.parquet", pd.read_parquet)
    return reps, summ, done


def summary_json(loaded: Loaded, table: pd.DataFrame, summ: pd.DataFrame, target_ci: Mapping[str, float] | None,
                 target_met: bool | None) -> dict[str, Any]:
    sc = loaded.scenario
    return {
        "kind": "montecarlo", "scenario": sc.name, "scenario_hash": loaded.hash, "seed": sc.seed,
        "replications": int(len(table)), "level": stats.LEVEL, "quantile_intervals": stats.QUANTILE_INTERVALS,
        "target_ci": dict(target_ci) if target_ci else None, "target_met": target_met,
        "horizon_days": sc.horizon_days, "nodes": sc.cluster.n_nodes, "gpus": sc.cluster.n_nodes * sc.cluster.node.gpus,
        "versions": versions(), "twin_versions": sorted(set(table["twin_version"].astype(str))) if len(table) else [],
        "advice": [str(a) for a in advise(sc)],
        "metrics": {r["metric"]: {k: v for k, v in r.items() if k != "metric"} for r in summ.to_dict("records")},
    }
