"""The compiled kernels imported at their first use (issue 41): a run whose model calls no kernel (no thermal
model, fans or caps: ``scenarios/baseline.yaml``, ``pretrain-16k``, ``mixed-1k``) never imports numba (~0.2 s
of CPU a process).

A model module names a kernel module or a kernel through a stand-in made here from its own globals, e.g.
``kernels_events = kernels_lazy.module("twin.kernels_events", globals(), "kernels_events")`` or
``any_lt = kernels_lazy.function("twin.kernels_events", "any_lt", globals())``. The first attribute read or
call imports the kernel module (which imports :mod:`twin.kernels` first, for its cache folder) and puts the
real module or function into that global in place of the stand-in, so every later use looks up the compiled
function directly, as an import at the top of the module would have: no indirection after the first.
No numba here: the stand-ins are plain Python.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["module", "function"]


class _Module:
    """Stand-in for a kernel module in a model module's globals (see the module docstring)."""

    __slots__ = ("_name", "_ns", "_key")

    def __init__(self, name: str, ns: dict[str, Any], key: str) -> None:
        self._name, self._ns, self._key = name, ns, key

    def __getattr__(self, attr: str) -> Any:  # (only for names the stand-in lacks: every kernel)
        mod = importlib.import_module(self._name)
        if self._ns.get(self._key) is self:
            self._ns[self._key] = mod
        return getattr(mod, attr)


class _Function:
    """Stand-in for a kernel imported by name into a model module's globals (see the module docstring)."""

    __slots__ = ("_name", "_attr", "_ns", "_key")

    def __init__(self, name: str, attr: str, ns: dict[str, Any], key: str) -> None:
        self._name, self._attr, self._ns, self._key = name, attr, ns, key

    def __call__(self, *args: Any) -> Any:
        fn = getattr(importlib.import_module(self._name), self._attr)
        if self._ns.get(self._key) is self:
            self._ns[self._key] = fn
        return fn(*args)


def module(name: str, ns: dict[str, Any], key: str) -> Any:
    """A stand-in for the kernel module ``name`` (``twin.kernels…``) bound to global ``key`` of ``ns``."""
    return _Module(name, ns, key)


def function(name: str, attr: str, ns: dict[str, Any], key: str | None = None) -> Any:
    """A stand-in for kernel ``attr`` of module ``name`` bound to global ``key`` (default ``attr``) of ``ns``."""
    return _Function(name, attr, ns, attr if key is None else key)
