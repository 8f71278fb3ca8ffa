"""Fits of GPU telemetry to the twin's thermal model (model.md §3: at steady state a GPU runs at
T = T_in + R·P, R its junction-to-inlet resistance, T_in the air or coolant at its inlet).

* **Per GPU**: the Theil–Sen line (``scipy.stats.theilslopes``, robust to transients after a load change,
  integer temperatures and throttled samples) of y on power P, y the temperature less the node's inlet
  reading when an inlet series is given, else the temperature: the slope is the GPU's R (°C/W), the
  intercept its offset (°C: its inlet above the node's reading, or its inlet itself); the slope's
  standard error (the residuals' spread over the spread of power) is its measurement error. A GPU needs ``MIN_POINTS`` points spanning ``MIN_SPAN_W`` of power.
* **Outliers**: GPUs whose log R lies more than ``Z_OUTLIER`` robust z-scores (median and 1.4826·MAD of
  log R) from the fleet's: listed (a failing fan, a dried thermal interface: a maintenance finding in
  itself) and left out of the spread, which describes healthy GPUs of one model.
* **Across GPUs** (the scenario's lognormal ``R_i = R_med·exp(σ·z_i)``): R_med = exp(mean log R_i);
  σ² = var(log R_i) − mean(se_i²), the spread less the measurement error of each GPU's slope (se_i of
  log R_i), 0 when negative. Intervals by a bootstrap over GPUs (``BOOTSTRAP`` resamples, seeded):
  percentile for R_med, BCa (``scipy.stats.bootstrap``) for σ.
* **Chassis preheat** (``cooling.air.slot_preheat_c``): per node, the mean offset of its downstream
  GPUs (the second half of its indices, as the twin numbers slots along the airflow) less that of its
  upstream ones; the median over nodes, bootstrap over nodes.
* **Throttle rate**: the share of GPU-time with a thermal clock event (reader: mask bits 0x20, 0x40).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from twin.calibrate.telemetry import Telemetry
from twin.errors import InputError

MIN_POINTS = 20
MIN_SPAN_W = 100.0
Z_OUTLIER = 3.5
BOOTSTRAP = 2000
QUANT_SD_C = 1.0 / math.sqrt(12.0)
"""Floor of a GPU's residual spread, °C: the rounding of whole-degree readings."""


@dataclass
class GpuFit:
    key: str
    host: str
    index: str
    serial: str
    r_c_per_w: float
    r_lo: float
    r_hi: float
    offset_c: float
    points: int
    z: float = 0.0


@dataclass
class ThermalFit:
    """What the telemetry says about the thermal model, with intervals (``level``)."""

    gpus: list[GpuFit]
    outliers: list[GpuFit]
    unfitted: list[tuple[str, str]]
    """(GPU, why) of GPUs without a fit."""
    r_median_c_per_w: float
    r_median_ci: tuple[float, float]
    r_sigma: float
    r_sigma_ci: tuple[float, float]
    noise_sd: float
    """Root-mean-square measurement error of log R_i (subtracted from the spread)."""
    inlet: bool
    """Whether the fits are against an inlet series."""
    preheat_c: float | None
    preheat_ci: tuple[float, float] | None
    preheat_nodes: int
    throttle_share: float
    throttle_ci: tuple[float, float]
    throttle_gpu_samples: float
    temp_quantiles: dict[float, float]
    """Quantiles of every sampled temperature (°C)."""
    loaded_w: float
    """Power at or above which a sample is *loaded* (W: half the fleet's 99th percentile of power)."""
    loaded_throttle_share: float
    loaded_quantiles: dict[float, float]
    """Quantiles of the loaded samples' temperature (°C): where the spread between GPUs shows."""
    interval_s: float
    """Median sampling interval of a GPU (s)."""
    first_s: float
    last_s: float
    samples: int
    level: float = 0.95
    notes: list[str] = field(default_factory=list)

    @property
    def days(self) -> float:
        return (self.last_s - self.first_s) / 86400.0


