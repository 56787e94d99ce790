"""Replays a corpus entry's program with the fuzzer's own machinery: the same clients, reference
model and checker. Each core kind of step registers here its replay and its play in the standalone
reproducer (fuzz/steps.py: a method of the reproducer's Player, fuzz/corpus/reproducer_script.py). Expectations are re-derived by the model at replay time (so timing is judged
as in fuzzing: idle-timeout windows are waited out, backlog answers checked against every legal
schedule), recorded waits are slept again, and the engine's teardown drains and checks what is
left (answers, inference statistics).
"""
from __future__ import annotations

import time

import attrs

from .. import nemesis
from . import CorpusEntry
from ..checker.divergences import KNOWN, by_key
from ..checker import verdicts
from ..checker.invariants import InvariantViolation
from ..checker.model import AnswerPending, OutsideContract, key_of
from ..harness.engine import Engine, FuzzSettings, Kind, NotPrompt, Setup, StepRecord, go_silent
from ..spec import ModelSpec
from ..steps import REPLAYERS, ReplayDrift, drift, load_families, plays, recorded_via, replays
from .shrink import answers_of_held


class ReplayNeeds(ReplayDrift):
    """The program strikes a fault this server cannot take (a restart of a server this harness
    did not start, a reload without explicit model control): it can only be replayed elsewhere."""


# Faults a replay strikes again: all that a program records (a stall is a late request).
REPLAYED_FAULTS = ("restart", "reload", "cut", "full_batch", "deadlines", "give_up")


class CorpusMismatch(AssertionError):
    """A known-divergence entry broke a promise other than the one it records."""


def replay(server, entry: CorpusEntry, settings: FuzzSettings = FuzzSettings()) -> list[StepRecord]:
    """Runs the program; returns the replayed step log, or raises InvariantViolation (its
    `.program` is the replayed log) or ReplayDrift."""
    spec = ModelSpec.fetch(server, entry.model)
    if spec != entry.spec:
        raise ReplayDrift(f"model {entry.model} is configured differently from when {entry.name} was recorded:\n"
                          f"  recorded: {entry.spec.describe()}\n  now:      {spec.describe()}")
    faults = {s.fault.name for s in entry.steps if s.fault is not None}
    # give_up is no nemesis (give_up_beside, a default rule, strikes it) and needs nothing of the server
    why = nemesis.unsupported(faults & set(REPLAYED_FAULTS) & set(nemesis.NEMESES), server)
    if why:
        raise ReplayNeeds(f"{entry.name}: {why}")
    version = getattr(server, "version", None)
    accepts = {k for k in entry.accepts if by_key(k).applies(spec, version)}
    return replay_steps(server, spec, entry.steps, attrs.evolve(settings, accept=settings.accept | accepts))


def replay_steps(server, spec: ModelSpec, steps, settings: FuzzSettings = FuzzSettings()) -> list[StepRecord]:
    """Sends the steps in their recorded order (a request whose answer depends on an idle-timeout
    window makes the whole program wait, never parks on its client), then drains and checks."""
    # A program that cuts connections had its first clients behind the fault proxy: so here.
    cuts = frozenset({"cut"}) if any(s.fault is not None and s.fault.name == "cut" for s in steps) else frozenset()
    engine = Engine(Setup.of(server, spec, attrs.evolve(settings, park=False, nemesis=settings.nemesis | cuts)), salt=1)
    # The held requests whose answers are steps of the program (checked there): their items by id,
    # kept so that no later item can take the id of one gone
    answered, later = set(answers_of_held(steps)), {}
    try:
        i = 0
        while i < len(steps):
            held = _held_run(steps, i)
            if steps[i].kind.traits.group != "held":  # (a half-close goes with its requests in flight)
                _answer_held(engine, later)
            try:
                if held:  # sent at once, as they were
                    sent = _send_held(engine, held)
                    later.update({id(item): item for j, item in enumerate(sent) if i + j in answered})
                else:
                    _step(engine, steps[i], spec, settings)
            except (OutsideContract, AnswerPending) as err:  # a shortened program that no longer fits
                raise drift(steps[i], str(err)) from None
            engine.check_alive()
            i += max(1, len(held))
        _answer_held(engine, later)
    except BaseException:
        engine.failed = True
        engine.finish()  # cleanup only
        raise
    engine.finish()  # drain: every answer and the statistics are checked
    return engine.log


def _held_run(steps, i: int) -> list:
    """The HELD steps from i on, up to the first step of another kind."""
    run = []
    while i + len(run) < len(steps) and steps[i + len(run)].kind is Kind.HELD:
        run.append(steps[i + len(run)])
    return run


def _send_held(engine, held) -> list:
    """HELD steps (a burst, a crowd, a held batch, a client's pipelined requests) sent at once;
    each answer step checks its own. Returns the engine's items for them, in order."""
    try:
        sent = engine.send_held([(s.client, s.request) for s in held], held[0].action)
    except NotPrompt as err:  # e.g. a shortened program's START finds no free slot
        raise drift(held[0], str(err)) from None
    for item in sent:
        engine.held.setdefault(item[0], []).append(item)
    return sent


