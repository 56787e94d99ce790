"""Hypothesis profiles for `pytest fuzz/ --hypothesis-profile NAME`.

ci: small and derandomized, no example database (CI=true selects it); dev: a short randomized
campaign, the default at a terminal; long: large budgets for campaigns of minutes to hours.
The explain phase is off: it replays variations of a failure, and here every replay is a live
program with real waits, for a note the shrunk program already makes plain.
"""
from hypothesis import HealthCheck, Phase, settings

_COMMON = dict(deadline=None, print_blob=True,
               phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                      HealthCheck.data_too_large])

settings.register_profile("ci", max_examples=5, stateful_step_count=20, derandomize=True, database=None, **_COMMON)
# dev: a step costs ~0.5-2 ms, while a request parked for an idle-timeout window (let_expire,
# refill, on a model with a short timeout) waits ~0.8 s at the example's end: 100 steps keep a
# campaign working, not waiting (benchmarks on a 500 ms model: 30 steps 233-283 requests/s, 100
# steps 438-488, 300 no better and less replayable; on a 2 s model, with no expiry rules, 100 steps
# run at the raw tritonclient loop's rate).
settings.register_profile("dev", max_examples=10, stateful_step_count=100, **_COMMON)
settings.register_profile("long", max_examples=5000, stateful_step_count=80, **_COMMON)
