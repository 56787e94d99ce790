"""The pure parts of shrinking from a fresh model (fuzz/isolate.py); the live part runs in
tests/test_broken_models.py, whose history-dependent bugs (a count across sequences, a slot that
remembers its last owner) only replay from a freshly loaded model."""
import time

import attrs

from fuzz import isolate
from fuzz.engine import FuzzSettings
from fuzz.invariants import InvariantViolation
from fuzz.spec import ModelSpec
from fuzz.isolate import RELOAD, _program
from fuzz.shrink import by_sequence, continuations, every_continuation
from fuzz.values import Kind, Request, StepRecord


SPEC = ModelSpec(name="m", dtype="INT32", strategy="direct", slots_per_instance=2, instances=1, idle_s=0.5,
                 max_batch_size=4, controls=frozenset({"START", "END", "READY"}), corrid_type=None,
                 implicit_state=False)


def step(i, client, seq_id=None, kind=Kind.REQUEST, start=True):
    req = Request("m", seq_id, 1, start=start) if seq_id is not None else None
    return StepRecord(index=i, client=client, action="a", request=req, kind=kind)


def test_steps_are_grouped_by_the_sequence_they_send_on():
    steps = [step(1, 0, 5), step(2, 1, 6), step(3, 0, 5), step(4, 1, kind=Kind.ANSWER),
             step(5, None, kind=Kind.LEAVE_TO_EXPIRE), step(6, 2, kind=Kind.CLOSE_STREAM), step(7, 0, 6)]
    # An answer goes with its client's last id; a step of all clients, or of a client that has
    # sent nothing yet, is a group of its own.
    assert by_sequence(steps) == [[0, 2], [1, 3, 6], [4], [5]]


def test_a_program_from_a_fresh_model_starts_with_the_reload_and_is_numbered_again():
    program = _program([step(7, 0, 5), step(9, 1, 6)])
    assert program[0].kind is Kind.FAULT and program[0].fault == RELOAD.fault
    assert [s.index for s in program] == [1, 2, 3]
    assert [s.request.seq_id for s in program[1:]] == [5, 6]


def test_a_sequences_requests_after_its_start_are_one_unit():
    steps = [step(1, 0, 5), step(2, 0, 5, start=False), step(3, 1, 6), step(4, 0, 5, start=False),
             step(5, 1, 6, kind=Kind.ANSWER), step(6, 1, 6, start=False)]
    assert continuations(steps) == [[1, 3], [5]]
    # tried first, as one unit: one replay decides whether the bug needs anything but STARTs
    assert every_continuation(steps) == [[1, 3, 5]]
    assert every_continuation(steps[:1]) == []


def test_shrinking_keeps_only_strictly_shorter_programs(monkeypatch):
    """The predicate stands in for a live replay (the algorithm is what is tested): a program
    fails when it holds the START of 5 and the START of 6, and like a replay's drain, every
    failing replay appends a teardown step, so a removal can fail again at the same length."""
    tries = []

    def fails(server, spec, steps, invariant, settings, fresh=None):
        tries.append(len(steps))
        ids = {s.request.seq_id for s in steps if s.request is not None and s.request.start}
        if not {5, 6} <= ids:
            return None
        v = InvariantViolation("sums_match", "wrong running sum")
        v.program = _program([*steps, step(99, 4, 5, start=False)])
        return v

    monkeypatch.setattr(isolate, "_try", fails)
    run = [step(1, 0, 5), *[step(i, 0, 5, start=False) for i in range(2, 12)], step(12, 1, 6), step(13, 2, 7)]
    found = fails(None, None, run, "sums_match", None)
    shrunk = isolate._shrink(None, SPEC, found, FuzzSettings(), time.monotonic() + 10)
    body = [s for s in shrunk.program if s.kind is not Kind.FAULT]
    assert [(s.request.seq_id, s.request.start) for s in body] == [(5, True), (6, True), (5, False)]
    assert len(tries) < 30, tries  # it ends when nothing shorter fails, not when the budget does
