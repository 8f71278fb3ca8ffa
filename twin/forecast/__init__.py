"""Time-to-train forecasts (``twin forecast``): from model size and tokens to a completion-date
distribution, the days lost by cause, and what-if levers under common random numbers.

Modules: :mod:`~twin.forecast.target` (the job followed and the replications' horizon; its
training arithmetic is :mod:`twin.physics.training`), :mod:`~twin.forecast.run` (one replication run
to completion, and the replications), :mod:`~twin.forecast.levers` (the what-if variants),
:mod:`~twin.forecast.report` (figures, HTML and Markdown), :mod:`~twin.forecast.cli`.
"""
