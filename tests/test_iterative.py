"""`iterative_sequence` (core d1d4c9a, from 2.41) on the embedded builds, pinned live.

The model is the accumulator made decoupled and iterative: a request carries ITERS, and each of
its executions adds INPUT to the sequence's sum and sends it; all but the last reschedule the
request (TRITONSERVER_REQUEST_RELEASE_RESCHEDULE), the last answers with the final flag. What the
builds do with it is what a rule would have to encode, and two of it are known divergences
(README): a sequence is its first request (its final release ends it), a later request of it
cannot be rescheduled and never gets a final answer, and under the oldest strategy such a
request leaves its slot taken for good. 2.39 refuses the config.
"""
from __future__ import annotations

import contextlib
import os
import queue
import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from fuzz.checker.divergences import by_key
from fuzz.harness.server import EmbeddedTriton, ServerStartError

from .release_installs import embedded_install

MODEL = "iter"
MODEL_PY = '''
import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


def _get(request, name):
    return int(pb_utils.get_input_tensor_by_name(request, name).as_numpy().reshape(-1)[0])


class TritonPythonModel:
    def initialize(self, args):
        self.sums, self.runs = {}, {}
        params = json.loads(args["model_config"]).get("parameters", {})
        self.delay_s = int(params.get("DELAY_MS", {}).get("string_value", "0")) / 1000

    def execute(self, requests):
        time.sleep(self.delay_s)
        for request in requests:
            corrid = _get(request, "CORRID")
            if _get(request, "START"):
                self.sums[corrid] = 0
            self.sums[corrid] = self.sums.get(corrid, 0) + _get(request, "INPUT")
            key = (corrid, request.request_id())
            self.runs[key] = self.runs.get(key, 0) + 1
            out = pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", np.array([[self.sums[corrid]]], np.int32))])
            if self.runs[key] < _get(request, "ITERS"):
                request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
                request.get_response_sender().send(out)
            else:
                del self.runs[key]
                request.get_response_sender().send(out, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
'''


def _config(strategy: str, slots: int, delay_ms: int = 0) -> str:
    chosen = "direct { }" if strategy == "direct" else f"oldest {{ max_candidate_sequences: {slots} }}"
    controls = "".join(
        f'    {{ name: "{n}" control [ {{ kind: CONTROL_SEQUENCE_{n} int32_false_true: [ 0, 1 ] }} ] }},\n'
        for n in ("START", "END"))
    return f'''name: "{MODEL}"
backend: "python"
max_batch_size: {slots}
model_transaction_policy {{ decoupled: true }}
input [ {{ name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] }}, {{ name: "ITERS" data_type: TYPE_INT32 dims: [ 1 ] }} ]
output [ {{ name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] }} ]
instance_group [ {{ count: 1 kind: KIND_CPU }} ]
parameters {{ key: "DELAY_MS" value {{ string_value: "{delay_ms}" }} }}
sequence_batching {{
  iterative_sequence: true
  max_sequence_idle_microseconds: 5000000
  {chosen}
  control_input [
{controls}    {{ name: "CORRID" control [ {{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 }} ] }}
  ]
}}
'''


def _repo(path, strategy="direct", slots=2, delay_ms=0):
    (path / MODEL / "1").mkdir(parents=True)
    (path / MODEL / "1" / "model.py").write_text(MODEL_PY)
    (path / MODEL / "config.pbtxt").write_text(_config(strategy, slots, delay_ms))
    return path


@contextlib.contextmanager
def _streaming(repo, tmp_path, release):
    """The server with the iterative model loaded, and a stream to it (closed, its requests
    cancelled, on the way out)."""
    with EmbeddedTriton(repo, workdir=tmp_path, **embedded_install(release)) as server:
        server.wait_models_ready([MODEL])
        s = Stream(server.grpc_url)
        try:
            yield server, s
        finally:
            s.close()


