"""Sentences of a decision summary (issue 30, item 1), built from the numbers of a stored
``decision-summary.json`` (:mod:`twin.experiment.summary`) and the metric catalogue; shown in the
terminal and at the top of every report. Nothing is hard-coded but the words between numbers.

A paragraph per objective: the recommendation (or "no difference at this number of replications"
and how many would resolve it), what drives it, when it pays back (or "never: net benefit ≤ 0")
and what would flip it.
"""

from __future__ import annotations

import math
from typing import Any

from twin.report.metrics import format_interval, format_value, label, plain


def _pct(level: float) -> str:
    return f"{plain(100 * level, 4)} %"


def _money(x: Any, cur: str) -> str:
    return format_value("cost.total", float(x), cur) if x is not None else "–"


def _years(x: Any) -> str:
    if x == "never":
        return "never"
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{plain(float(x), 3)} years"


def _better(direction: int) -> str:
    return "higher is better" if direction > 0 else "lower is better"


def _hides_what(hides: list[dict[str, Any]]) -> str:
    """"the UPS maintenance windows and the chiller maintenance windows (horizon_days ≥ 365)"."""
    whats = [h["what"] for h in hides]
    listed = whats[0] if len(whats) == 1 else ", ".join(whats[:-1]) + " and " + whats[-1]
    need = max(int(h["needed_days"]) for h in hides)
    return f"the {listed} (horizon_days of at least {need:,} holds them)"


def horizon_paragraph(hides: list[dict[str, Any]]) -> list[str]:
    """What the horizon hides (:func:`twin.experiment.summary.horizon_hides`), before the objectives."""
    if not hides:
        return []
    days = plain(float(hides[0]["horizon_days"]), 4)
    return [f"Warning: the {days}-day horizon is shorter than the period of {_hides_what(hides)}: no replication "
            "sees all of them, so what they would change is missing from every number below, and more "
            "replications cannot show it."]


def _why_identical(lab: str, tied: list[str], differs: dict[str, list[str]]) -> str:
    """Why options can tie in every replication: common random numbers give them the same draws, and
    what differs between their scenarios (``differs``: option → fields unlike the reference's) never
    reached the metric."""
    fields = sorted({f for o in tied for f in differs.get(o, [])})
    what = (f"what differs between them ({', '.join(fields[:4])}{f' and {len(fields) - 4} more' if len(fields) > 4 else ''})"
            if fields else "what differs between them")
    return (f"Why: under common random numbers every option draws the same failures, repairs and outages in a "
            f"replication, and {what} never changed {lab} in any of them.")


