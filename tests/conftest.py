"""Test-session settings shared by every test module.

Hypothesis keeps its example database and caches under a ``.hypothesis`` folder of the current directory,
the repository when pytest runs from it. With the suite on several workers (pytest-xdist) a hypothesis test
on one worker could create that folder while a notebook test on another checks that running a notebook
leaves nothing new in the repository (tests/test_notebooks.py). Its home is a folder of the system's
temporary directory instead, the same for every worker.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis.configuration import set_hypothesis_home_dir

set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "twin-tests-hypothesis")