class Stream:
    """One gRPC stream; every response (or error) it brings, as (request id, OUTPUT or error text, final)."""

    def __init__(self, url):
        self.client = grpcclient.InferenceServerClient(url)
        self.got: queue.Queue = queue.Queue()
        self.client.start_stream(callback=self._on_response)

    def _on_response(self, result, error):
        if error is not None:
            self.got.put((None, str(error), None))
            return
        response = result.get_response()
        final = response.parameters["triton_final_response"].bool_param
        out = result.as_numpy("OUTPUT")
        self.got.put((response.id, None if out is None else int(out.reshape(-1)[0]), final))

    def send(self, rid, corrid, value, iters, start=False, end=False):
        inputs = []
        for name, v in (("INPUT", value), ("ITERS", iters)):
            t = grpcclient.InferInput(name, [1, 1], "INT32")
            t.set_data_from_numpy(np.array([[v]], np.int32))
            inputs.append(t)
        self.client.async_stream_infer(MODEL, inputs, request_id=rid, sequence_id=corrid, sequence_start=start,
                                       sequence_end=end, enable_empty_final_response=True)

    def take(self, n, timeout=5.0):
        out = []
        for _ in range(n):
            out.append(self.got.get(timeout=timeout))
        return out

    def drain(self, wait=1.0) -> list:
        """Everything that comes until nothing has come for `wait` seconds."""
        out = []
        while True:
            try:
                out.append(self.got.get(timeout=wait))
            except queue.Empty:
                return out

    def quiet(self, wait=1.0) -> bool:
        try:
            self.got.get(timeout=wait)
            return False
        except queue.Empty:
            return True

    def close(self):
        # cancel_requests: a request that never gets its final answer would block stop_stream
        self.client.stop_stream(cancel_requests=True)
        self.client.close()


@pytest.mark.parametrize("release", [None, "0.5.0"], ids=["2.51", "2.41"])
def test_an_iterative_sequence_is_its_first_request_run_again_and_later_requests_are_not_rescheduled(
        tmp_path, release):
    # each execution takes 200 ms, so that d (sent right after c) surely reaches the server while
    # c's first turn runs: without it a loaded CI once saw d arrive after c's sequence had ended
    with _streaming(_repo(tmp_path / "models", delay_ms=200), tmp_path, release) as (server, s):
        # one request, three executions: the same sequence and slot, START only on the first
        s.send("a", 7, 10, 3, start=True)
        assert s.take(3) == [("a", 10, False), ("a", 20, False), ("a", 30, True)]
        # its final release ended the sequence: the next request of it needs START. The core ends
        # it with a request it enqueues after the final answer (README), so a request sent at once
        # can reach the sequence before that (seen once in CI: answered 31); give the end its time.
        time.sleep(0.5)
        s.send("b", 7, 1, 1)
        (_, error, _), = s.take(1)
        assert "must specify the START flag on the first request of the sequence" in error
        # iterative-reschedule-refused-after-start: a second request of a sequence iterating
        # runs between its turns, but its own reschedule is refused and it never gets a final
        s.send("c", 8, 1, 3, start=True)
        s.send("d", 8, 100, 2)
        answers = s.take(4)
        # d runs after one of c's turns: the first, or (seen on loaded machines before the delay)
        # the second, whose last turn then carries it (103), or the third, before c's final release
        ran_after = [k for k in (1, 2, 3) if ("d", 100 + k, False) in answers]
        assert len(ran_after) == 1, answers
        assert ("c", 103 if ran_after[0] < 3 else 3, True) in answers, answers
        assert s.quiet(1.5), "no final answer was expected for request d"
        log = server.log_tail(400)
        assert "while the model is not configured to handle such a flag" in log