QUANTILES = (0.5, 0.9, 0.99)
"""Quantiles of every sampled temperature (reported)."""
LOADED_QUANTILES = (0.1, 0.5, 0.9)
"""Quantiles of the loaded samples' temperature (compared by the predictive check)."""


def sampling_interval_s(tel: Telemetry) -> float:
    """Median over GPUs of their mean time between samples (s; 60 without a GPU sampled twice)."""
    steps = [(g.last_s - g.first_s) / (g.samples - 1) for g in tel.gpus.values() if g.samples > 1]
    return float(np.median(steps)) if steps else 60.0


def fit_gpu(power_w: np.ndarray, y_c: np.ndarray, level: float = 0.95) -> tuple[float, float, float, float]:
    """Theil–Sen slope of ``y_c`` on ``power_w``, its interval (slope ± z·se, se from the residuals' spread
    within their central 90 % over the spread of power: Theil–Sen's own interval is undefined with the
    many ties of whole-degree readings at a few power levels) and the intercept."""
    with np.errstate(invalid="ignore"):  # (its own interval, unused, is NaN with many ties)
        res = stats.theilslopes(y_c, power_w)
    slope, icpt = float(res.slope), float(res.intercept)
    resid = y_c - (icpt + slope * power_w)
    lo_q, hi_q = np.quantile(resid, [0.05, 0.95])
    core = resid[(resid >= lo_q) & (resid <= hi_q)]
    s = float(np.std(core, ddof=1)) if core.size > 2 else 0.0
    s = max(s, QUANT_SD_C)
    sxx = float(np.sum((power_w - power_w.mean()) ** 2))
    se = s / math.sqrt(sxx) if sxx > 0 else math.inf
    z = float(stats.norm.ppf(0.5 + level / 2))
    return slope, slope - z * se, slope + z * se, icpt


def spread(log_r: np.ndarray, se: np.ndarray) -> tuple[float, float]:
    """(R_med, σ) of log resistances and their standard errors (see the module doc)."""
    mu = float(np.mean(log_r))
    var = float(np.var(log_r, ddof=1)) - float(np.mean(se ** 2)) if len(log_r) > 1 else 0.0
    return math.exp(mu), math.sqrt(max(var, 0.0))


