"""The scenario's validation errors in the user's words (issue 39): pydantic's errors as one line per field path
and what is allowed there (the keys a mapping takes, the nearest spelling of an unknown key, a distribution's
parameters), and numbers no scenario needs (too large, not finite) found before validation. Used by
:func:`twin.scenario.loader.validate_doc`."""

from __future__ import annotations

import difflib
import math
import types
from typing import Annotated, Any, Literal, Sequence, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from twin.scenario.rounds import split_errors
from twin.scenario.schema import Scenario
from twin.scenario.slips import slip

_DIST_TAGS = {"exponential", "weibull", "lognormal", "fixed", "empirical"}
"""Discriminator tags pydantic inserts in error locations of distribution unions."""


def _alternatives(tp: Any) -> list[Any]:
    """The types a field annotation allows: ``Annotated``, ``Optional`` and unions unwrapped."""
    origin = get_origin(tp)
    if origin is Annotated:
        return _alternatives(get_args(tp)[0])
    if origin in (Union, types.UnionType):
        return [a for arg in get_args(tp) for a in _alternatives(arg)]
    return [tp]


def _discriminator_tags(model: type[BaseModel]) -> set[str]:
    """The values of a model's ``Literal`` fields (a distribution's ``dist: exponential``): pydantic puts
    the tag of a discriminated union in an error's location."""
    tags: set[str] = set()
    for f in model.model_fields.values():
        for alt in _alternatives(f.annotation):
            if get_origin(alt) is Literal:
                tags |= {str(a) for a in get_args(alt)}
    return tags


def keys_models(loc: Sequence[Any]) -> list[type[BaseModel]]:
    """The schema models a scenario mapping at ``loc`` (a pydantic error location) may be: one, or
    the alternatives of a union (a distribution); empty when ``loc`` does not lead to a model."""
    current: list[Any] = [Scenario]
    for key in loc:
        k = str(key)
        models = [t for t in current if isinstance(t, type) and issubclass(t, BaseModel)]
        tagged = [m for m in models if k in _discriminator_tags(m) and k not in m.model_fields]
        if tagged:  # a union's tag: narrow to its model, same level
            current = tagged
            continue
        nxt: list[Any] = []
        for t in current:
            if isinstance(t, type) and issubclass(t, BaseModel):
                f = t.model_fields.get(k) or next((f for f in t.model_fields.values() if f.alias == k), None)
                if f is not None:
                    nxt += _alternatives(f.annotation)
            elif get_origin(t) in (dict, list, tuple):  # a mapping's key or a list's index
                args = get_args(t)
                if args:
                    nxt += _alternatives(args[-1])
        current = nxt
        if not current:
            return []
    return [t for t in current if isinstance(t, type) and issubclass(t, BaseModel)]


def keys_at(loc: Sequence[Any]) -> list[str]:
    """The keys a scenario mapping at ``loc`` (a pydantic error location, without its last element)
    accepts: the field names and aliases of the models there (and the ``mtbf_h`` shorthand where a
    distribution is allowed); empty when the location does not lead to a model."""
    from twin.scenario.distributions import _Dist

    names: list[str] = []
    for t in keys_models(loc):
        names += [f.alias or n for n, f in t.model_fields.items()]
        if issubclass(t, _Dist):
            names.append("mtbf_h")
    return list(dict.fromkeys(names))


def unknown_key_message(loc: Sequence[Any]) -> str:
    """``unknown key; did you mean X?`` with the nearest key allowed at that place (difflib), else
    the keys allowed there (a short list) or the generic advice."""
    key = str(loc[-1]) if loc else ""
    allowed = keys_at(loc[:-1])
    near = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    if not near:  # a different case or separator (mtbfH, mtbf-h) counts as near too
        folded = {a.lower().replace("_", ""): a for a in allowed}
        hit = folded.get(key.lower().replace("_", "").replace("-", ""))
        near = [hit] if hit else []
    if near:
        return f"unknown key; did you mean {near[0]}?"
    if allowed and len(allowed) <= 12:
        return f"unknown key; allowed here: {', '.join(allowed)}"
    return "unknown key (not allowed here; check the spelling)"