@pytest.mark.parametrize("release", [None, "0.5.0"], ids=["2.51", "2.41"])
def test_under_oldest_a_later_request_of_an_iterative_sequence_keeps_its_slot_for_good(tmp_path, release):
    """iterative-oldest-slot-kept: one candidate sequence; a START and a plain second request sent
    with it (no reschedule at all) both run, then a START of another sequence waits in the
    backlog, unanswered, well past the first's idle timeout."""
    # a's execution takes 200 ms, so that b is queued before a's release however loaded the
    # machine (without a delay, a clean-clone CI once saw a released first and b refused)
    repo = _repo(tmp_path / "models", strategy="oldest", slots=1, delay_ms=200)
    config = repo / MODEL / "config.pbtxt"
    config.write_text(config.read_text().replace("5000000", "500000"))  # idle 0.5 s
    with _streaming(repo, tmp_path, release) as (_, s):
        s.send("a", 31, 1, 1, start=True)
        s.send("b", 31, 2, 1)  # queued before a's release: it runs in the sequence
        # b's sum says it ran after a; the two answers themselves may come back in either order
        # (seen once in CI on 2.41)
        got = s.take(2)
        assert sorted(got, key=repr) == [("a", 1, True), ("b", 3, True)], got  # an error comes as (None, text, None)
        s.send("c", 32, 5, 1, start=True)
        assert s.quiet(3.0), "the START of another sequence was expected to wait for good"


def test_2_39_refuses_iterative_sequence(tmp_path):
    install = embedded_install("0.4.2")
    with pytest.raises(ServerStartError, match='has no field named "iterative_sequence"'):
        EmbeddedTriton(_repo(tmp_path / "models"), workdir=tmp_path, **install).start()


@pytest.mark.parametrize("release", [None, "0.5.0"], ids=["2.51", "2.41"])
def test_an_id_less_request_gets_an_id_counted_from_1_that_a_clients_id_shares(tmp_path, release):
    """iterative-auto-id-shares-client-ids: the core's iterative sequencer gives a request without a
    sequence id the START flag and an id of its own, 1, 2, ... per model load: the same key as a
    client's id 1, 2, ... A client's START on id 1 while the id-less request iterates there
    restarts that sequence (the core's "has a conflict" warning), and the id-less request never
    gets its final answer (its reschedule is refused, in the log only)."""
    with _streaming(_repo(tmp_path / "models", delay_ms=50), tmp_path, release) as (server, s):
        s.send("auto", 0, 1, 20)  # no sequence id: it becomes sequence 1, START
        assert s.take(2) == [("auto", 1, False), ("auto", 2, False)]
        s.send("client", 1, 1000, 1, start=True)  # a client's own sequence 1
        answers = s.drain(1.5)
        mine = answers.index(("client", 1000, True))  # its START restarted sequence 1's state
        # the id-less request runs once more, onto the client's sum, and never finishes
        assert ("auto", 1001, False) in answers[mine:], answers
        assert not any(rid == "auto" and final for rid, _, final in answers), answers
        log = server.log_tail(400)
        assert "sequence 1 for model 'iter' has a conflict" in log


@pytest.mark.parametrize("release", [None, "0.5.0"], ids=["2.51", "2.41"])
def test_the_generated_iterative_model_answers_each_execution_through_the_fuzzers_client(tmp_path, release):
    """modelgen's iterative variant, through fuzz.harness.client.StreamClient: a START's answers before
    its final one come back as the Outcome's partials, two STARTs sent at once each get their own
    running sums, and the sequence ends with its START (the reference model's semantics)."""
    from fuzz.harness.client import StreamClient
    from fuzz.checker.model import BatcherModel
    from fuzz.spec import ModelSpec
    from modelgen import python_variants, write_model

    variant = next(v for v in python_variants() if v.iterations)
    write_model(variant, tmp_path / "models")
    with EmbeddedTriton(tmp_path / "models", workdir=tmp_path, **embedded_install(release)) as server:
        server.wait_models_ready([variant.name])
        spec = ModelSpec.fetch(server, variant.name)
        model = BatcherModel(spec, margin_s=0.1)
        streams = [StreamClient(server.grpc_url), StreamClient(server.grpc_url)]
        try:
            reqs = [spec.request(11, 5, start=True), spec.request(12, -7, start=True)]
            expected = [model.expect(r, 0.0) for r in reqs]
            boxes = [c.send(r) for c, r in zip(streams, reqs)]
            got = [StreamClient.wait(b, 5.0) for b in boxes]
            assert [(g.value, g.partials) for g in got] == [(e.value, e.partials) for e in expected] == [
                (15, (5, 10)), (-21, (-7, -14))]
            after = StreamClient.wait(streams[0].send(spec.request(11, 1)), 5.0)
            assert not after.ok and "must specify the START flag" in after.message
            once = StreamClient.wait(streams[1].send(spec.request(13, 4, start=True, end=True)), 5.0)
            assert (once.value, once.partials) == (4, ())  # a START with END is not rescheduled
        finally:
            for c in streams:
                c.close(cancel_requests=True)


