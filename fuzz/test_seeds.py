"""Regression seeds (fuzz/seeds.py): each runs the model's state machine with a fixed Hypothesis
seed and a cheap budget, after the corpus replays and before open-ended fuzzing."""
import pytest
from hypothesis import settings

from fuzz import seeds
from fuzz.campaign import fuzz_model


def test_seed(triton, lone_servers, seed_case, fuzz_options, fuzz_results):
    triton = lone_servers.for_model(triton, seed_case.model)
    loaded = {m.name for m in triton.client().get_model_repository_index().models if m.state == "READY"}
    if seed_case.model not in loaded:
        pytest.skip(f"model {seed_case.model} is not loaded on the Triton at {triton.grpc_url}")
    budget = settings(max_examples=seeds.EXAMPLES, stateful_step_count=seeds.STEPS, derandomize=False,
                      database=None)
    result, error = fuzz_model(triton, seed_case.model, budget, fuzz_settings=fuzz_options.fuzz_settings,
                               seed=seed_case.seed)
    assert result.examples >= 1, result
    if error is not None:
        raise error
