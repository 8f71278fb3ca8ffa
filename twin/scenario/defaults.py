"""Partial sections merged over a field's own default.

Some fields default to an instance that differs from its model's class defaults: a PDU's repair
takes 2 h where a power element's repair otherwise takes 8 h, an optic is hot-swapped in 1 h where a
fabric part's repair otherwise takes 4 h with the node drained. A scenario that names only part of
such a section (``pdu: {repair: {crew: electrical}}``) must keep the rest of *that field's* default,
not fall back to the class defaults: :func:`over_default` makes it so, recursively into sub-sections
that are themselves set in the default. A distribution is always replaced whole (its fields belong to
its kind).
"""

from __future__ import annotations

from typing import Any, Callable

from pydantic import BaseModel, BeforeValidator

from twin.scenario.distributions import _Dist


def merge_over(default: BaseModel, given: dict[str, Any]) -> dict[str, Any]:
    """``given`` (a mapping from the scenario) over the fields ``default`` sets explicitly: a key given
    replaces the default's, except that a mapping given for a sub-section the default sets (not a
    distribution) is merged over that sub-section the same way."""
    out: dict[str, Any] = {k: getattr(default, k) for k in default.model_fields_set}
    for k, v in given.items():
        d = out.get(k)
        if isinstance(v, dict) and isinstance(d, BaseModel) and not isinstance(d, _Dist):
            out[k] = merge_over(d, v)
        else:
            out[k] = v
    return out


def over_default(factory: Callable[[], BaseModel]) -> BeforeValidator:
    """A validator for a field whose default is ``factory()``: a mapping given for the field is merged
    over that default (see :func:`merge_over`); anything else (null, a model) passes unchanged."""

    def merge(v: Any) -> Any:
        return merge_over(factory(), v) if isinstance(v, dict) else v

    return BeforeValidator(merge)


def derive(model: BaseModel, **values: Any) -> None:
    """Set fields that a validator derives from others (a job's work hours from its training block, a
    room's thermal resistance from its units), during validation only: the one place a frozen scenario
    is written, so that a derived value is visible in the resolved scenario like any other."""
    for name, value in values.items():
        object.__setattr__(model, name, value)


def moved(data: Any, where: str, keys: dict[str, str]) -> Any:
    """Refuse keys that moved elsewhere in the schema, naming the new place (a before-validator's body).

    ``where`` is the section's path (``power``), ``keys`` maps an old key to its new path."""
    if isinstance(data, dict):
        for old, new in keys.items():
            if old in data:
                raise ValueError(f"@{old}: moved to {new} (declared once there); remove {where}.{old}")
    return data
