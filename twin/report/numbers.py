"""How the reports print a number (shared by the report builders and their figure modules)."""

from __future__ import annotations

import math

from twin.report.metrics import plain


def fmt(x: float) -> str:
    """Six significant digits without an exponent (thousands separated); an en dash for a missing
    value. Only magnitudes below 10⁻⁴ (small probabilities, rates) keep scientific notation."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x != 0 and abs(x) < 1e-4:
        return f"{x:.3g}"
    return plain(float(x), 6)
