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

from twin.fit.api import fit_lifetimes, read_lives
from twin.fit.data import Lifetime, read_event_log_csv, read_lifetimes_csv, write_lifetimes_csv
from twin.fit.mle import ModelFit, PartFit, fit_model, fit_part, kaplan_meier
from twin.fit.report import scenario_text, write_report, yaml_fragment
from twin.fit.synthetic import simulate_lifetimes

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
