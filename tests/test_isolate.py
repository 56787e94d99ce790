"""The pure parts of shrinking from a fresh model (fuzz/isolate.py); the live part runs in
tests/test_broken_models.py, whose history-dependent bugs (a count across sequences, a slot that
remembers its last owner) only replay from a freshly loaded model."""
from fuzz.isolate import RELOAD, _by_sequence, _program
from fuzz.values import Kind, Request, StepRecord


def step(i, client, seq_id=None, kind=Kind.REQUEST):
    req = Request("m", seq_id, 1, start=True) if seq_id is not None else None
    return StepRecord(index=i, client=client, action="a", request=req, kind=kind)


def test_steps_are_grouped_by_the_sequence_they_send_on():
    steps = [step(1, 0, 5), step(2, 1, 6), step(3, 0, 5), step(4, 1, kind=Kind.ANSWER),
             step(5, None, kind=Kind.LEAVE_TO_EXPIRE), step(6, 2, kind=Kind.CLOSE_STREAM), step(7, 0, 6)]
    # An answer goes with its client's last id; a step of all clients, or of a client that has
    # sent nothing yet, is a group of its own.
    assert _by_sequence(steps) == [[0, 2], [1, 3, 6], [4], [5]]


def test_a_program_from_a_fresh_model_starts_with_the_reload_and_is_numbered_again():
    program = _program([step(7, 0, 5), step(9, 1, 6)])
    assert program[0].kind is Kind.FAULT and program[0].fault == RELOAD.fault
    assert [s.index for s in program] == [1, 2, 3]
    assert [s.request.seq_id for s in program[1:]] == [5, 6]