def objective_paragraph(e: dict[str, Any], cur: str, reference: str | None = None,
                        hides: list[dict[str, Any]] | None = None,
                        differs: dict[str, list[str]] | None = None) -> list[str]:
    """Sentences for one objective over several options (``hides``: what the horizon hides;
    ``differs``: each option's scenario fields unlike the reference's)."""
    m = e["metric"]
    lab = label(m)
    means = e["means"]
    n = e.get("replications")
    out = [f"Objective: {lab} ({_better(e['direction'])})."]
    k = e["pairs_tested"]
    how = f"{_pct(e['level'])} CI" + (f", Bonferroni over {k} pairs" if k > 1 else "")
    lead = e["lead"]
    if e["recommended"] is not None:
        parts = [f"{format_value(m, p['diff'], cur, delta=True)} against {p['other']} "
                 f"({format_value(m, means[p['other']], cur)}; {how} {format_interval(m, p['ci_low'], p['ci_high'], cur, True)})"
                 for p in e["pairs"]]
        out.append(f"Recommended: {lead}, with {lab} {format_value(m, means[lead], cur)}: a paired difference of "
                   + "; ".join(parts) + f", over {n} replications.")
    elif e.get("all_identical"):
        tied = [lead] + [p["other"] for p in e["pairs"] if not p["resolved"]]
        out.append(f"No difference: {lab} is identical for {', '.join(tied)} in every one of the {n} replications"
                   + (" (within a horizon that hides the scheduled mechanisms named above)." if hides else ".")
                   + " " + _why_identical(lab, tied, differs or {}))
        beaten = [p for p in e["pairs"] if p["resolved"]]
        if beaten:  # the tie is at the top: say which options it beats, and by how much
            out.append(f"{'Both' if len(tied) == 2 else 'Each'} {'is' if len(tied) > 2 else 'are'} better than "
                       + "; ".join(f"{p['other']} ({format_value(m, means[p['other']], cur)}: {lead} − {p['other']} "
                                   f"{format_value(m, p['diff'], cur, delta=True)}, {how} "
                                   f"{format_interval(m, p['ci_low'], p['ci_high'], cur, True)})" for p in beaten)
                       + ".")
    else:
        open_ = [p for p in e["pairs"] if not p["resolved"]]
        p = open_[0]
        out.append(f"No difference at this number of replications ({n}): {lead} leads with {lab} "
                   f"{format_value(m, means[lead], cur)} against {format_value(m, means[p['other']], cur)} for "
                   f"{p['other']}, a paired difference of {format_value(m, p['diff'], cur, delta=True)} whose {how} "
                   f"{format_interval(m, p['ci_low'], p['ci_high'], cur, True)} includes zero.")
        need = e.get("replications_needed")
        if need is not None and n is not None:
            out.append(f"About {need:,} replications ({need - n:,} more) would resolve a difference of this size "
                       f"(from the observed paired SD {format_value(m, p['sd'], cur)}).")
        elif hides:  # zero within the horizon: the mechanisms it hides may yet separate them
            out.append("The observed mean difference is zero within a horizon that hides the scheduled mechanisms "
                       "named above: more replications of this horizon cannot separate them; a longer horizon may.")
        else:
            out.append("The observed mean difference is zero: more replications are not expected to separate them.")
    drv = e.get("drivers") or []
    if drv and e.get("runner_up") is not None:
        items = [f"{label(d['metric'])} {format_value(d['metric'], d['diff'], cur, delta=True)} "
                 f"{format_interval(d['metric'], d['ci_low'], d['ci_high'], cur, True)}" for d in drv]
        out.append(f"What drives it ({lead} − {e['runner_up']}, paired, 95 % CI): " + "; ".join(items) + ".")
    p = e.get("payback")
    if p is not None:
        out += payback_sentences(p, cur or p.get("currency", ""), m.startswith("cost."))
    return out


def payback_sentences(p: dict[str, Any], cur: str, cost_objective: bool) -> list[str]:
    """When the option pays back (never when its net benefit is ≤ 0) and the break-even price."""
    o, a = p["option"], p["against"]
    k, b = float(p["extra_capital"]), float(p["annual_net_benefit"])
    ci = f"95 % CI [{_money(p['annual_net_benefit_ci_low'], cur)}, {_money(p['annual_net_benefit_ci_high'], cur)}]"
    out = []
    if k > 0:
        if b > 0 and p["payback_years"] not in (None, "never"):
            out.append(f"Payback: {o} needs {_money(k, cur)} more capital than {a}; its net benefit of "
                       f"{_money(b, cur)} per year ({ci}) repays it in {_years(p['payback_years'])} "
                       f"(95 % CI {_years(p['payback_years_ci_low'])} to {_years(p['payback_years_ci_high'])}; "
                       f"discount rate {plain(100 * p['discount_rate'], 3)} %).")
        else:
            out.append(f"Payback: never: net benefit ≤ 0 ({_money(b, cur)} per year, {ci}) for {_money(k, cur)} more "
                       f"capital than {a}.")
    elif b >= 0:
        out.append(f"Payback: at once: {o} needs {_money(-k, cur)} less capital than {a} and its net benefit is "
                   f"{_money(b, cur)} per year ({ci}).")
    else:
        used = ("at that rate the saving is never used up" if p["payback_years"] == "never"
                else f"the saving is used up after {_years(p['payback_years'])}")
        out.append(f"Capital: {o} needs {_money(-k, cur)} less capital than {a}, but its net benefit is "
                   f"{_money(b, cur)} per year ({ci}): {used}.")
    if cost_objective:
        price, now = p.get("energy_price_breakeven_per_kwh"), p.get("energy_price_per_kwh")
        if price is not None and math.isfinite(float(price)):
            out.append(f"What would flip it: an energy price of {plain(float(price), 3)} {cur}/kWh "
                       f"({plain(float(p['tariff_multiplier_breakeven']), 3)} × today's "
                       f"{plain(float(now), 3) if now is not None else '–'} {cur}/kWh) makes {o} and {a} cost the "
                       "same net of the value of their useful GPU-hours.")
        else:
            out.append(f"What would flip it: no positive energy price makes {o} and {a} cost the same net of the "
                       "value of their useful GPU-hours.")
    return out


