"""Calibration of part failure distributions from field data (``twin fit``).

Public API:

* :func:`read_lives` / :func:`read_lifetimes_csv` / :func:`read_event_log_csv` — field data
  → :class:`Lifetime` records (bad input → :class:`~twin.errors.InputError`).
* :func:`fit_lifetimes` / :func:`fit_part` / :func:`fit_model` — censored maximum-likelihood
  fits (exponential, Weibull, lognormal) with 95 % intervals and AIC/BIC.
* :func:`yaml_fragment`, :func:`scenario_text`, :func:`write_report` — outputs.
* :func:`simulate_lifetimes` — synthetic censored lifetimes with known truth.
* ``twin.fit.cli.add_parser`` / ``twin.fit.cli.run`` — the ``twin fit`` subcommand.
"""

from typing import Any

_HOME = {
    "fit_lifetimes": "api", "read_lives": "api",
    "Lifetime": "data", "read_event_log_csv": "data", "read_lifetimes_csv": "data", "write_lifetimes_csv": "data",
    "ModelFit": "mle", "PartFit": "mle", "fit_model": "mle", "fit_part": "mle", "kaplan_meier": "mle",
    "scenario_text": "report", "write_report": "report", "yaml_fragment": "report",
    "simulate_lifetimes": "synthetic",
}
"""The module of each public name. They are imported when first used (PEP 562): the fits need
scipy.stats (~0.5 s to import), which a command that does not fit (every ``twin`` command builds
its parser with ``twin fit``'s) should not pay for."""


def __getattr__(name: str) -> Any:
    if name in _HOME:
        import importlib

        return getattr(importlib.import_module(f"twin.fit.{_HOME[name]}"), name)
    raise AttributeError(f"module 'twin.fit' has no attribute {name!r}")


__all__ = [
    "Lifetime",
    "ModelFit",
    "PartFit",
    "fit_lifetimes",
    "fit_model",
    "fit_part",
    "kaplan_meier",
    "read_event_log_csv",
    "read_lifetimes_csv",
    "read_lives",
    "scenario_text",
    "simulate_lifetimes",
    "write_lifetimes_csv",
    "write_report",
    "yaml_fragment",
]