def _answer_held(engine, later=None) -> None:
    """Checks the answers of HELD requests whose answer steps the program does not have (those
    whose items are not in `later`, by id): a failure inside a group ends its program before the
    rest of the group's answers, and shrinking keeps such requests. Unchecked, they would race
    what comes next on their ids from other connections (the drain's ENDs: a false failure, seen
    while shrinking a crowd). Those with answer steps wait for them: a client's pipelined requests
    can have a backlogged START's answer logged among them, before their own answers."""
    later = later or {}
    for client in list(engine.held):
        now = [item for item in engine.held[client] if later.get(id(item)) is not item]
        engine.held[client] = [item for item in engine.held[client] if later.get(id(item)) is item]
        if not engine.held[client]:
            del engine.held[client]
        if now:
            engine.check_held(now)


def _bound(engine, spec: ModelSpec, settings: FuzzSettings) -> float:
    window = spec.idle_s + engine.model.margin + engine.model.late
    return time.monotonic() + engine.answer_bound() + (len(engine.pending) + 2) * window


def _await_answer(engine, client: int, spec: ModelSpec, settings: FuzzSettings) -> None:
    """Waits until the client's backlogged START has been answered and checked."""
    deadline = _bound(engine, spec, settings)
    while client in engine.pending and time.monotonic() < deadline:
        engine.collect()
        if client in engine.pending:
            time.sleep(0.01)
    if client in engine.pending:
        p = engine.pending[client]
        engine.fail(verdicts.queued_start_unanswered(p.step, deadline - p.sent_at))


# How each core kind of step is replayed, and played by the standalone reproducer (a step family
# registers its own kinds' where it sends and checks them: fuzz/harness/cancelling.py,
# fuzz/harness/sharing.py; see fuzz/steps.py).

load_families()


def _step(engine, step: StepRecord, spec: ModelSpec, settings: FuzzSettings) -> None:
    replayer = REPLAYERS.get(step.kind)
    if replayer is None:
        raise drift(step, f"a {step.kind.value} step does not replay yet")
    replayer(engine, step, spec, settings)


@replays(Kind.PAUSE)
def _pause(engine, step, spec, settings) -> None:
    engine.record(client=None, action=step.action, kind=step.kind, wait_s=go_silent(step.wait_s))


@plays(Kind.PAUSE, Kind.GO_SILENT, Kind.LEAVE_TO_EXPIRE)
def play_silence(p, step):  # (the Player waited the step's wait_s)
    p.silence(step)


@replays(Kind.GO_SILENT)
def _go_silent(engine, step, spec, settings) -> None:
    engine.go_silent_past_idle()  # how long is the model's call now, as in fuzzing


@replays(Kind.LEAVE_TO_EXPIRE)
def _leave_to_expire(engine, step, spec, settings) -> None:
    # No request; the recorded request that comes back to one of them after its window follows,
    # with the silence before it as its wait.
    engine.record(client=None, action=step.action, kind=step.kind)


@replays(Kind.CLOSE_STREAM)
def _close_stream(engine, step, spec, settings) -> None:
    engine.streams[step.client].close(cancel_requests=False, timeout_s=settings.prompt_s)
    engine.record(client=step.client, action=step.action, kind=step.kind)


@plays(Kind.CLOSE_STREAM)
def play_close_stream(p, step):
    p.close_stream(step)


@replays(Kind.CANCEL_QUEUED)
def _cancel_queued(engine, step, spec, settings) -> None:
    if step.client not in engine.pending:
        raise drift(step, f"client {step.client} has no START waiting in the backlog at replay")
    engine.cancel_queued(step.client)


@plays(Kind.CANCEL_QUEUED)
def play_cancel_queued(p, step):
    p.cancel_queued(step)


@replays(Kind.HELD)
def _held(engine, step, spec, settings) -> None:
    _send_held(engine, [step])  # (replay_steps sends every run of HELD steps itself)


@plays(Kind.HELD)
def play_held(p, step):
    p.held_request(step)


@replays(Kind.HELD_ANSWER)
def _held_answer(engine, step, spec, settings) -> None:
    if not engine.held.get(step.client):
        raise drift(step, f"client {step.client} holds no request")
    engine.check_held([engine.held[step.client].pop(0)])


@replays(Kind.ANSWER, Kind.STILL_WAITING)
def _answer(engine, step, spec, settings) -> None:
    if step.client in engine.pending:  # otherwise it was answered (and checked) already
        _await_answer(engine, step.client, spec, settings)


@plays(Kind.ANSWER, Kind.STILL_WAITING, Kind.HELD_ANSWER)
def play_answer(p, step):
    p.answer(step)