def format_error(err: Any) -> tuple[str, str]:
    """One pydantic error (an item of ``ValidationError.errors()``) as (field path, message)."""
    raw_loc = list(err["loc"])
    loc = [str(x) for x in raw_loc if str(x) not in _DIST_TAGS]
    # drop discriminator tags pydantic inserts for unions (e.g. 'exponential')
    msg = str(err["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if msg.startswith("@"):
        field, _, rest = msg[1:].partition(": ")
        if field.startswith(("maintenance.", "cluster.", "workload.")):
            loc = field.split(".")
        else:
            loc = loc + field.split(".")
        msg = rest
    elif err["type"] in ("union_tag_invalid",):
        ctx = err.get("ctx", {})
        msg = f"unknown distribution {ctx.get('tag')!r}; allowed: {ctx.get('expected_tags')}"
    elif err["type"] == "extra_forbidden":
        msg = unknown_key_message(raw_loc)
    elif err["type"] == "union_tag_not_found" and isinstance(err.get("input"), dict):
        # a mapping without `dist` that is not the shorthand: name a misspelt key (`mtbf`) if there is one
        allowed = set(keys_at(raw_loc))
        unknown = [str(k) for k in err["input"] if str(k) not in allowed]
        if unknown:
            return ".".join(loc + [unknown[0]]), unknown_key_message([*raw_loc, unknown[0]])
        tags = sorted({t for m in keys_models(raw_loc) for t in _discriminator_tags(m)})
        msg = (f"no `dist` given: add dist: {' | '.join(tags)}, or use the shorthand {{mtbf_h: X}}" if tags
               else "no `dist` given")
    elif err["type"] == "missing":
        msg = "required field is missing"
    else:
        inp = err.get("input")
        if not isinstance(inp, (dict, list)):
            shown = repr(inp)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            msg = f"{msg}, got {shown}"
            hint = slip(".".join(loc), inp)
            if hint is not None:
                msg += f" ({hint})"
    return ".".join(loc), msg


def format_validation_errors(exc: ValidationError) -> list[tuple[str, str]]:
    """Every error of a pydantic ValidationError as (field path, message), in the order pydantic
    found them, one per field path (a union reports each alternative's failure at the same place)."""
    out: dict[str, str] = {}
    for err in split_errors(exc.errors(include_url=False)):  # several checks across fields: one line each
        field, msg = format_error(err)
        out.setdefault(field, msg)
    return list(out.items())


MAX_ABS_INT = 2**63
"""Integers in a scenario are below 2^63 in magnitude (no count, seed or size needs more; bigger
ones would overflow float arithmetic in the validators and the model)."""


def _bad_number(doc: Any) -> tuple[str, str] | None:
    """(field path, problem) of the first number no scenario field accepts: an integer of at least
    :data:`MAX_ABS_INT` in magnitude, or a NaN or infinite float (the scenario hash is canonical
    JSON, which has neither)."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        obj, where = stack.pop()
        if isinstance(obj, int) and not isinstance(obj, bool) and abs(obj) >= MAX_ABS_INT:
            digits = len(str(abs(obj))) if obj.bit_length() < 14000 else "thousands of"
            return where, f"an integer of {digits} digits; scenario integers must be below 2^63 in magnitude"
        if isinstance(obj, float) and not math.isfinite(obj):
            return where, f"must be a finite number, got {obj}"
        if isinstance(obj, dict):
            stack.extend((v, f"{where}.{k}" if where else str(k)) for k, v in obj.items())
        elif isinstance(obj, (list, tuple)):
            stack.extend((v, f"{where}.{i}") for i, v in enumerate(obj))
    return None
