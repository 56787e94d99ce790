"""The order in which a replay checks the answers of requests it sent without waiting (HELD steps):
pure, with a stand-in engine that records what it was asked (no server: what is judged is the
replay's own bookkeeping, not Triton)."""
import pytest

from fuzz.corpus import replay
from fuzz.spec import ModelSpec
from fuzz.values import Kind, Request, StepRecord

SPEC = ModelSpec(name="m", dtype="INT32", strategy="direct", slots_per_instance=2, instances=1, idle_s=0.5,
                 max_batch_size=4, controls=frozenset({"START", "END", "READY"}), corrid_type=None,
                 implicit_state=False)


class _Engine:
    """What replay_steps asks of an Engine for HELD, HELD_ANSWER and ANSWER steps."""
    def __init__(self, *a, **k):
        self.held, self.pending, self.log, self.failed, self.checked = {}, {}, [], False, []

    def send_held(self, reqs, action):
        return [(client, req, None, object(), action) for client, req in reqs]

    def check_held(self, items):
        self.checked.append([item[1].value for item in items])

    def check_alive(self):
        pass

    def finish(self):
        _Engine.last = self


def _step(i, kind, client=0, value=None):
    req = Request("m", 5, value, start=value == 1) if value is not None else None
    return StepRecord(index=i, client=client, action="run", request=req, kind=kind)


@pytest.fixture
def engine(monkeypatch):
    monkeypatch.setattr(replay, "Engine", _Engine)
    monkeypatch.setattr(replay.Setup, "of", staticmethod(lambda *a, **k: None))


def test_pipelined_requests_with_a_backlog_answer_logged_among_them_keep_their_own_answers(engine):
    """A run pipelined 1, 2, then a backlogged START's answer came (an ANSWER step), then 3; their
    answer steps after: each is checked at its own step, in order, none before (checked early,
    the answer steps found no request left: a drift)."""
    steps = [_step(1, Kind.HELD, value=1), _step(2, Kind.HELD, value=2), _step(3, Kind.ANSWER, client=1),
             _step(4, Kind.HELD, value=3), _step(5, Kind.HELD_ANSWER, value=1), _step(6, Kind.HELD_ANSWER, value=2),
             _step(7, Kind.HELD_ANSWER, value=3)]
    replay.replay_steps(None, SPEC, steps)
    assert _Engine.last.checked == [[1], [2], [3]]


def test_held_requests_without_answer_steps_are_checked_before_the_next_step(engine):
    """A failure among a group's answers ends its program before the rest: those requests are
    checked before the next step of another kind (and at the end), not left to race it."""
    steps = [_step(1, Kind.HELD, value=1), _step(2, Kind.HELD, value=2), _step(3, Kind.HELD_ANSWER, value=1),
             _step(4, Kind.ANSWER, client=1)]
    replay.replay_steps(None, SPEC, steps)
    assert _Engine.last.checked == [[1], [2]]


def test_a_held_request_without_its_answer_step_is_checked_after_answered_runs(engine):
    """Runs one after another, the earlier ones answered by their steps, the last not (its
    program ended in a failure elsewhere): the last run's request is still checked before the
    next step, whatever became of the earlier runs' items (their ids can be taken again)."""
    steps = []
    for n in range(1, 6):
        steps += [_step(2 * n - 1, Kind.HELD, value=n), _step(2 * n, Kind.HELD_ANSWER, value=n)]
    steps += [_step(11, Kind.HELD, value=6), _step(12, Kind.ANSWER, client=1)]
    replay.replay_steps(None, SPEC, steps)
    assert _Engine.last.checked == [[n] for n in range(1, 7)]
