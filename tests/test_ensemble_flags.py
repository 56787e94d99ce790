"""Sequence flags that a step of an ensemble sets on its responses, pinned live on six builds.

A decoupled first step (modelgen/native/split.c, a native backend) cuts each request into
two chunks (its INPUT, then 0) and says, with the response parameters `sequence_id`, `sequence_start` and
`sequence_end`, where the sequence of its chunks starts and ends: the first chunk starts it where
the request did, the second ends it where the request did. The stateful step behind it sums its
sequence. So a sequence sent to the ensemble sums every chunk, each answered: a request of value
v answers (sum + v, sum + v).

The builds whose ensemble scheduler takes a step's flags from the ensemble's request and only
adds the responses' (core #369: fixed in r24.07, broken since r23.12) restart the sequence at
every chunk of a START, and end it at the first chunk of an END, whose request then never gets
an answer: ensemble-step-flags-kept (fuzz/checker/divergences.py).
"""
from __future__ import annotations

import queue
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from fuzz.checker.divergences import by_key
from fuzz.harness.server import EmbeddedTriton
from modelgen import native

from .release_installs import embedded_install
from .test_iterative import Stream as IterativeStream

ENSEMBLE, SPLIT, SUM = "split_sum", "split", "sum"

SUM_PY = '''
import numpy as np
import triton_python_backend_utils as pb_utils


def _get(request, name):
    return int(pb_utils.get_input_tensor_by_name(request, name).as_numpy().reshape(-1)[0])


class TritonPythonModel:
    def initialize(self, args):
        self.sums = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            corrid = _get(request, "CORRID")
            total = (0 if _get(request, "START") else self.sums.get(corrid, 0)) + _get(request, "INPUT")
            self.sums[corrid] = total
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", np.array([total], np.int32))]))
        return responses
'''

CONFIGS = {
    SPLIT: f'''name: "{SPLIT}"
backend: "{native.SPLIT_BACKEND}"
max_batch_size: 0
model_transaction_policy {{ decoupled: true }}
input [ {{ name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] }} ]
output [ {{ name: "CHUNK" data_type: TYPE_INT32 dims: [ 1 ] }} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
''',
    SUM: f'''name: "{SUM}"
backend: "python"
max_batch_size: 0
input [ {{ name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] }} ]
output [ {{ name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] }} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
sequence_batching {{
  max_sequence_idle_microseconds: 10000000
  direct {{ }}
  control_input [
    {{ name: "START" control [ {{ kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] }} ] }},
    {{ name: "CORRID" control [ {{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 }} ] }}
  ]
}}
''',
    ENSEMBLE: f'''name: "{ENSEMBLE}"
platform: "ensemble"
max_batch_size: 0
input [ {{ name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] }} ]
output [ {{ name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] }} ]
ensemble_scheduling {{
  step [
    {{ model_name: "{SPLIT}" model_version: -1 input_map {{ key: "INPUT" value: "INPUT" }}
      output_map {{ key: "CHUNK" value: "chunk" }} }},
    {{ model_name: "{SUM}" model_version: -1 input_map {{ key: "INPUT" value: "chunk" }}
      output_map {{ key: "OUTPUT" value: "OUTPUT" }} }}
  ]
}}
''',
}


def _repository(path: Path) -> Path:
    try:
        library = native.build(native.SPLIT_SOURCE, native.SPLIT_BACKEND)
    except native.NativeUnavailable as exc:
        pytest.skip(str(exc))
    for name, config in CONFIGS.items():
        (path / name / "1").mkdir(parents=True)
        (path / name / "config.pbtxt").write_text(config)
    (path / SUM / "1" / "model.py").write_text(SUM_PY)
    (path / SPLIT / "1" / library.name).write_bytes(library.read_bytes())
    return path


class Stream(IterativeStream):
    """One gRPC stream to the ensemble: what each request brought, OUTPUT values or error texts."""

    def _on_response(self, result, error):
        self.got.put(str(error) if error is not None else int(result.as_numpy("OUTPUT").reshape(-1)[0]))

    def send(self, corrid, value, start=False, end=False) -> list:
        """The request's answers: two chunks' sums, or what came instead, until 2 s of silence."""
        t = grpcclient.InferInput("INPUT", [1], "INT32")
        t.set_data_from_numpy(np.array([value], np.int32))
        self.client.async_stream_infer(ENSEMBLE, [t], sequence_id=corrid, sequence_start=start, sequence_end=end)
        out = []
        while len(out) < 2:
            try:
                out.append(self.got.get(timeout=2.0))
            except queue.Empty:
                break
        return out


DIVERGENCE = by_key("ensemble-step-flags-kept")


@pytest.mark.parametrize("release", [None, "0.5.8", "0.5.5", "0.5.0", "0.4.2", "0.4.0"],
                         ids=["2.51", "2.46", "2.44", "2.41", "2.39", "2.36"])
def test_an_ensemble_step_takes_the_sequence_flags_its_previous_step_answered_with(tmp_path, release):
    repo = _repository(tmp_path / "models")
    with EmbeddedTriton(repo, workdir=tmp_path, **embedded_install(release)) as server:
        server.wait_models_ready([ENSEMBLE])
        stream = Stream(server.grpc_url)
        try:
            answers = [stream.send(7, 2, start=True), stream.send(7, 3), stream.send(7, 1, end=True),
                       stream.send(8, 5, start=True, end=True)]
        finally:
            stream.close()
    if server.version not in DIVERGENCE.versions:
        # every chunk summed, each answered: 2 then 0, 3 then 0, 1 then 0; then a sequence of one request
        assert answers == [[2, 2], [5, 5], [6, 6], [5, 5]], (server.version, answers)
    else:
        # START on both chunks of a START: the second (0) starts again from 0. END on the first chunk
        # of an END: the second has no sequence left. Mostly the request gets no answer at all (it
        # stays in flight until the server stops); on CI's loaded machine 2.41 once answered the
        # first chunk (3 + 1) and refused the second for want of START. A START+END: both chunks
        # start and end a sequence of their own.
        assert answers[:2] == [[2, 0], [3, 3]] and answers[3] == [5, 0], (server.version, answers)
        ended = answers[2]
        assert ended == [] or (ended[0] == 4 and "must specify the START flag" in ended[1]), (server.version, answers)


REFUSAL = by_key("ensemble-step-refusal-unanswered")


@pytest.mark.parametrize("release", [None, "0.5.8", "0.5.5", "0.5.0", "0.4.2", "0.4.0"],
                         ids=["2.51", "2.46", "2.44", "2.41", "2.39", "2.36"])
def test_a_request_the_step_refuses_behind_a_decoupled_step_is_never_answered(tmp_path, release):
    """A request without START on an id with no sequence: the stateful step refuses it when it is
    enqueued, and the client hears nothing, neither the refusal nor a final response (where the
    one-step ensemble of the default set answers the refusal). A later START is served."""
    repo = _repository(tmp_path / "models")
    with EmbeddedTriton(repo, workdir=tmp_path, **embedded_install(release)) as server:
        server.wait_models_ready([ENSEMBLE])
        stream = Stream(server.grpc_url)
        try:
            refused, later = stream.send(9, 3), stream.send(10, 4, start=True, end=True)
        finally:
            stream.close()
    assert server.version in REFUSAL.versions, server.version
    assert refused == [] and later[:1] == [4], (server.version, refused, later)
