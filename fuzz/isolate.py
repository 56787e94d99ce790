"""Failures that need what ran before them, replayed and shrunk from a freshly loaded model.

Hypothesis shrinks a failure by replaying examples, each against the model as the last one left
it. A bug whose state outlives an example (a count across sequences, a slot's owner kept after
its sequence idled out) then fails on a replay that would pass on a fresh model, or passes on
one that would fail: Hypothesis calls it flaky, and the program it keeps does not replay.

Here the model is reloaded before every try (a new copy, nothing remembered), so a try's verdict
depends on its program alone: first the failing program by itself, then with the examples that
ran before it; the first that fails is cut down one chunk of steps at a time (delta debugging),
and the result starts with the reload, so its replay from the corpus strikes it again.

A reload takes ~1.4 s (Triton starts a new Python backend stub), so this is for the failures
Hypothesis could not replay, within a budget of its own.
"""
from __future__ import annotations

import time

import attrs

from . import nemesis
from .engine import HISTORY_EXAMPLES, FuzzSettings
from .invariants import InvariantViolation
from .replay import ReplayDrift, replay_steps
from .spec import ModelSpec
from .values import Fault, Kind, StepRecord

RELOAD = StepRecord(index=1, client=None, action="the model is reloaded (a fresh copy: nothing remembered)",
                    kind=Kind.FAULT, fault=Fault("reload"))
# How many earlier examples a failing program is tried with, in this order.
EXAMPLES_BACK = tuple(n for n in (0, 1, 2, 4, 8) if n <= HISTORY_EXAMPLES)


class ServerGone(Exception):
    """The server died (or did not come back from a reload) while a try ran: stop trying."""


def can_isolate(server) -> bool:
    """A fresh copy of the model needs the repository API (the embedded server, explicit model
    control). Under pytest-xdist each model's tests run on one worker (one xdist group per model,
    fuzz/xdist_support.py), so no other test has sequences on the model a reload replaces."""
    return nemesis.unsupported({"reload"}, server) is None


def from_fresh_model(server, spec: ModelSpec, violation: InvariantViolation, settings: FuzzSettings,
                     budget_s: float) -> InvariantViolation | None:
    """The violation again, from a freshly loaded model and shrunk, its program starting with the
    reload; None when no try broke the same promise within the budget."""
    deadline = time.monotonic() + budget_s
    history = tuple(getattr(violation, "history", ()))
    failing = tuple(violation.program)
    try:
        for back in EXAMPLES_BACK:
            if back > len(history) or time.monotonic() > deadline:
                return None
            before = [step for example in history[len(history) - back:] for step in example]
            found = _try(server, spec, before + list(failing), violation.invariant, settings)
            if found is not None:
                return _shrink(server, spec, found, settings, deadline)
    except ServerGone:
        return None  # the run reports the death itself
    return None


def _program(steps) -> list[StepRecord]:
    """The reload, then the steps, numbered from 1."""
    return [attrs.evolve(s, index=i) for i, s in enumerate([RELOAD, *steps], start=1)]


def _try(server, spec: ModelSpec, steps, invariant: str, settings: FuzzSettings) -> InvariantViolation | None:
    """Replays the steps after a reload; the violation if it broke `invariant`, else None (it kept
    every promise, broke another, or could not be replayed as recorded)."""
    try:
        replay_steps(server, spec, _program(steps), settings)
    except InvariantViolation as v:
        if v.invariant == "server_alive":
            raise ServerGone(str(v)) from None
        return v if v.invariant == invariant else None
    except ReplayDrift:
        return None
    return None


def _shrink(server, spec: ModelSpec, found: InvariantViolation, settings: FuzzSettings,
            deadline: float) -> InvariantViolation:
    """Delta debugging: first every request after a START at once (one try: bugs of slots and
    STARTs need none of them, and every later try replays a shorter program), then whole
    sequences (every step naming one id), then every request of a sequence after its START (a
    long run whose START the bug needs, not its middle), then single steps."""
    for units_of in (_every_continuation, _by_sequence, _continuations, _single_steps):
        found = _ddmin(server, spec, found, settings, deadline, units_of)
    return found


def _ddmin(server, spec: ModelSpec, found: InvariantViolation, settings: FuzzSettings,
           deadline: float, units_of) -> InvariantViolation:
    """Removes a chunk of units (each a list of step positions), keeps the removal when the rest,
    in its order, still fails the same way, and halves the chunks when none can go. Each try
    replays from a fresh model."""
    best, steps = found, _body(found)
    units = units_of(steps)
    chunk = max(1, len(units) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        removed, start = False, 0
        while start < len(units) and time.monotonic() < deadline:
            gone = {i for u in units[start:start + chunk] for i in u}
            kept = [s for i, s in enumerate(steps) if i not in gone]
            again = _try(server, spec, kept, found.invariant, settings) if kept else None
            # Strictly shorter only: a replay's drain adds its own ENDs to what it sends, so a
            # program without its teardown can fail again at the same length, and forever.
            if again is not None and len(_body(again)) < len(steps):
                best, removed = again, True
                steps = _body(again)
                units = units_of(steps)
            else:
                start += chunk
        if not removed:
            chunk //= 2
    return best


def _by_sequence(steps) -> list[list[int]]:
    """Step positions grouped by the sequence id they send on, in first-seen order; a step
    without a request goes with its client's last id, or alone."""
    groups: dict = {}
    last_of_client: dict = {}
    for i, s in enumerate(steps):
        if s.request is not None:
            key = last_of_client[s.client] = ("id", s.request.seq_id)
        else:
            key = last_of_client.get(s.client, ("step", i))
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def _continuations(steps) -> list[list[int]]:
    """Per sequence id, the positions of its requests other than STARTs, as one unit."""
    groups: dict = {}
    for i, s in enumerate(steps):
        if s.request is not None and not s.request.start:
            groups.setdefault(s.request.seq_id, []).append(i)
    return list(groups.values())


def _every_continuation(steps) -> list[list[int]]:
    """Every request that is not a START, as one unit."""
    unit = [i for group in _continuations(steps) for i in group]
    return [unit] if unit else []


def _single_steps(steps) -> list[list[int]]:
    return [[i] for i in range(len(steps))]


def _body(v: InvariantViolation) -> list[StepRecord]:
    """A replayed program without its leading reload: the steps up to the one that failed (the
    teardown's ENDs included, when it failed in the drain: the model saw them too)."""
    return [s for s in v.program if not (s.kind is Kind.FAULT and s.index == 1)]
