"""Hypothesis profiles for `pytest fuzz/ --hypothesis-profile NAME`.

ci: small and derandomized, no example database (CI=true selects it); dev: the default for a
person at a terminal; long: large budgets for campaigns of minutes to hours.
"""
import os

from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                      HealthCheck.data_too_large])

settings.register_profile("ci", max_examples=5, stateful_step_count=20, derandomize=True, database=None, **_COMMON)
settings.register_profile("dev", max_examples=30, stateful_step_count=40, **_COMMON)
settings.register_profile("long", max_examples=5000, stateful_step_count=80, **_COMMON)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