@pytest.mark.parametrize("release", [None, "0.5.5", "0.5.0"], ids=["2.51", "2.44", "2.41"])
def test_an_iterative_start_that_waited_in_the_backlog_is_rescheduled(tmp_path, release):
    """iterative-backlog-start-stalls: more iterative STARTs than slots (core #337, r24.04). The one
    that waits in the backlog must be rescheduled like any other once a slot frees, and get all its
    answers; 2.41 and 2.44 run it once and never again."""
    with _streaming(_repo(tmp_path / "models", slots=1, delay_ms=100), tmp_path, release) as (server, s):
        s.send("a", 41, 1, 3, start=True)
        s.send("b", 42, 5, 3, start=True)  # the one slot is a's: b waits in the backlog
        answers = s.drain(2.0)
        assert [x for x in answers if x[0] == "a"] == [("a", 1, False), ("a", 2, False), ("a", 3, True)], answers
        stalls = server.version in by_key("iterative-backlog-start-stalls").versions
        assert [x for x in answers if x[0] == "b"] == ([("b", 5, False)] if stalls else
                                                      [("b", 5, False), ("b", 10, False), ("b", 15, True)]), answers


def _start_after_start_end_stalls(s, corrid, pipelined) -> bool:
    """START+END on `corrid`, then a START on it, pipelined behind it or sent once it was answered:
    whether the START stalled after its first answer (else it ran in full)."""
    s.send("a", corrid, 2, 1, start=True, end=True)
    if not pipelined:
        assert s.take(1) == [("a", 2, True)]
    s.send("b", corrid, 3, 3, start=True)
    got = s.take(2 if pipelined else 1)
    assert sorted(got) == sorted([("a", 2, True), ("b", 3, False)] if pipelined else [("b", 3, False)]), got
    try:
        rest = s.take(2, timeout=1.0)
    except queue.Empty:
        return True
    assert rest == [("b", 6, False), ("b", 9, True)], rest
    return False


# The builds on which the START stalls even when sent once the START+END was answered (measured
# here: 2.41 and 2.44 never did in 5 tries each); the divergence's versions are those of the
# pipelined form.
STALLS_AFTER_THE_ANSWER = ("2.46.0", "2.51.0")


@pytest.mark.parametrize("release", [None, "0.5.8", "0.5.5", "0.5.0"], ids=["2.51", "2.46", "2.44", "2.41"])
def test_a_start_soon_after_a_start_with_end_on_its_id_is_rescheduled(tmp_path, release):
    """iterative-start-after-start-end-stalls: a START+END, then a START on the same id, which must
    run in full. A race with the core's cancelled END for the START+END, so each way is tried up
    to 5 times (pipelined: 20; ids 100 apart): pipelined behind it, the START stalls at least once
    on every build; sent once the START+END was answered, at least once on 2.46 and 2.51 (on 2.41 and
    2.44 not seen on an idle machine, once on a loaded one). A stalled START's reschedule lacks START (in the log), and a START on its id
    afterwards runs in full."""
    with _streaming(_repo(tmp_path / "models"), tmp_path, release) as (server, s):
        answered = [_start_after_start_end_stalls(s, 100 + i, pipelined=False) for i in range(5)]
        # Where it stalls after the answer, it must stall at least once; where it was never seen
        # (2.41, 2.44) that is not asserted: a race, and a loaded clean-clone CI once met it on 2.44.
        assert any(answered) or server.version not in STALLS_AFTER_THE_ANSWER, answered
        # up to 20 tries: a clean-clone CI's 2.51 once ran 5 in full (it stops at the first stall)
        assert any(_start_after_start_end_stalls(s, 200 + i, pipelined=True) for i in range(20))
        assert "must specify the START flag" in server.log_tail(400)
        s.send("c", 200, 7, 3, start=True)
        assert s.take(3) == [("c", 7, False), ("c", 14, False), ("c", 21, True)]


