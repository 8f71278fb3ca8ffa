"""Pure physics and closed forms of the twin (model.md §3, §5, §6, §9).

No simulation clock lives here: every function is a plain (numpy-vectorised where natural)
formula with its units in its argument names, so the simulator, the validation suite and the
notebooks share one definition of each equation. Submodules: :mod:`twin.physics.thermal`,
:mod:`twin.physics.power`, :mod:`twin.physics.plant` (the cooling plant), :mod:`twin.physics.steptime`,
:mod:`twin.physics.closed_forms`, :mod:`twin.physics.training`.
"""
