"""Test-run settings shared by every test module.

Hypothesis: locally every run draws new examples (and remembers failures in .hypothesis/); CI
(`HYPOTHESIS_PROFILE=ci`, set by .ci/run) draws the same examples every run, so a red CI run is
reproducible and never an accident of the draw, and it has no deadlines on a loaded 2-core machine.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