def single_paragraph(e: dict[str, Any], cur: str, option: str | None) -> list[str]:
    m = e["metric"]
    out = [f"{label(m)}{' of ' + option if option else ''}: {format_value(m, e['mean'], cur)} "
           f"(95 % CI {format_interval(m, e['ci_low'], e['ci_high'], cur)}, {e['replications']} replications)."]
    if e.get("losses"):
        out.append("The largest losses of installed GPU-hours: " + "; ".join(
            f"{label(x['metric']).replace('goodput lost to: ', '')} {format_value(x['metric'], x['mean'], cur)}"
            for x in e["losses"]) + ".")
    return out


def sentences(d: dict[str, Any]) -> list[list[str]]:
    """The summary as paragraphs of sentences (one paragraph per objective or factor)."""
    cur = d.get("currency") or ""
    paras: list[list[str]] = []
    for note in d.get("notes", []):
        if note.startswith("no_costs:"):
            m = note.split(":", 1)[1]
            paras.append([f"No costs in the scenario: the objective is {label(m)} instead of the cost per useful "
                          "GPU-hour (give a costs section, or --objective METRIC)."])
    hides = d.get("horizon_hides") or []
    paras += [p for p in [horizon_paragraph(hides)] if p]
    kind = d.get("kind")
    if kind == "sensitivity":
        for f in d.get("factors", []):
            m = f["metric"]
            s = [f"The factor that matters most for {label(m)} is {f['factor']}: at {f['low']} it moves "
                 f"{label(m)} by {format_value(m, f['delta_low'], cur, True)} "
                 f"{format_interval(m, f['delta_low_ci_low'], f['delta_low_ci_high'], cur, True)}, at {f['high']} by "
                 f"{format_value(m, f['delta_high'], cur, True)} "
                 f"{format_interval(m, f['delta_high_ci_low'], f['delta_high_ci_high'], cur, True)} against the "
                 f"baseline (swing {format_value(m, f['swing'], cur, True).lstrip('+')})."]
            if f.get("runner_up"):
                s.append(f"Next: {f['runner_up']} (swing {format_value(m, f['runner_up_swing'], cur, True).lstrip('+')}).")
            paras.append(s)
        return paras
    if d.get("constraints") and not d.get("options"):
        paras.append([f"No point meets {' and '.join(d['constraints'])} at the stated confidence, so there is "
                      "nothing to recommend: more replications narrow the bounds, or the target lies beyond the grid."])
    elif d.get("constraints"):
        ex = d.get("excluded") or []
        paras.append([f"Only the points meeting {' and '.join(d['constraints'])} compete"
                      + (f"; left out: {', '.join(ex)}." if ex else ".")])
    for e in d.get("objectives", []):
        if "pairs" in e:
            paras.append(objective_paragraph(e, cur, d.get("reference"), hides, d.get("differs")))
        else:
            paras.append(single_paragraph(e, cur, d.get("single_option") or d.get("option")))
    return paras


__all__ = ["horizon_paragraph", "objective_paragraph", "payback_sentences", "sentences", "single_paragraph"]