# Where iterative-cancel-crash is a race two minutes of cancels may miss: 2.51 died after 25 to
# 4,900 streams on an idle machine, and lived through 6,879 in a clean-clone CI (stop 63); 2.41-2.46
# die within 140 in every run here, but a clean-clone CI's 2.41 lived through 8,711 (stop 65). So on
# CI's loaded machine a miss is expected of every build (a crash there still must be a signal); here
# only 2.51 may miss.
CANCEL_CRASH_RACY = ("2.51.0",)


# A miss counts as the race only after this many cancelled streams: 2.41-2.46 die within 140 here,
# so a run that cancelled fewer without a crash did too little to be a race missed.
RACE_FLOOR = 1000


def _cancel_crash_may_be_missed(version: str, streams: int) -> bool:
    return version in CANCEL_CRASH_RACY or (os.environ.get("CI") == "true" and streams >= RACE_FLOOR)


@pytest.mark.parametrize("release", [None, "0.5.8", "0.5.5", "0.5.0"], ids=["2.51", "2.46", "2.44", "2.41"])
def test_an_iterative_start_cancelled_between_its_iterations_kills_the_server(tmp_path, release):
    """iterative-cancel-crash: decoupled iterative STARTs (without END) whose stream is cancelled
    while they iterate kill tritonserver (SIGSEGV) within a few hundred such streams, on every build
    with iterative sequences. Found by hand, chasing a campaign's unreplayable no_hangs on the
    decoupled iterative model; START+ENDs (not rescheduled) and a decoupled model that is not
    iterative lived through 600 such streams each. Each build is fuzzed for up to two minutes (one in CI)."""
    import random

    from fuzz.harness.client import StreamClient
    from fuzz.spec import ModelSpec
    from modelgen import Variant, write_model

    variant = Variant("corrid", "direct", 2, 1, "int32", "uint64", ("START", "END", "READY", "CORRID"),
                      decoupled=True, iterations=3)
    repo = tmp_path / "models"
    repo.mkdir()
    write_model(variant, repo)
    rng, next_id = random.Random(7), 10
    with EmbeddedTriton(repo, workdir=tmp_path / "triton", **embedded_install(release)) as server:
        spec = ModelSpec.fetch(server, variant.name)
        # A race: on 2.51 it died after 25 to 4,900 streams (one run lived through 8,000); a few ms a
        # stream here, so two minutes leave it no real chance to live on where it crashes. One in
        # CI, where any build may miss it (CANCEL_CRASH_RACY) and 2.51 lived through two minutes.
        deadline, streams = time.monotonic() + (60 if os.environ.get("CI") == "true" else 120), 0
        while time.monotonic() < deadline:
            streams += 1
            s = StreamClient(server.grpc_url)
            for _ in range(rng.choice([1, 2, 3])):
                next_id += 1
                s.send(spec.request(next_id, 1, start=True))
            # Where in an iteration the cancel lands moves with the client's own cost per answer: a
            # few microseconds more of it kept 2.51, then 2.46, alive for 8,000 streams under four
            # fixed pauses, which met it within 700 before. Every other stream pauses anywhere
            # in 0-4 ms instead.
            time.sleep(rng.choice([0, 0.0005, 0.001, 0.003]) if streams % 2 else rng.uniform(0, 0.004))
            s.close(cancel_requests=True, timeout_s=2)
            with contextlib.suppress(Exception):
                server.process.wait(timeout=0.01)
            if server.process.poll() is not None:
                break
        status = server.process.poll()
        crashes = server.version in by_key("iterative-cancel-crash").versions
        if status is None and crashes and _cancel_crash_may_be_missed(server.version, streams):
            pytest.xfail(f"{server.version} lived through {streams} cancelled streams: a race this pin can miss there")
        assert (status is not None) == crashes, f"{server.version}: status {status} after {streams} cancelled streams"
        if crashes:
            assert status < 0, status  # killed by a signal
            print(f"{server.version}: died ({status}) after {streams} cancelled streams")


