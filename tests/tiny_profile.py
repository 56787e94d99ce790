"""A pytest plugin for sub-sessions in tests/test_corpus_write.py: registers the Hypothesis
profile `tiny` (generation only, no shrinking), so a diverging model fails within seconds."""
from hypothesis import HealthCheck, Phase, settings

settings.register_profile("tiny", max_examples=30, stateful_step_count=10, phases=[Phase.generate], database=None,
                          deadline=None, suppress_health_check=list(HealthCheck))
