"""Live smoke run of every model on the session's Triton (replaced by the state machine)."""
import pytest

from fuzz.client import GrpcClient, Request
from fuzz.divergences import known_for
from modelgen import python_variants


@pytest.mark.parametrize("variant", python_variants(), ids=lambda v: v.name)
def test_model_answers(triton, variant):
    if known_for(variant, triton.version):
        pytest.skip("known divergence on this build")
    seq = "smoke" if variant.corrid_type == "string" and "CORRID" in variant.controls else 17
    out = GrpcClient(triton.grpc_url).infer(Request(variant.name, seq, 2, start=True, end=True,
                                                    dtype=variant.dtype.upper()))
    assert out.value == 2, out