def fit_thermal(tel: Telemetry, level: float = 0.95, seed: int = 0, slots: int | None = None) -> ThermalFit:
    """Every fit of the module doc from the accumulated telemetry. ``slots``: GPUs per node (the
    base scenario's; the downstream half is ``index >= slots // 2``); None: the most indices a host shows."""
    z_level = float(stats.norm.ppf(0.5 + level / 2))
    fits: list[GpuFit] = []
    unfitted: list[tuple[str, str]] = []
    use_inlet = any(not math.isnan(p[2]) for g in tel.gpus.values() for p in g.points[:50])
    for key, g in sorted(tel.gpus.items()):
        pts = np.asarray(g.points, dtype=float).reshape(-1, 3)
        if use_inlet:
            pts = pts[~np.isnan(pts[:, 2])]
        if len(pts) < MIN_POINTS:
            unfitted.append((key, f"{len(pts)} points with temperature and power{' and inlet' if use_inlet else ''}"
                             f" (needs {MIN_POINTS})"))
            continue
        span = float(np.ptp(pts[:, 0]))
        if span < MIN_SPAN_W:
            unfitted.append((key, f"power spans {span:.0f} W (needs {MIN_SPAN_W:.0f}: a GPU at one load shows no "
                             "slope)"))
            continue
        y = pts[:, 1] - pts[:, 2] if use_inlet else pts[:, 1]
        r, lo, hi, off = fit_gpu(pts[:, 0], y, level)
        if not r > 0:
            unfitted.append((key, f"slope {r:.3g} °C/W is not positive"))
            continue
        fits.append(GpuFit(key, g.host, g.index, g.serial, r, lo, hi, off, len(pts)))
    notes: list[str] = []
    if len(fits) < 3:
        raise InputError("telemetry", "", f"{len(fits)} GPUs with a fit (needs 3)" + (
            ": " + "; ".join(f"{k}: {w}" for k, w in unfitted[:3]) if unfitted else ""))
    logr = np.log([f.r_c_per_w for f in fits])
    med = float(np.median(logr))
    mad = float(np.median(np.abs(logr - med))) * 1.4826
    for f, lr in zip(fits, logr):
        f.z = (float(lr) - med) / mad if mad > 0 else 0.0
    keep = [f for f in fits if abs(f.z) <= Z_OUTLIER]
    outliers = sorted((f for f in fits if abs(f.z) > Z_OUTLIER), key=lambda f: -abs(f.z))
    lr = np.log([f.r_c_per_w for f in keep])
    se = np.array([(f.r_hi - f.r_lo) / (2 * z_level) / f.r_c_per_w for f in keep])
    r_med, sigma = spread(lr, se)
    rng = np.random.default_rng(seed)
    n = len(keep)
    idx = rng.integers(0, n, size=(BOOTSTRAP, n))
    blr, bse = lr[idx], se[idx]
    b_med = np.exp(blr.mean(axis=1))
    a = (1 - level) / 2
    med_ci = (float(np.quantile(b_med, a)), float(np.quantile(b_med, 1 - a)))

    def sig(x: np.ndarray, e: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.sqrt(np.clip(x.var(axis=axis, ddof=1) - (e ** 2).mean(axis=axis), 0.0, None))

    # the spread's interval: BCa (a percentile interval of a standard deviation is too narrow)
    with np.errstate(invalid="ignore", divide="ignore"):
        bs = stats.bootstrap((lr, se), sig, paired=True, vectorized=True, n_resamples=BOOTSTRAP,
                             confidence_level=level, method="BCa", random_state=rng)
    sig_ci = (float(bs.confidence_interval.low), float(bs.confidence_interval.high))
    if not all(math.isfinite(x) for x in sig_ci):  # degenerate (every resample 0): the percentile interval
        b_sig = sig(blr, bse, axis=1)
        sig_ci = (float(np.quantile(b_sig, a)), float(np.quantile(b_sig, 1 - a)))

    # ---- chassis preheat: downstream less upstream offsets within a node ------------------------
    by_host: dict[str, list[GpuFit]] = {}
    for f in keep:
        by_host.setdefault(f.host, []).append(f)
    per_node = slots or max((len(v) for v in by_host.values()), default=1)
    diffs = []
    for fs in by_host.values():
        up = [f.offset_c for f in fs if f.index.isdigit() and int(f.index) < per_node // 2]
        down = [f.offset_c for f in fs if f.index.isdigit() and int(f.index) >= per_node // 2]
        if up and down:
            diffs.append(float(np.mean(down) - np.mean(up)))
    pre = pre_ci = None
    if len(diffs) >= 3 and per_node > 1:
        d = np.asarray(diffs)
        pre = float(np.median(d))
        bd = np.median(d[rng.integers(0, len(d), size=(BOOTSTRAP, len(d)))], axis=1)
        pre_ci = (float(np.quantile(bd, a)), float(np.quantile(bd, 1 - a)))

    # ---- throttling -----------------------------------------------------------------------------
    hot, tot = tel.thermal_share()
    share = hot / tot if tot > 0 else math.nan
    if tot > 0:  # GPU-by-GPU bootstrap of the share (samples of one GPU are not independent)
        per = [(g.thermal, g.with_reasons) for g in tel.gpus.values() if g.with_reasons]
        if per:
            h = np.array([p[0] for p in per], dtype=float)
            t = np.array([p[1] for p in per], dtype=float)
            bi = rng.integers(0, len(per), size=(BOOTSTRAP, len(per)))
            bs = h[bi].sum(axis=1) / t[bi].sum(axis=1)
            thr_ci = (float(np.quantile(bs, a)), float(np.quantile(bs, 1 - a)))
        else:
            thr_ci = (math.nan, math.nan)
    else:
        thr_ci = (math.nan, math.nan)
        notes.append("no clock-event reasons in the telemetry: no observed throttle rate")
    if outliers:
        notes.append(f"{len(outliers)} GPUs with an outlying thermal resistance (|robust z| > {Z_OUTLIER}) are left "
                     "out of the spread: check their fans and thermal interface")
    loaded_w = tel.loaded_threshold_w()
    l_share, l_q = tel.loaded(loaded_w, LOADED_QUANTILES)
    return ThermalFit(keep, outliers, unfitted, r_med, med_ci, sigma, sig_ci,
                      float(math.sqrt(np.mean(se ** 2))) if len(se) else math.nan, use_inlet, pre, pre_ci,
                      len(diffs), share, thr_ci, tot,
                      {q: tel.temperature_quantile(q) for q in QUANTILES}, loaded_w, l_share, l_q,
                      sampling_interval_s(tel), tel.first_s, tel.last_s,
                      sum(g.samples for g in tel.gpus.values()), level, notes)


def target(base: Any) -> tuple[str, str, bool]:
    """Where a fitted resistance goes in the ``base`` scenario (see ``Calibration.thermal_target``)."""
    c = base.cooling
    if c is None or not c.thermal:
        return ("", "", False)
    on_liquid = c.type in ("liquid", "hybrid")
    return (c.type, "r_cold_plate_c_per_w" if on_liquid else "r_air_c_per_w", c.type == "air")


def _ci(ci: tuple[float, float] | None, digits: int = 3) -> str:
    return "" if ci is None else f"[{ci[0]:.{digits}g}, {ci[1]:.{digits}g}]"


def thermal_yaml(th: ThermalFit, where: tuple[str, str, bool]) -> list[str]:
    """The ``cooling`` lines of the calibrated scenario (nothing when the base has no thermal model)."""
    ctype, field_name, air = where
    if not ctype:
        return ["# GPU telemetry: the base scenario has no thermal model (no cooling section, or thermal: false); "
                "the fits are in the report, not written"]
    src = f"GPU telemetry of {len(th.gpus) + len(th.outliers)} GPUs over {th.days:.1f} days"
    rel = "the node's inlet reading" if th.inlet else "its own inlet (no inlet series)"
    lv = f"{th.level:.0%}"
    out = ["cooling:", f"  type: {ctype}", "  gpu:",
           f"    {field_name}: {th.r_median_c_per_w:.4g}   # {src}: median of the per-GPU Theil-Sen slopes of "
           f"temperature above {rel} on power, {len(th.gpus)} GPUs ({len(th.outliers)} outliers left out); "
           f"bootstrap over GPUs {lv} {_ci(th.r_median_ci, 4)} °C/W",
           f"    r_sigma: {th.r_sigma:.3g}   # {src}: SD of log R between GPUs less each slope's measurement error "
           f"(RMS {th.noise_sd:.2g}); bootstrap over GPUs {lv} {_ci(th.r_sigma_ci)}"]
    if air and th.preheat_c is not None:
        out += ["  air:",
                f"    slot_preheat_c: {max(th.preheat_c, 0.0):.3g}   # {src}: offset of the downstream half of a "
                f"node's GPU indices above the upstream half, median of {th.preheat_nodes} nodes; bootstrap over "
                f"nodes {lv} {_ci(th.preheat_ci)} °C"]
    return out


def thermal_logged(th: ThermalFit) -> list[str]:
    """Comment lines of what the telemetry logged that is not a parameter."""
    out = []
    if not math.isnan(th.throttle_share):
        out.append(f"#   GPU-time with a thermal clock event: {100 * th.throttle_share:.3g} % "
                   f"{_ci(tuple(100 * x for x in th.throttle_ci))} (bootstrap over GPUs; "  # type: ignore[arg-type]
                   f"{th.throttle_gpu_samples:.0f} GPU samples)")
    out.append("#   GPU temperature quantiles: " + ", ".join(f"p{round(100 * q)} {v:.1f} °C"
                                                          for q, v in th.temp_quantiles.items())
               + f"; of the samples at >= {th.loaded_w:.0f} W: " + ", ".join(
                   f"p{round(100 * q)} {v:.1f} °C" for q, v in th.loaded_quantiles.items())
               + ("" if math.isnan(th.loaded_throttle_share) else
                  f", {100 * th.loaded_throttle_share:.3g} % with a thermal clock event"))
    if th.outliers:
        out.append("#   GPUs with an outlying thermal resistance (check fans and thermal interface): "
                   + ", ".join(f"{f.key} ({f.r_c_per_w:.3g} °C/W, z {f.z:+.1f})" for f in th.outliers[:20]))
    return out


def thermal_markdown(th: ThermalFit, where: tuple[str, str, bool]) -> list[str]:
    """The report's section on the telemetry."""
    lv = f"{th.level:.0%}"
    field_name = where[1] or "r_air_c_per_w"
    rel = "temperature less the node's inlet reading" if th.inlet else "temperature (no inlet series)"
    out = ["", "## GPU thermal resistance (telemetry)", "",
           f"{th.samples} samples of {len(th.gpus) + len(th.outliers) + len(th.unfitted)} GPUs over {th.days:.2f} "
           f"days. Per GPU, the Theil–Sen slope of {rel} on power is its thermal resistance R; across GPUs, "
           f"log R is normal (the scenario's lognormal spread). Intervals: {lv}, bootstrap over GPUs.", "",
           "| quantity | fitted | interval | scenario field |", "|---|---:|---|---|",
           f"| median R (°C/W) | {th.r_median_c_per_w:.4g} | {_ci(th.r_median_ci, 4)} | cooling.gpu.{field_name} |",
           f"| spread σ of log R | {th.r_sigma:.3g} | {_ci(th.r_sigma_ci)} | cooling.gpu.r_sigma |",
           f"| measurement error of log R (RMS, subtracted) | {th.noise_sd:.2g} | | |"]
    if th.preheat_c is not None:
        out.append(f"| chassis preheat, downstream − upstream GPUs (°C) | {th.preheat_c:.3g} | {_ci(th.preheat_ci)} | "
                   "cooling.air.slot_preheat_c |")
    if not math.isnan(th.throttle_share):
        out.append(f"| GPU-time with a thermal clock event (%) | {100 * th.throttle_share:.3g} | "
                   f"{_ci(tuple(100 * x for x in th.throttle_ci))} | (compared by the check) |")  # type: ignore[arg-type]
    for q, v in th.temp_quantiles.items():
        out.append(f"| GPU temperature p{round(100 * q)} (°C) | {v:.1f} | | |")
    if not math.isnan(th.loaded_throttle_share):
        out.append(f"| loaded samples (≥ {th.loaded_w:.0f} W) with a thermal clock event (%) | "
                   f"{100 * th.loaded_throttle_share:.3g} | | (compared by the check) |")
    for q, v in th.loaded_quantiles.items():
        out.append(f"| temperature of the loaded samples p{round(100 * q)} (°C) | {v:.1f} | | (compared by the check) |")
    if th.outliers:
        out += ["", f"GPUs with an outlying resistance (|robust z| > {Z_OUTLIER}, left out of the spread; check "
                "their fans and thermal interface):", "", "| GPU | serial | R (°C/W) | interval | robust z |",
                "|---|---|---:|---|---:|"]
        out += [f"| {f.key} | {f.serial or '—'} | {f.r_c_per_w:.4g} | [{f.r_lo:.4g}, {f.r_hi:.4g}] | {f.z:+.1f} |"
                for f in th.outliers]
    if th.unfitted:
        out += ["", f"GPUs without a fit: {len(th.unfitted)} (" + "; ".join(f"{k}: {w}" for k, w in th.unfitted[:5])
                + (" ..." if len(th.unfitted) > 5 else "") + ")."]
    return out
