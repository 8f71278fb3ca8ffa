"""Run the worked-study notebooks (``notebooks/*.ipynb``) top to bottom: ``python -m twin.notebooks``.

The notebooks are stored without outputs. Each reads two environment variables in its first code
cell:

- ``TWIN_NOTEBOOK_SMALL=1``: the small size the tests use (fewer replications, a shorter horizon
  and a smaller cluster, together; seconds of simulation). Unset or ``0``: the full study.
- ``TWIN_NOTEBOOK_RESULTS=DIR``: where the notebook writes its experiment folders (kept). Unset: a
  temporary folder, removed when the kernel exits, so running a notebook leaves no files behind.

:func:`execute` runs one notebook with nbclient in a fresh kernel of *this* Python (the native
``python3`` kernel of the running interpreter, never a kernelspec installed elsewhere), with the
repository root as working directory. Needs the ``dev`` extra (nbclient, ipykernel).

Command line (exit codes as every twin command: 0 ok, 1 a notebook failed, 2 bad input)::

    python -m twin.notebooks --list
    python -m twin.notebooks checkpoint_interval              # full size, writes results/notebooks/
    python -m twin.notebooks --small                          # every notebook, small size
    python -m twin.notebooks spares_and_crews --results results/studies --out results/notebooks
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

NOTEBOOKS: dict[str, str] = {
    "cooling_air_vs_liquid": "air, liquid or hybrid cooling: goodput, throttling, trips, PUE, energy and cost over a "
                             "year, with the energy-price break-even",
    "power_redundancy": "N, N+1, 2N or the DGX 3+3 split: availability and goodput with CIs, node-hours lost by cause",
    "checkpoint_interval": "ETTR of a 16,384-GPU job versus checkpoint interval against Daly's exact formula, and "
                           "what hot spares add at the optimum",
    "spares_and_crews": "availability over spare GPU stock and technicians (a sweep surface), and the cheapest "
                        "configuration meeting a target",
    "reliability_report": "custom pandas/matplotlib plots from a Monte-Carlo folder and a single-run folder",
}
"""Notebook name (file stem) → the question it answers."""

SMALL_ENV = "TWIN_NOTEBOOK_SMALL"
RESULTS_ENV = "TWIN_NOTEBOOK_RESULTS"


def small_overrides(loaded: Any, racks: int, horizon_days: float) -> list[str]:
    """``--set`` overrides that shrink a scenario to ``racks`` racks and ``horizon_days`` days with its
    workload scaled alike (the notebooks' small size).

    With f = racks / the scenario's racks: every listed job's GPUs × f (whole nodes, at least
    one), the synthetic arrival rate × f and the hot spares × f (at least one when the scenario
    has any), so the cluster is about as busy as at full size. Site-level capacities (cooling
    units, power feeds) are not scaled here: a notebook that needs that scales them itself."""
    sc = loaded.scenario
    f = racks / sc.cluster.racks
    gpn = sc.cluster.node.gpus
    out = [f"cluster.racks={int(racks)}", f"horizon_days={float(horizon_days)!r}"]
    wl = getattr(sc, "workload", None)
    if wl is not None:
        for i, job in enumerate(wl.jobs):
            nodes = max(1, round(-(-job.gpus // gpn) * f))
            out.append(f"workload.jobs.{i}.gpus={nodes * gpn}")
        if wl.synthetic is not None:
            out.append(f"workload.synthetic.arrival_rate_per_h={wl.synthetic.arrival_rate_per_h * f!r}")
        hs = wl.scheduler.hot_spares
        if hs:
            out.append(f"workload.scheduler.hot_spares={max(1, round(hs * f))}")
    return out


def repo_root() -> Path:
    """The source tree this package was imported from (the notebooks live in its ``notebooks/``)."""
    return Path(__file__).resolve().parents[1]


def notebook_path(name: str) -> Path:
    """``notebooks/<name>.ipynb`` of the source tree (``name`` may also be a path to a notebook)."""
    p = Path(name)
    if p.suffix == ".ipynb" and p.is_file():
        return p
    return repo_root() / "notebooks" / f"{Path(name).stem}.ipynb"


def execute(path: str | os.PathLike[str], small: bool = False, timeout_s: float | None = None,
            results: str | os.PathLike[str] | None = None, cwd: str | os.PathLike[str] | None = None) -> Any:
    """Execute the notebook at ``path`` top to bottom in a fresh kernel; return it with its outputs.

    See :func:`run_notebook`. Raises ``nbclient.exceptions.CellExecutionError`` when a cell fails."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    run_notebook(nb, small, timeout_s, results, cwd)
    return nb


def run_notebook(nb: Any, small: bool = False, timeout_s: float | None = None,
                 results: str | os.PathLike[str] | None = None, cwd: str | os.PathLike[str] | None = None) -> None:
    """Execute a notebook object in place (its outputs are filled in, also up to a failing cell).

    ``timeout_s`` bounds each cell (seconds; None: no bound). The kernel is the running
    interpreter's own ipykernel (``sys.executable``), started in ``cwd`` (default: the repository
    root) with ``TWIN_NOTEBOOK_SMALL`` set from ``small`` and ``TWIN_NOTEBOOK_RESULTS`` from
    ``results``. Raises ``nbclient.exceptions.CellExecutionError`` when a cell fails."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    env = dict(os.environ)
    env[SMALL_ENV] = "1" if small else "0"
    if results is not None:
        env[RESULTS_ENV] = str(Path(results).resolve())
    else:
        env.pop(RESULTS_ENV, None)
    # no kernelspec directories: "python3" resolves to ipykernel's native spec, argv[0] = sys.executable
    km = KernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))
    client = NotebookClient(nb, km=km, kernel_name="python3", timeout=None if timeout_s is None else int(timeout_s),
                            startup_timeout=120, resources={"metadata": {"path": str(Path(cwd or repo_root()))}})
    try:
        client.execute(env=env)
    finally:
        if km.has_kernel:
            km.shutdown_kernel(now=False)


def first_error(nb: Any) -> str:
    """``ename: evalue`` of the first error output of an executed notebook ('' when none), without
    terminal colour codes."""
    import re

    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                text = f"{out.get('ename', '')}: {out.get('evalue', '')}"
                return re.sub(r"\x1b\[[0-9;]*m", "", text)
    return ""


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m twin.notebooks", description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="notebooks to run (default: all); see --list")
    ap.add_argument("--list", action="store_true", help="list the notebooks and their questions")
    ap.add_argument("--small", action="store_true", help="the small size the tests use (seconds per notebook)")
    ap.add_argument("--out", default="results/notebooks",
                    help="folder for the executed notebooks with their outputs (default: results/notebooks)")
    ap.add_argument("--results", default=None,
                    help="keep the notebooks' experiment folders here (default: a temporary folder, removed)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds allowed per cell (default: no limit)")
    a = ap.parse_args(argv)
    if a.list:
        width = max(map(len, NOTEBOOKS))
        for k, v in NOTEBOOKS.items():
            print(f"{k:<{width}}  {v}")
        return 0
    names = a.names or list(NOTEBOOKS)
    paths = []
    for n in names:
        p = notebook_path(n)
        if not p.is_file():
            print(f"twin.notebooks: {n}: no such notebook (expected {p}); choose from: {', '.join(NOTEBOOKS)}",
                  file=sys.stderr)
            return 2
        paths.append(p)
    try:
        import nbclient  # noqa: F401
        import nbformat
    except ImportError:
        print("twin.notebooks: nbclient is not installed: pip install -e '.[dev]'", file=sys.stderr)
        return 2
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for p in paths:
        t0 = time.perf_counter()
        print(f"{p.stem}: running ({'small' if a.small else 'full'} size) ...", flush=True)
        nb = nbformat.read(str(p), as_version=4)
        target = out / p.name
        try:
            run_notebook(nb, small=a.small, timeout_s=a.timeout, results=a.results)
        except KeyboardInterrupt:
            print(f"\ninterrupted: {p.stem} stopped", file=sys.stderr)
            return 130
        except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
            nbformat.write(nb, str(target))
            why = first_error(nb) or f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
            print(f"twin.notebooks: {p.stem} failed: {why} (outputs up to the failing cell: {target})",
                  file=sys.stderr)
            failed += 1
            continue
        nbformat.write(nb, str(target))
        print(f"{p.stem}: done in {time.perf_counter() - t0:.0f} s -> {target}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
