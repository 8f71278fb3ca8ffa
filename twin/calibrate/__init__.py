"""``twin calibrate``: a scenario of *your* cluster from the logs it already keeps.

Readers (each streams its file line by line, bounded memory, and stops with an
:class:`~twin.errors.InputError` naming the file, the line and the field on the first malformed line):

* :mod:`twin.calibrate.sacct` — Slurm accounting, ``sacct --parsable2``: jobs, attempts, states.
* :mod:`twin.calibrate.xid` — NVIDIA XID events from kernel-log lines (syslog, journald, ``dmesg -T``)
  mapped to part types and categories by a documented, overridable table.
* :mod:`twin.calibrate.tickets` — repair tickets / node events as CSV with named columns.

Fits (:mod:`twin.calibrate.fits`), the calibrated scenario (:mod:`twin.calibrate.scenario_out`), the
posterior-predictive check (:mod:`twin.calibrate.check`), example logs written from a simulation
(:mod:`twin.calibrate.synth`) and the command (:mod:`twin.calibrate.cli`).
"""
