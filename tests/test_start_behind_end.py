"""start-behind-end-runs-first (fuzz/checker/divergences.py), pinned live on the embedded build:
under the oldest strategy a START pipelined on one stream right behind an END on its id may run
before that END, so a model that keeps its state by CORRID ends the new sequence with the old
one's END. modelgen's default oldest model with state by CORRID; plain tritonclient streams."""
from __future__ import annotations

import queue

import numpy as np
import tritonclient.grpc as grpcclient

from fuzz.checker.divergences import by_key
from fuzz.harness.server import EmbeddedTriton, explicit_control
from modelgen import default_variants, write_repository

MODEL = "py_corrid_oldest_s2_i1_int32_cserc_u64_nb"  # no batch dimension: INPUT is [1]
DIVERGENCE = by_key("start-behind-end-runs-first")


def _answers(client, got, corrid, sends) -> list:
    """Each request's OUTPUT, sent back to back on the stream, in the order they came back."""
    for i, (value, start, end) in enumerate(sends):
        t = grpcclient.InferInput("INPUT", [1], "INT32")
        t.set_data_from_numpy(np.array([value], np.int32))
        client.async_stream_infer(MODEL, [t], request_id=str(i), sequence_id=corrid, sequence_start=start,
                                  sequence_end=end)
    out = {}
    for _ in sends:
        result, error = got.get(timeout=10)
        assert error is None, error
        out[int(result.get_response().id)] = int(result.as_numpy("OUTPUT").reshape(-1)[0])
    return [out[i] for i in range(len(sends))]


def test_a_start_pipelined_behind_an_end_on_its_id_may_run_before_it(tmp_path):
    repo = str(tmp_path / "models")
    write_repository([v for v in default_variants() if v.name == MODEL], repo)
    with EmbeddedTriton(repo, **explicit_control(repo)) as server:
        client = grpcclient.InferenceServerClient(server.grpc_url)
        client.load_model(MODEL)
        got = queue.Queue()
        client.start_stream(callback=lambda result, error: got.put((result, error)))
        try:
            runs = []
            for corrid in range(7000, 7040):
                runs.append(_answers(client, got, corrid, [(74, True, False), (0, False, True), (-55, True, False)]))
                _answers(client, got, corrid, [(0, False, True)])  # the new sequence ends
        finally:
            client.stop_stream()
    # every START answered its own value, and an END either its sequence's sum or the next START's
    assert all(r[0] == 74 and r[1] in (74, -55) and r[2] == -55 for r in runs), runs
    overtaken = sum(r[1] == -55 for r in runs)
    if server.version in DIVERGENCE.versions:
        assert overtaken >= 1, runs  # 63 of 100 on an unloaded machine
    else:
        assert overtaken == 0, (server.version, runs)
