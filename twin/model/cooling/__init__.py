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
* ``lazy``: silent slowdown crossings of per-GPU units (``LazyCrossings``).
* ``evaporative``: evaporative air units, their water supply and humidity (``EvaporativeAir``).
* ``replay``: the deferred-load replay of cool nodes' load changes (``DeferredReplay``).
* ``ageing``: temperature-accelerated ageing of part populations (``Ageing``).
* ``energy``: facility energy, cooling power and PUE (``EnergyPue``).
* ``powered``: what the plant (``chillers``, a component of its own fed by the power chain) does to the
  rooms: CRAH units and CDUs it takes out of service, the chilled-water supply offset (``PlantLink``).
* ``arrays``: what the rooms share (``CoolingParams``, ``CoolingArrays``).
* ``ports``: what each room offers the others (one protocol per room: the methods and state another room
  may use); the room modules import it, never each other.
* ``fast``: the ``twin.physics.thermal`` equations in the forms the hot paths evaluate, each pinned to
  its physics function by ``tests/test_cooling_fast.py``.

The rooms are objects, built by ``component.Thermal`` with explicit arguments: the parameters every room
reads (``arrays.CoolingParams``), the one record of arrays several rooms share (``arrays.CoolingArrays``:
per unit, per node, per zone and per loop), and the engine, cluster and IT power they use; ``Thermal``
gives each room the rooms it calls and wires the rooms to the bus. A room's own state stays on the room;
the hot paths bind the shared arrays to locals. **Thermal units**: with identical GPUs (``r_sigma`` 0) one
array element stands for a node's g GPUs (same equations, g times fewer elements); with a spread, one
element per GPU.
"""
