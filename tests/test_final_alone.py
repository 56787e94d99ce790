"""A decoupled model that answers, then sends its final flag alone (`send(response)`, then
`send(flags=FINAL)`): a common way to write one, and a correct one. Without asking for such flags
(`triton_enable_empty_final_response`) a stream never hears that the request is complete, and the
fuzzer took every such answer for a hang: a false finding on a correct model (seen live, at the
first example). Live: the fuzzer's stream, the standalone reproducer's, and a short campaign."""
import pytest
from hypothesis import HealthCheck, settings

from fuzz.campaign import fuzz_model
from fuzz.corpus.reproducer_script import Stream
from fuzz.harness.client import StreamClient
from fuzz.harness.server import EmbeddedTriton, explicit_control
from modelgen import Variant, model_config, render

from .broken_models import TEMPLATE, _FINAL
from .passing import passed

MODEL = "py_final_alone"
_ALONE = ("                request.get_response_sender().send(response)\n"
          "                request.get_response_sender().send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)\n")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    repo = tmp_path_factory.mktemp("models")
    cfg = model_config(Variant("corrid", "direct", 4, 1, "int32", "uint64", ("START", "END", "READY", "CORRID"),
                               decoupled=True))
    cfg.name = MODEL
    (repo / MODEL / "1").mkdir(parents=True)
    assert _FINAL in TEMPLATE, "the template changed: re-point the patch"
    (repo / MODEL / "1" / "model.py").write_text(TEMPLATE.replace(_FINAL, _ALONE, 1))
    (repo / MODEL / "config.pbtxt").write_text(render(cfg))
    with EmbeddedTriton(repo, startup_timeout=300, **explicit_control(repo)) as triton:
        triton.wait_models_ready([MODEL])
        yield triton


def test_each_stream_takes_the_last_answer_before_a_final_flag_sent_alone(server):
    from fuzz.harness.client import Request

    program = [(41, 2, True, False), (41, 3, False, False), (41, 4, False, True)]
    stream = StreamClient(server.grpc_url)
    try:
        got = [StreamClient.wait(stream.send(Request(MODEL, i, v, start=s, end=e)), 10.0) for i, v, s, e in program]
    finally:
        stream.close()
    assert [(g.status, g.value, tuple(g.partials)) for g in got] == [("OK", 2, ()), ("OK", 5, ()), ("OK", 9, ())]
    standalone = Stream(server.grpc_url)
    try:
        got = [standalone.infer({"id": {"type": "uint64", "value": 42}, "value": v, "start": s, "end": e, "batch": 1, "dtype": "INT32"}, MODEL, 10.0)
               for _, v, s, e in program]
    finally:
        standalone.close()
    assert [(g.status, g.value) for g in got] == [("OK", 2), ("OK", 5), ("OK", 9)]


def test_a_campaign_on_it_passes(server):
    quick = settings(max_examples=4, stateful_step_count=20, derandomize=False, database=None, deadline=None,
                     suppress_health_check=list(HealthCheck))
    result, error = fuzz_model(server, MODEL, quick, seed=1)
    assert error is None, str(error)
    assert passed(result, error) and result.requests >= 20, (result.verdict, result.requests)
