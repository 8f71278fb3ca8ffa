"""How the reports print a number (shared by the report builders and their figure modules)."""

from __future__ import annotations

import math


def fmt(x: float) -> str:
    """Six significant digits; an en dash for a missing value."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return f"{x:.6g}"
