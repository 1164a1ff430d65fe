"""Hypothesis profiles for the fuzz tests. CI runs ``ci``: a fixed number of examples drawn
the same way every run (derandomized, no example database), a few seconds per test. For a
longer local hunt: ``PYSCHED_FUZZ=long python3 -m pytest tests/fuzz`` (or ``make fuzz``), which
draws new examples each run; a failure prints the example to add as a regression case."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile("ci", max_examples=40, derandomize=True, database=None, deadline=None,
                          suppress_health_check=_QUIET, print_blob=True)
settings.register_profile("long", max_examples=2000, deadline=None, suppress_health_check=_QUIET, print_blob=True)
settings.load_profile(os.environ.get("PYSCHED_FUZZ", "ci"))