@pytest.mark.skipif(os.environ.get("CI") == "true",
                    reason="a race CI's loaded machine did not meet (2.51 alive after 25,589 bursts in 120 s; "
                           "here it died after about 3,000, twice): run by hand")
@pytest.mark.parametrize("release", [None], ids=["2.51"])
def test_iterative_starts_beside_another_model_s_backlog_kill_the_server(tmp_path, release):
    """iterative-beside-backlog-crash: bursts of two decoupled iterative STARTs (without END) while
    another model of the server lets a START in from its backlog, again and again, kill
    tritonserver (SIGSEGV) on 2.46 and 2.51 (the fuzzer met it with two campaigns on one server).
    Pinned on 2.51, where it died after about 3,000 bursts (15 s) each time; 2.46 died too, once
    after 9,300 (45 s): too close to a bound for CI. Up to two minutes."""
    import threading

    from fuzz.harness.client import StreamClient
    from fuzz.spec import ModelSpec
    from modelgen import Variant, write_model

    iterative = Variant("corrid", "direct", 2, 1, "int32", "uint64", ("START", "END", "READY", "CORRID"),
                        decoupled=True, iterations=3)
    other = Variant("slot", "direct", 1, 1, "int32", controls=("START", "END", "READY"))
    repo = tmp_path / "models"
    repo.mkdir()
    for v in (iterative, other):
        write_model(v, repo)
    stop = threading.Event()
    with EmbeddedTriton(repo, workdir=tmp_path / "triton", **embedded_install(release)) as server:
        spec, beside = ModelSpec.fetch(server, iterative.name), ModelSpec.fetch(server, other.name)

        def backlog():  # a START held, another waiting for its slot (cancelled every other time)
            i = 0
            while not stop.is_set():
                i += 2
                holder, waiter = StreamClient(server.grpc_url), StreamClient(server.grpc_url)
                with contextlib.suppress(Exception):
                    holder.infer(beside.request(i, 1, start=True), timeout_s=5)
                    waiting = waiter.send(beside.request(i + 1, 1, start=True, end=True))
                    time.sleep(0.02)
                    if i % 4:
                        waiter.close(cancel_requests=True, timeout_s=5)
                    holder.infer(beside.request(i, 1, end=True), timeout_s=5)
                    StreamClient.wait(waiting, 5)
                for s in (holder, waiter):
                    s.close_channel()

        load = threading.Thread(target=backlog, daemon=True)
        load.start()
        streams, bursts, deadline = [StreamClient(server.grpc_url) for _ in range(2)], 0, time.monotonic() + 120
        try:
            while time.monotonic() < deadline and server.process.poll() is None:
                bursts += 1
                boxes = [s.send(spec.request(10**6 + 2 * bursts + j, 1, start=True)) for j, s in enumerate(streams)]
                for box in boxes:
                    StreamClient.wait(box, 5)
        finally:
            stop.set()
            load.join(10)
        status = server.process.poll()
        assert status is not None and status < 0, f"{server.version}: alive after {bursts} bursts beside the backlog"
        assert server.version in by_key("iterative-beside-backlog-crash").versions
        print(f"{server.version}: died ({status}) after {bursts} bursts")
