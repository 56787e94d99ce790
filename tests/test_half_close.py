"""half_close: a client's requests in flight on its stream when it closes its side. Every one
must still be answered (a slow model makes sure they are in flight when the close comes); the
step replays, runs in the standalone reproducer, and shrinks with its requests."""
import subprocess
import sys
import time

import attrs
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from fuzz import corpus
from fuzz.corpus import _step_from_json, _step_to_json
from fuzz.corpus.replay import replay_steps
from fuzz.corpus.shrink import sent_together
from fuzz.generator.machine import make_machine
from fuzz.harness.closing import send_then_half_close
from fuzz.harness.engine import Engine, FuzzSettings, RunStats, Setup
from fuzz.harness.server import EmbeddedTriton
from fuzz.spec import ModelSpec
from fuzz.values import Kind
from modelgen import slow_variants, write_repository

SLOW = slow_variants(idle_us=1_000_000, delay_ms=100)
DIRECT = SLOW[0].name
GROUP = [Kind.HELD] * 3 + [Kind.HALF_CLOSE] + [Kind.HELD_ANSWER] * 3


@pytest.fixture(scope="module")
def slow_triton(tmp_path_factory):
    path = tmp_path_factory.mktemp("slow-models")
    write_repository(SLOW[:1], path)
    with EmbeddedTriton(path, workdir=tmp_path_factory.mktemp("slow-triton")) as server:
        server.wait_models_ready([DIRECT])
        yield server


def test_requests_in_flight_at_a_half_close_are_answered_and_the_sequence_goes_on(slow_triton, tmp_path):
    spec = ModelSpec.fetch(slow_triton, DIRECT)
    engine = Engine(Setup.of(slow_triton, spec), salt=time.monotonic_ns() % 2**20 + 1)
    seq_id = 11_000 + engine.salt
    assert engine.send(0, spec.request(seq_id, 1, start=True), "stream", "start").value == 1
    send_then_half_close(engine, 0, [spec.request(seq_id, v) for v in (2, 4, 8)], "send, then close")
    steps = engine.log[1:]
    assert [s.kind for s in steps] == GROUP
    assert [s.outcome.value for s in steps[4:]] == [3, 7, 15]
    # In flight when the close came (right after they went): the first took an execution of
    # 100 ms to answer; and the close ended only once every answer had come.
    answers = [s.outcome for s in steps[4:]]
    assert answers[0].latency_s >= 0.09, answers[0]
    assert steps[3].done_at >= max(a.sent_at + a.latency_s for a in answers)
    assert engine.send(0, spec.request(seq_id, 16, end=True), "stream", "end (a new stream)").value == 31
    engine.finish()
    assert not engine.failed
    program = engine.log[:9]
    assert [_step_from_json(_step_to_json(s), 0) for s in program] == program
    assert sent_together(program) == [[1, 2, 3, 4, 5, 6, 7]]  # shrinking keeps the close with its requests
    again = replay_steps(slow_triton, spec, program)
    assert [s.kind for s in again[1:8]] == GROUP and again[8].outcome.value == 31
    # A failure at the first answer ends its program there: replayed, the close still comes with
    # all three in flight (the answers without steps are checked after it, not before)
    cut = replay_steps(slow_triton, spec, program[:6])
    assert [s.kind for s in cut[1:8]] == GROUP and [s.outcome.value for s in cut[5:8]] == [3, 7, 15]
    entry = attrs.evolve(corpus.make_entry(spec, slow_triton.version, "sums_match", "test program", program),
                         status="must-pass")
    script = corpus.write(tmp_path, entry).with_suffix(".py")
    out = subprocess.run([sys.executable, str(script), "--url", slow_triton.grpc_url], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and "does not play it" not in out.stdout, out.stdout + out.stderr
    assert "close its side of the stream" in out.stdout and "OUTPUT=15" in out.stdout


def test_the_rule_is_drawn_in_a_campaign(triton, monkeypatch):
    # The machine sends it on a default model: a short run closes streams with requests in
    # flight. Counted over every example (the run keeps only its last programs, and which rules
    # can run depends on what the server did: derandomized, a loaded run still drew differently).
    from fuzz.harness import closing
    closed, real = [], closing.half_close

    def counted(engine, client, action="close its side of the stream"):
        real(engine, client, action)
        closed.append(action)
    monkeypatch.setattr(closing, "half_close", counted)
    spec = ModelSpec.fetch(triton, "py_slot_direct_s2_i2_fp32_cser")
    machine = make_machine(triton, spec, FuzzSettings(), RunStats())
    run_state_machine_as_test(machine, settings=settings(max_examples=20, stateful_step_count=20, deadline=None,
                                                         suppress_health_check=list(HealthCheck), database=None, derandomize=True))
    assert closed, "no half_close in a 20-example run"
    assert all(action.startswith("close its side of the stream") for action in closed)