@replays(Kind.FAULT)
def _fault(engine, step, spec, settings) -> None:
    if step.fault is None or step.fault.name not in REPLAYED_FAULTS:
        raise drift(step, f"a {step.fault.name if step.fault else 'nameless'} fault does not replay")
    if step.fault.name == "cut":
        struck = engine.cut(step.action)
    elif step.fault.name in ("deadlines", "give_up"):
        struck = engine.hurry(step.fault, step.action)
    else:
        struck = engine.server_fault(step.fault, step.action)
    if not struck:
        raise drift(step, "a client still waits, the fault cannot strike")


@plays(Kind.FAULT)
def play_fault(p, step):
    p.fault(step)


@replays(Kind.REQUEST, Kind.REFILL, Kind.QUEUED)
def _request(engine, step, spec, settings) -> None:
    # The silence counts from before it is kept, so the replay's own record keeps it too (from
    # the send, it recorded none, and a replay of a replay, as each shrinking try is, lost the
    # gaps a bug of time needs).
    since = time.monotonic()
    if step.wait_s:
        go_silent(step.wait_s)
    if step.client in engine.pending:  # the recorded client was idle here; let its answer come in
        _await_answer(engine, step.client, spec, settings)
    engine.collect()
    if step.kind is Kind.REFILL:
        _refill_room(engine, step)
    if engine.model.waits_for_an_answer(key_of(step.request.seq_id)):
        # A shrunk program can lose what let that answer come first (fuzz/corpus/isolate.py).
        raise drift(step, f"{step.request.seq_id!r} still waits for an answer at replay")
    engine.send(step.client, step.request, recorded_via(engine, step), step.action,
                context="refill" if step.kind is Kind.REFILL else "", since=since)


@plays(Kind.REQUEST, Kind.REFILL, Kind.TOLD_APART)
def play_request(p, step):
    p.request(step)


@plays(Kind.QUEUED)
def play_queued(p, step):
    p.queued(step)


@replays(Kind.TOLD_APART)
def _told_apart(engine, step, spec, settings) -> None:
    if step.wait_s:
        go_silent(step.wait_s)
    engine.collect()
    key = key_of(step.request.seq_id)
    if key not in engine.model.live_keys() and engine.model.maybe_ran_until(key) is None:
        raise drift(step, f"{step.request.seq_id!r} is not live at replay: nothing to end")
    engine.end_told_apart(key)


def _refill_room(engine, step: StepRecord) -> None:
    """A START after timeout went, as refill_after_timeout sends it, once the sequences it waited
    for had surely idled out, and found a slot free. The steps that ran meanwhile (and the one
    that left those sequences to expire) may be shrunk away, so it waits here until a sequence
    holding a slot surely expired, as a client sending it would (the standalone reproducer's
    START waits in the backlog just so); the drain's ENDs must not free the slot instead."""
    while True:
        now = time.monotonic()
        engine.model.settle(now)
        if engine.model.free_slots():
            return
        ends = engine.model.surely_idle_at()
        if engine.model.has_backlog() or not ends or ends[0] + 0.005 < now:  # none, or one past its window stays
            raise drift(step, "no slot can free for it by an idle timeout at replay")
        go_silent(max(0.0, ends[0] + 0.005 - now))
        engine.collect()


@attrs.frozen
class Verdict:
    """What a replay showed, against what the entry's status requires."""
    entry: str
    diverged: bool
    steps: int


def check_entry(server, entry: CorpusEntry, corpus_path: str = "corpus",
                settings: FuzzSettings = FuzzSettings()) -> Verdict:
    """Replays the entry and holds it to its status: raises InvariantViolation when a promise
    breaks (expected for a known divergence on its versions), CorpusMismatch when a known
    divergence breaks a different promise, ReplayDrift when the program no longer fits."""
    version = getattr(server, "version", None)
    how = (f"corpus entry {entry.name} (status {entry.status}; file {corpus_path}/{entry.name}.json). "
           f"Replay: pytest fuzz/ -k '{entry.name}'; standalone: python {corpus_path}/{entry.name}.py "
           f"--url {server.grpc_url}")
    try:
        log = replay(server, entry, settings)
    except InvariantViolation as v:
        expected_here = entry.diverges_on(version)
        if expected_here and not _same_finding(entry, v):
            raise CorpusMismatch(f"{how}\nexpected the known divergence [{entry.invariant}] on Triton {version}, "
                                 f"but the replay broke another promise:\n{v}") from v
        v.args = (f"{v.args[0]}\n{how}" + ("" if expected_here else
                  f"\n(recorded {entry.status} on Triton {entry.triton_version}: [{entry.invariant}] {entry.detail})"),)
        raise
    except ReplayDrift as d:
        raise type(d)(f"{how}\n{d}") from None
    return Verdict(entry.name, diverged=False, steps=len(log))


def _same_finding(entry: CorpusEntry, v: InvariantViolation) -> bool:
    if v.invariant != entry.invariant:
        return False
    known = next((d for d in KNOWN if d.key == entry.divergence), None)
    return known is None or known.explains(v.invariant, getattr(v, "got", ""), getattr(v, "expected", ""), v.detail)
