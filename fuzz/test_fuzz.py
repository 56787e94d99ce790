"""`pytest fuzz/`: one state-machine test per model on the session's Triton."""
import pytest
from hypothesis import settings

from fuzz.campaign import fuzz_model


def test_sequence_batcher(triton, fuzz_model_name, fuzz_options, fuzz_results):
    result, error = fuzz_model(triton, fuzz_model_name, settings(), budget_s=fuzz_options.budget_s,
                               fuzz_settings=fuzz_options.fuzz_settings)
    fuzz_results.append(result)
    if error is not None:
        raise error
