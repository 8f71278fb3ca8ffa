"""Thermal and cooling model (model.md §3, §4): per-GPU RC state, throttling, trips, the cooling plant,
ambient, energy and PUE, and optional temperature-accelerated ageing (§2). Event-driven throughout: no
time step.

The component (``component.Thermal``, the scenario's ``cooling`` section) is built from rooms, one
module each; a new cooling mechanism goes into the room it belongs to, or a new one:

* ``gpu``: GPU state and crossings (``GpuState``). Arrays over all thermal units hold each unit's
  temperature at its last update, its steady state and time constant; an update of a set of nodes is
  one vector operation (``_update_now``, the hot path) that schedules only the earliest threshold
  crossing of the cluster. **Throttling**: a GPU whose demanded power would settle above
  ``slowdown_c`` runs at it until it reaches ``slowdown_c`` (a scheduled crossing), then caps its power
  at max(P_min, (slowdown_c − T_in)/R) and slows to ((P_cap − P_idle)/(P_d − P_idle))^α; a capped GPU
  whose steady state at P_min lies above ``shutdown_c`` trips its node at the crossing time. A node's
  speed (the 'thermal' speed cap) is its slowest GPU's. Also the histogram, trace and the busy /
  capped / throughput integrals.
* ``trips``: trips and restarts (``Trips``; cause ``thermal_trip`` on the cluster, reason
  ``gpu_shutdown``, ``inlet`` or ``no_fan``): a node comes back ``reboot_h`` after its cooling is
  restored and its air zone could carry it at full load.
* ``air``: air zones and CRAH units, the quantised held inlet, node fans (``AirRooms``).
* ``liquid``: liquid loops, CDUs and pumps (``LiquidLoops``).
* ``leaks``: node leaks (detection that isolates the rack, damage that destroys nodes) and loop-wide CDU or
  manifold leaks (``Leaks``).
* ``replay``: the deferred-load replay of cool nodes' load changes (``DeferredReplay``).
* ``ageing``: temperature-accelerated ageing of part populations (``Ageing``).
* ``energy``: facility energy, cooling power and PUE (``EnergyPue``).
* ``powered``: what the plant (``chillers``, a component of its own fed by the power chain) does to the
  rooms: CRAH units and CDUs it takes out of service, the chilled-water supply offset (``PlantLink``).
* ``fast``: the ``twin.physics.thermal`` equations in the forms the hot paths evaluate, each pinned to
  its physics function by ``tests/test_cooling_fast.py``.

The rooms are mixins over one object (see ``component``): they share its arrays, so the hot path
reads them with plain attribute lookups. ``state.CoolingState`` declares every attribute under the room
that owns it, and the methods rooms call on each other (declarations only, for readers and mypy). **Thermal units**: with identical GPUs (``r_sigma`` 0) one
array element stands for a node's g GPUs (same equations, g times fewer elements); with a spread, one
element per GPU.
"""
