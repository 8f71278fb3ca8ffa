"""Every problem of a scenario in one report (issue 39, item 8).

A scenario is validated field by field (pydantic reports every field's error at once), then across
fields: a job that needs more nodes than are schedulable, a repair crew no pool provides, a spare
stock for no part. Two things used to split one file's problems over several reports:

* the checks across fields run only once every field is valid, so a file with a mistyped key and a
  job too large for its cluster reported the key, and the job only after the key was fixed;
* the checks across fields stopped at the first that failed.

:func:`run_all` runs every check across fields and raises one error naming each problem.
:func:`later_errors` runs them on a file whose fields are not all valid: it leaves out each invalid
value (a field's default takes its place; an object that then misses a required field is left out
as a whole, up to :data:`MAX_ROUNDS` times) and validates again. The problems found so, at fields
other than the left-out ones, are reported with the first ones, followed by a hint that names the
left-out fields, since a check that reads one of them may change when it is fixed.
:func:`with_more` adds a data file's problem (a missing ambient CSV) to the same report.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from twin.errors import InputError

MESSAGE_SEP = "\x1e"
"""Joins the messages of several failed checks in one ValueError (split again by the loader)."""
MAX_ROUNDS = 4
"""Times invalid values are left out before the checks across fields are given up on."""
_DIST_TAGS = {"exponential", "weibull", "lognormal", "fixed", "empirical"}


def run_all(checks: Iterable[Callable[[], None]]) -> None:
    """Run every check; raise one ValueError joining the messages of those that failed."""
    messages = []
    for check in checks:
        try:
            check()
        except ValueError as exc:
            messages.append(str(exc))
    if messages:
        raise ValueError(MESSAGE_SEP.join(messages))


def split_errors(errors: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """pydantic error items with a joined message (:func:`run_all`) as one item per message."""
    out = []
    for err in errors:
        msg = str(err.get("msg", ""))
        if MESSAGE_SEP in msg:
            head = "Value error, " if msg.startswith("Value error, ") else ""
            parts = msg[len(head):].split(MESSAGE_SEP)
            out += [{**err, "msg": head + part} for part in parts]
        else:
            out.append(err)
    return out


def _loc(err: dict[str, Any]) -> tuple[Any, ...]:
    """The error's location in the document (pydantic's union tags and validator names left out)."""
    return tuple(x for x in err["loc"] if not (isinstance(x, str) and (x in _DIST_TAGS or "[" in x)))


def _drop(doc: Any, loc: tuple[Any, ...]) -> bool:
    """Remove ``loc`` from ``doc`` (a mapping key; a list item's whole list is kept); True if removed."""
    here = doc
    for key in loc[:-1]:
        if isinstance(here, dict) and key in here:
            here = here[key]
        elif isinstance(here, list) and isinstance(key, int) and 0 <= key < len(here):
            here = here[key]
        else:
            return False
    if isinstance(here, dict) and loc and loc[-1] in here:
        del here[loc[-1]]
        return True
    return False


def _under(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """One location contains the other."""
    n = min(len(a), len(b))
    return tuple(map(str, a[:n])) == tuple(map(str, b[:n]))


def _touches(field: str, message: str, removed: Sequence[tuple[Any, ...]]) -> bool:
    """The problem is in the object a left-out value was in (its checks read that value: a count left
    out for its default makes ``required`` too large), or names what was left out (a part left out is
    then 'no such part' for its spares): it may be an effect of leaving it out."""
    parts = tuple(field.split("."))
    for r in removed:
        if _under(parts, r[:-1] if len(r) > 1 else r):  # the object it was in: its own checks read it
            return True
        last = str(r[-1])
        if last in parts or f"'{last}'" in message:
            return True
    return False


def later_errors(doc: dict[str, Any], errors: Sequence[dict[str, Any]],
                 validate: Callable[[dict[str, Any]], None],
                 fmt: Callable[[dict[str, Any]], tuple[str, str]]) -> tuple[list[tuple[str, str]], list[str]]:
    """(field, message) of the problems that the first round's ``errors`` kept from being checked,
    and the dotted fields left out to find them (none when nothing more was found). ``validate``
    raises pydantic's ValidationError; ``fmt`` gives an error item's (field, message) as the loader
    prints them."""
    from pydantic import ValidationError

    first = {fmt(e)[0] for e in errors}
    work = copy.deepcopy(doc)
    removed: list[tuple[Any, ...]] = []
    current = list(errors)
    found: dict[str, str] = {}
    for _ in range(MAX_ROUNDS):
        progress = False
        for err in current:
            loc = _loc(err)
            if err["type"] == "missing":
                loc = loc[:-1]  # the object that lacks a required field goes as a whole
            # a top-level section stays (the checks across sections need it)
            if len(loc) > 1 and not any(tuple(map(str, loc[:len(r)])) == tuple(map(str, r)) for r in removed) \
                    and _drop(work, loc):  # not inside what is already gone; an object around it may go
                removed = [r for r in removed if not _under(r, loc)] + [loc]
                progress = True
        if not progress:
            break
        try:
            validate(work)
            current = []
        except ValidationError as exc:
            current = split_errors(exc.errors(include_url=False))
        for err in current:
            field, message = fmt(err)
            if err["type"] != "missing" and field not in first and not _touches(field, message, removed):
                found.setdefault(field, message)
    return list(found.items()), ([".".join(str(x) for x in r) for r in removed] if found else [])


def with_more(exc: "InputError", check: Callable[[], None], files: Iterable[tuple[str, str]] = (),
              base_dir: Path | None = None, source: str = "") -> "InputError":
    """``exc`` with the scenario's data-file problems as more error lines of the same report: what
    ``check`` raises (a file outside the allowed folders, not text) and each ``file:`` (field, value)
    of ``files`` that is not a file under ``base_dir``."""
    from twin.errors import InputError, InputErrors

    more: list[InputError] = []
    try:
        check()
    except InputError as found:
        more += list(getattr(found, "errors", (found,)))
    if base_dir is not None:
        named = {e.field for e in more}
        more += [InputError(source, field, f"data file {value!r} not found (relative to {base_dir})")
                 for field, value in files if field not in named and not (base_dir / value).is_file()]
    if not more:
        return exc
    return InputErrors(list(getattr(exc, "errors", (exc,))) + more, exc.hints())


__all__ = ["MAX_ROUNDS", "MESSAGE_SEP", "later_errors", "run_all", "split_errors", "with_more"]
