"""Failures that need what ran before them, replayed and shrunk from a freshly loaded model.

Hypothesis shrinks a failure by replaying examples, each against the model as the last one left
it. A bug whose state outlives an example (a count across sequences, a slot's owner kept after
its sequence idled out) then fails on a replay that would pass on a fresh model, or passes on
one that would fail: Hypothesis calls it flaky, and the program it keeps does not replay.

Here the model is reloaded before every try (a new copy, nothing remembered), so a try's verdict
depends on its program alone: first the failing program by itself (up to three times: a
crowd's batch is not composed the same way in every replay), then with the examples that ran
before it; the first that fails is cut down one chunk of steps at a time (delta debugging),
and the result starts with the reload, so its replay from the corpus strikes it again.

A reload takes ~1.4 s (Triton starts a new Python backend stub), so this is for the failures
Hypothesis could not replay, within a budget of its own, and its tries run on fresh copies of
the model loaded ahead, several at a time (fuzz/corpus/fresh.py: a try then waits for no load); what
they show is kept only once the model itself shows it after a reload (`_try`). What fails from a
fresh model (alone or after its history) is cut down with plain replays first, where they fail
too (not where they fail on the longest program a fresh model passed on: they are unfaithful then), each cut replayed as often as the failure's own rate asks, and what they leave is checked
from a fresh model again (`_cut_quickly`); the cuts shorter than what a fresh model confirmed
get more fresh tries with the time a shrink leaves (`_shorter_again`). A crowd's program (requests
sent at once) whose lone reloads passed is rated with plain replays before history is added, and
where they fail it is cut alone and its cuts get fresh tries until one fails (`_confirmed`): its
batches fail in some replays only, and history added to it fails as much by chance. A failure that does replay is polished
instead (`polish`): cut down with plain replays, and checked from a fresh model once at the end.
"""
from __future__ import annotations

import itertools
import math
import time

import attrs

from .. import nemesis
from . import shrink
from ..harness.engine import HISTORY_EXAMPLES, FuzzSettings
from .fresh import FreshCopies, renamed, replayable_on_copy
from ..checker.invariants import InvariantViolation
from ..checker.model import clip_id, key_of
from .replay import ReplayDrift, replay_steps
from ..spec import ModelSpec
from ..values import Fault, Kind, StepRecord

RELOAD = StepRecord(index=1, client=None, action="the model is reloaded (a fresh copy: nothing remembered)",
                    kind=Kind.FAULT, fault=Fault("reload"))
# How many earlier examples a failing program is tried with, in this order.
EXAMPLES_BACK = tuple(n for n in (0, 1, 2, 4, 8) if n <= HISTORY_EXAMPLES)
# How many times a plain replay of a failure Hypothesis could not replay is tried before it counts
# as passing: seen live, a crowd's batch-composition failure came back in 3 of 5 replays.
FLAKY_TRIES = 3
# Replays from a fresh model a failure of requests sent at once passes before it counts as needing
# what ran before it (replays_only_on_history): one that fails 1 replay in 4 passes them all 1 time in 18.
AT_ONCE_FRESH_TRIES = 10
# How many times a failing program is tried alone from a fresh model before history is added to it.
ALONE_TRIES = FLAKY_TRIES
# Plain replays of a failing program that tell how often it fails (`tries_for`), and the most
# replays a cut of it gets before it counts as passing: a crowd's composition bug fails in 1 to 8
# of 20 plain replays (measured live), where three tries threw a good cut away half the time.
RATE_REPLAYS = 8
MAX_TRIES = 10
# The fewest replays a cut of a program with requests sent at once (a crowd, a burst) gets, however
# often the whole failed: the whole had more chances to put its rows in one batch than a cut of it
# has (seen: a crowd that failed 4 of 4 replays cut plainly to 14 steps, one replay a cut, and from
# a fresh model, a try a cut, to the minimal 7).
HELD_TRIES = 3
# A cut of a program with requests sent at once gets, besides its tries, replays until they took
# HELD_TIME_SHARE times as long as one replay of the whole, up to HELD_MAX_TRIES: the whole had a
# chance to compose a failing batch at each of its groups, a cut has fewer and replays in as much
# less time (measured: a burst of two on two streams shares one execution in 8 of 60 replays; a
# 10-step crowd program failed 2 of 40 plain replays, a 12-step one 18 of 40).
HELD_TIME_SHARE = 2.0
HELD_MAX_TRIES = 30
# ... and for no more than this share of the time the cuts have: a long program's replay takes
# seconds, and ddmin needs many cuts (seen: 30 replays of the first cut of an 862-step crowd
# program, 1.3 s a replay, took the time of every other cut).
HELD_CUT_SHARE = 0.1
# Plain replays of a program with requests sent at once, while none failed, before it counts as
# not failing in plain replays (RATE_REPLAYS for other programs): such a failure can come back in
# 1 replay of 20.
HELD_RATE_REPLAYS = 32
# A failing program that sends requests at once is judged replayable (kept for the corpus as a
# regression) only where JUDGE_NEED of JUDGE_REPLAYS replays of it, as it is, break its promise
# again: one lucky replay of a START pipelined right behind a START+END on its id (it fails when
# it gets the other slot, 1 replay in 20 here) once called it replayable, and the next two
# replays passed (CI, twice). A program sent one request at a time replays alike: one replay.
JUDGE_REPLAYS, JUDGE_NEED = 4, 3
# How many more rounds of fresh tries the plain cuts shorter than a confirmed one get, at each of
# the two points `_shorter_again` runs: bounded, so that a cut that fails only in plain replays
# (state a plain try left) does not take the whole budget every time.
AGAIN_ROUNDS = 3
# The share of the time left that plain cuts get (`_cut_quickly`): a third, and for a program
# with requests sent at once, two thirds. Such a failure comes back in some replays only, so a
# try from a fresh model (one replay, a second or more) passes by chance and cuts nothing, where
# a plain try replays a cut many times in that second (seen: a 15-step crowd cut to 14 by the
# reloads' shrink in 11 s, where plain cuts had gone from 62 steps to 14 in 7 s).
PLAIN_SHARE = 1 / 3
HELD_PLAIN_SHARE = 2 / 3
# The most of that share each of a crowd's cores (shrink.crowd_cores) is rated for, before the
# whole program is.
CORE_SHARE = 1 / 8
# A program longer than this is rated first on its focus cuts (shrink.focused: the sequences it
# ended with, up to FOCUS_CORES of them), each for CORE_SHARE of what is left, as a crowd's cores
# are: a plain replay of thousands of steps takes seconds, and rating such a program whole took a
# shrink's whole budget (seen: a 4-request bug behind a 1025-request run kept at 7416 steps, and
# a cancel group's bug at the end of 2102 steps, its whole never failing again from a fresh model).
FOCUS_FIRST_STEPS = 60
FOCUS_CORES = 5
# A polish try's ids move by its number times this (odd: the low bits differ from try to try), or
# are multiplied by an odd multiple of it (_moved).
POLISH_STRIDE = 0x9E3779B97F4A7C15
_POLISH_TRIES = itertools.count(1)


class ServerGone(Exception):
    """The server died (or did not come back from a reload) while a try ran: stop trying."""


@attrs.define
class Tried:
    """What the shrinks of one failure have shown of its program alone, so that a later one does not
    spend its budget showing it again (seen: a cache's failure that needs an earlier example, its
    fresh shrink rating the cores polish had just rated and retrying the reloads that had just
    passed, ddmin left 5 s of 30 for 228 steps, minimal 102)."""
    # the programs (`_key`) whose plain replays were rated in full and never failed: polish's and
    # _cut_quickly's, the program itself, its cores, it sent in turn
    passed: set = attrs.Factory(set)
    # each program (`_key`) whose plain replays all passed -> how many there were: a rating cut
    # short by its share goes on from there (seen: a crowd's eight cores rated for 0.1-0.2 s each
    # by the quick cut of its example, then again from the start, 10 s of a 30 s budget)
    replays_passed: dict = attrs.Factory(dict)
    # the length of the program the last plain cutting's focus left, where it ran in full (None:
    # it did not): a cut no longer than that was focused
    focused: int | None = None
    passed_fresh: bool = False  # it passed every replay from a fresh model as it is (replays_only_on_history)
    judged_at_once: bool = False  # replays_only_on_history judged it as sent at once (a crowd's luck, maybe)


def can_isolate(server) -> bool:
    """A fresh copy of the model needs the repository API (the embedded server, explicit model
    control). Under pytest-xdist each model's tests run on one worker (one xdist group per model,
    fuzz/xdist_support.py), so no other test has sequences on the model a reload replaces."""
    return nemesis.unsupported({"reload"}, server) is None


def from_fresh_model(server, spec: ModelSpec, violation: InvariantViolation, settings: FuzzSettings,
                     budget_s: float, tried: Tried | None = None) -> InvariantViolation | None:
    """The violation again, from a freshly loaded model and shrunk, its program starting with the
    reload; None when no try broke the same promise within the budget. The reload stays: such a
    failure needs what ran before it, and plain replays that fail could share a lucky phase of a
    count across requests. A shrink's tries run on fresh copies loaded ahead (fuzz/corpus/fresh.py)
    where the model can be copied, and what fails on one again on the model after a reload.
    What earlier shrinks showed of the program alone (`tried`) is not tried again."""
    deadline = time.monotonic() + budget_s
    tried = tried or Tried()
    history = tuple(getattr(violation, "history", ()))
    failing = tuple(violation.program)
    in_turn = shrink.in_turn(failing)  # a client's pipelined requests sent in turn, as they were logged once
    fresh = FreshCopies.of(server, spec)
    before: list = []
    try:
        for back in EXAMPLES_BACK:
            if back > len(history) or time.monotonic() > deadline:
                return None
            passed = before + list(failing)  # the longest program a fresh model passed on (past back 0)
            before = [step for example in history[len(history) - back:] for step in example]
            # On the model itself: what is found here is the shrink's fallback, shown as it is kept.
            # Alone, up to ALONE_TRIES times: a crowd's batch shows a bug in some replays only, and
            # a program with history is hundreds of steps longer.
            found = early = quick = None
            cuts: list = []
            if back == 0 and len(failing) > FOCUS_FIRST_STEPS:
                # A long program's fresh tries take seconds each (and a cancel's or a batch's
                # failure comes back in some only): the sequences it ended with first, cut
                # with plain replays and confirmed from a fresh model.
                # A quarter of the budget: where plain cuts mean nothing (a leak still in the
                # model fails every plain cut, and no fresh one), the whole tries get the rest.
                quick, cuts = _cut_quickly(server, spec, violation, settings,
                                           time.monotonic() + budget_s / 4, whole=False, tried=tried)
                found = early = quick
            # A whole try cannot stop midway: none starts that would end past the deadline (seen:
            # three tries of 19 s each of a 2144-step program on a 20 ms model, from 11 s into a
            # 30 s budget, the shrink ending at 109 s).
            whole_by = deadline - sum(map(_span, history[len(history) - back:])) - _span(failing)
            if found is None and not (back == 0 and tried.passed_fresh):
                found = _first_failure(lambda: _try(server, spec, before + list(failing), violation.invariant,
                                                    settings), ALONE_TRIES if back == 0 else 1, whole_by)
            if found is None and back == 0 and not sends_at_once(in_turn) and time.monotonic() < whole_by and \
                    (slow := shrink.paced(in_turn)) != list(failing):
                # Replays send faster than the campaign did: once more with its gaps between steps
                # (a bug of time between requests; seen: a restart 0.1 s after a sequence's last
                # request kept its sum, found in 381 steps and never replayed).
                found = _try(server, spec, slow, violation.invariant, settings)
            if found is None and back == 0 and sends_at_once(failing):
                # A crowd's batch shows the bug in some replays only: plain replays of it alone
                # (ms each, where a reload takes 1.4 s) before history is added, which makes a
                # program hundreds of steps long that then fails as much by chance (seen: 1619
                # steps kept of a 7-step bug, its 68-step example having passed three reloads).
                quick, more = _cut_quickly(server, spec, violation, settings, deadline, tried=tried)
                cuts += more  # the early plain cuts too: `spread` takes them by length
                if quick is None and cuts:
                    # Plain replays of it alone fail: it needs no history, only a fresh model's
                    # replay to fail as well, which a short cut's does in few of its replays (seen:
                    # cut to 6 steps, five reloads passed, and the 98 steps with history kept).
                    half = time.monotonic() + (deadline - time.monotonic()) / 2
                    quick = _confirmed(server, spec, violation.invariant, settings, cuts, half, fresh)
                    if quick is None:
                        return None
                found = quick
            elif found is not None and early is None:
                # It may fail without a fresh model too, or need only what the history left
                # behind, which a cut of the whole keeps. But where the longest program a fresh
                # model passed on fails in plain replays all the same, what a plain replay leaves
                # behind decides them (a count since the model loaded, in another phase each
                # replay): plain cuts mean nothing, and the reloads get the time (seen: a tenth
                # START adding a slot's last sum, cut plainly to 1 step, half the budget spent
                # confirming such cuts from fresh models, and 41 steps left). A plain example
                # whose lone fresh tries passed by chance is shrunk by reloads too (rare: sent one
                # request at a time, it replays alike). A crowd's plain failures can be a batch's
                # luck, not a leftover: its example alone was rated at back 0, and never failed.
                # (polish's plain replays of the program alone, where that is `passed`, said so already)
                shown = passed == list(failing) and _key(_without_slow(passed, spec)) in tried.passed
                unfaithful = bool(back) and not sends_at_once(in_turn) and not shown and \
                    _fails_plainly(server, spec, passed, violation.invariant, settings, deadline)
                quick, more = (None, []) if unfaithful else _cut_quickly(server, spec, found, settings, deadline,
                                                                         tried=tried)
                cuts = more if unfaithful else cuts + more
            if found is not None:
                # The plain cuts shorter than what a fresh model confirmed, tried again for half
                # the time left, before a reload a try cuts the rest: that seldom gets far with a
                # long program (seen: 886 steps, one try in 5 s, where plain cuts had reached 10).
                half = time.monotonic() + (deadline - time.monotonic()) / 2
                best = _shorter_again(server, spec, quick or found, cuts, settings, half, fresh)
                # A plain cut was focused by the plain ddmin that made it: its cuts by sequence
                # again, a reload each, found nothing in every shrink traced (6 s of a 30 s budget).
                focused = quick is not None and tried.focused is not None and len(_body(best)) <= tried.focused
                best = _shrink(server, spec, best, settings, deadline, fresh, focused=focused)
                return _shorter_again(server, spec, best, cuts, settings, deadline, fresh)
    except ServerGone:
        return None  # the run reports the death itself
    finally:
        if fresh is not None:
            fresh.close()
    return None


def _fails_plainly(server, spec: ModelSpec, steps, invariant: str, settings: FuzzSettings, deadline: float) -> bool:
    """Whether any of up to RATE_REPLAYS plain replays of `steps` (without its slow steps, ids
    moved) breaks the promise, within a tenth of the time to `deadline`. A leftover that shows
    less often than that (a count of a long period) goes unseen, and plain cuts are made."""
    body = _without_slow(steps, spec)
    until = time.monotonic() + (deadline - time.monotonic()) / 10
    return bool(body) and _first_failure(lambda: _moved(server, spec, body, invariant, settings),
                                         RATE_REPLAYS, until) is not None


def _slow(step: StepRecord) -> bool:
    """A step that makes a plain replay slow: an idle timeout waited out, a restart or a reload
    (nemesis.SERVER_FAULTS: seconds each). Plain replays cut a program without them, where it
    fails without them. A client's fault (a cut, calls given up) takes milliseconds and stays:
    a cancel's bug needs its cancels (seen: a give_up round that failed a spared call, at the
    end of 5382 steps, dropped from every plain cut, and the whole kept)."""
    return step.kind in shrink.WAITS or (step.kind is Kind.FAULT and (
        step.fault is None or step.fault.name in nemesis.SERVER_FAULTS))


def _without_slow(steps, spec: ModelSpec) -> list[StepRecord]:
    """The steps but the slow ones (`_slow`), and every fault after the first of them: a fault
    can need what a slow step did (a give_up round takes every slot a wait freed, and a replay
    that finds them held cannot strike it)."""
    slow, after = set(), False
    for i, s in enumerate(steps):
        after = after or _slow(s)
        if after and (s.kind is Kind.FAULT or _slow(s)):
            slow.add(i)
    return shrink.without(list(steps), slow, spec) if slow else list(steps)


def _key(steps) -> tuple:
    """A program as its replays see it: each step's kind, client, transport and wait, and what it
    sends (its step numbers aside)."""
    return tuple((s.kind, s.client, s.via, s.wait_s, s.fault,
                  None if s.request is None else (key_of(s.request.seq_id), s.request.value, s.request.start,
                                                  s.request.end, s.request.dtype, s.request.timeout_us))
                 for s in steps)


def _shape(key: tuple) -> tuple:
    """A program's `_key` with its ids as `_moved` cannot change them: each integer id (and each
    string that names one) as its distance from the program's first, modulo 2**64 (shifted moves
    them all by one offset, so twins stay twins), other strings without the tags of earlier
    tries, the misuse ids 0 and "" as they are, each with its type. A program and its copy with
    the ids moved are one shape; programs whose ids relate otherwise are not. (A copy moved by a
    factor, shrink.undone_by_shifting's, is another shape: rated again, not taken for another.)"""
    first = None

    def id_shape(k):
        nonlocal first
        kind, seq_id = k
        number = seq_id if kind == "u" else int(seq_id) if seq_id.isdigit() and 0 < int(seq_id) < 2**64 else None
        if seq_id in (0, "") or number is None:
            return k if kind == "u" or seq_id == "" else (kind, shrink.EARLIER_TAGS.sub("", seq_id, count=1))
        first = number if first is None else first
        return (kind, "#", (number - first) % 2**64)

    def fault_shape(fault):
        return fault if fault is None or not fault.ids else \
            attrs.evolve(fault, ids=[id_shape(key_of(i)) for i in fault.ids])
    return tuple((*k[:4], fault_shape(k[4]), None if k[5] is None else (id_shape(k[5][0]), *k[5][1:]))
                 for k in key)


def _within(steps, larger) -> bool:
    """Whether every step of `steps` is a step of `larger` as it is there (by its number): a cut
    of it that removed steps and folded none. Where a program's plain replays passed, such a cut
    is taken to pass too, as ddmin takes a failure to need what it kept (a heuristic: a bug of a
    sequence's age or of a crowd's composition can break it, and a cut is then lost, never a
    finding made): a core of the sequences it ended with that passed says the cores of fewer of
    them would (seen: the last half of a program that needs a hundred sequences, then its last 4
    and 8 rated, 32 replays each)."""
    there = {s.index: s for s in larger}
    return len(there) == len(larger) and all(there.get(s.index) == s for s in steps)


def _unless_rated(try_, passed: set):
    """`try_`, but None at once for a program shaped as one of `passed` (`_key`s of programs
    rated in full that passed): ddmin's focus cuts a program as its cores were cut, and can cut
    a program with history added to the program alone, its ids moved (seen: polish's rating of
    a program repeated by the shrink from a fresh model)."""
    shapes = {_shape(key) for key in passed}
    return lambda steps: None if _shape(_key(steps)) in shapes else try_(steps)


def _rated_noting(plain, steps, until: float, tried: Tried) -> tuple[InvariantViolation | None, "Rate"]:
    """`_rated`, going on from the replays of `steps` that `tried` saw pass; where none of its
    replays failed, their count noted there, and where it rated `steps` in full (before `until`),
    the program added to its `passed`."""
    key = _key(steps)
    found, rate = _rated(plain, steps, until, tried.replays_passed.get(key, 0))
    if found is None:
        tried.replays_passed[key] = rate.replays
        if time.monotonic() < until:
            tried.passed.add(key)
    return found, rate


def _cores(steps, spec: ModelSpec) -> list:
    """The short programs a failing program is rated on before it is whole: its crowd's cores
    (shrink.crowd_cores), and where it is long (FOCUS_FIRST_STEPS), its focus cuts."""
    cores = shrink.crowd_cores(steps, spec)
    if len(steps) > FOCUS_FIRST_STEPS:
        cores += [c for c in shrink.focused(steps, spec, FOCUS_CORES) if c not in cores]
    return cores


def _cut_quickly(server, spec: ModelSpec, found: InvariantViolation, settings: FuzzSettings,
                 deadline: float, whole: bool = True, tried: Tried | None = None) -> tuple[InvariantViolation | None, list]:
    """`found` (it failed from a fresh model, or, not `whole`, in the campaign) cut down with plain replays, ids moved (ms a
    try, where a reload takes 1.4 s), for up to PLAIN_SHARE of the time left (HELD_PLAIN_SHARE
    where it sends requests at once), as long as they fail
    too: (the shortest cut a fresh model fails on too (`_first_fresh`: its program starts with
    the reload), or None when plain replays do not fail or a fresh model fails on no cut; every
    cut plain replays failed on, for `_shorter_again`). A failure
    that Hypothesis could not replay, or did not finish shrinking, often needs no history at all,
    only a batch that the server does not compose the same way every time (a crowd's): a reload
    per try would leave it long. Each cut gets as many replays as the program's own failure rate
    asks for (`_rated`). A program that sends requests at once starts from its crowd's cores
    where their replays fail (`shrink.crowd_cores`), and a long program from the sequences it ended
    with (`_cores`): a long one is slow to rate, a core fast. Not `whole`: the cores only.
    `tried` (what the shrinks of one failure showed: the programs whose plain replays were rated in
    full and passed, `_key`): such a program is not rated again (with history
    added, a long program's last sequences are the ones its example alone ended with: seen,
    seven cores rated twice, 9 s of a 30 s budget, and ddmin left 5.8 s for 122 steps)."""
    tried = tried or Tried()
    passed = tried.passed
    tried.focused = None
    rated: list = []  # the programs rated here in full whose replays all passed
    fraction = HELD_PLAIN_SHARE if sends_at_once(found.program) else PLAIN_SHARE
    share = time.monotonic() + (deadline - time.monotonic()) * fraction
    plain = lambda steps: _moved(server, spec, steps, found.invariant, settings)  # noqa: E731
    # A crowd's failure is first rated on the sequences of the crowd that failed (`crowd_cores`),
    # a long program's on the sequences it ended with (`_cores`), each core for an eighth of the
    # share at most: short, they replay fast. The program sent in turn is as long as the whole:
    # after a long program's cores, and only where `whole`.
    cores = [(core, CORE_SHARE) for core in _cores(_body(found), spec)]
    in_turn = shrink.plainly(_body(found))
    first = [(in_turn, CORE_SHARE)] if in_turn != _body(found) and whole else []
    long_ = len(_body(found)) > FOCUS_FIRST_STEPS
    for body, part in (cores + first if long_ else first + cores) + ([(_body(found), 1 / 2)] if whole else []):
        # Every plain try of a program that waits would take seconds too: without its waits (and
        # server faults, and the faults after them: `_without_slow`), or not at all. Most
        # programs that fail fail without them (the `pause` that waits for slots to free up
        # mid-example is in many).
        # Rated for half the share at most, so that the cuts get the rest (seen: 8 replays of a
        # 120-step and of a 359-step program took the whole 9.5 s share, and no cut was tried).
        body = _without_slow(body, spec)
        if _key(body) in passed or any(_within(body, other) for other in rated):
            continue  # rated, or a cut of one rated, and no replay failed
        rating = time.monotonic() + (share - time.monotonic()) * part
        start, rate = _rated_noting(plain, body, rating, tried)
        if start is not None:
            break
        if _key(body) in passed:
            rated.append(body)
    else:
        return None, []
    cuts = [list(start.program)]  # every program a plain replay failed on, each shorter than the one before
    replayed = _unless_rated(_replayed(plain, rate, share), passed)

    def kept(steps):
        again = replayed(steps)
        if again is not None:
            cuts.append(list(again.program))
        return again
    shrink.ddmin(start, kept, lambda v: list(v.program), spec, share,
                 on_focus=lambda v: setattr(tried, "focused", len(v.program)))
    return _first_fresh(server, spec, found.invariant, settings, cuts, deadline), cuts


def _shorter_again(server, spec: ModelSpec, best: InvariantViolation, cuts: list, settings: FuzzSettings,
                   deadline: float, fresh: FreshCopies | None = None) -> InvariantViolation:
    """The plain cuts shorter than `best` tried from a fresh model again, shortest first (each
    next one at least half as long again, as `_first_fresh` takes them), for up to AGAIN_ROUNDS
    rounds, until one fails (a shorter result) or time is up (`best`). A crowd's short cut
    fails in some replays only, and `_first_fresh`'s three tries of it can all pass: seen, a
    crowd cut to its minimal 6 steps by plain replays, kept at 12, and the reloads' shrink of that
    ending at 8 with 9 s of its budget unspent."""
    shorter = [c for c in cuts if len(c) < len(_body(best))]
    return _confirmed(server, spec, best.invariant, settings, shorter, deadline, fresh,
                      rounds=AGAIN_ROUNDS, shorter_than=len(best.program)) or best


@attrs.frozen
class Rate:
    """How a program's cuts are replayed: `tries` replays each (`tries_for` the rate the program
    failed at), and where it sends requests at once (`held`), replays until they took
    HELD_TIME_SHARE times `replay_s` (one replay of the whole), up to HELD_MAX_TRIES (`_replayed`)."""
    tries: int
    held: bool = False
    replay_s: float = 0.0
    always: bool = False  # the program failed every replay it was rated on
    share: float = 1.0  # the share of those replays that failed
    replays: int = 0  # where none failed: how many there were


def sends_at_once(steps) -> bool:
    """Whether the program sends requests at once (a crowd, a burst, a held batch)."""
    return any(s.kind is Kind.HELD for s in steps)


def _span(steps) -> float:
    """How long the program took when it ran (its steps' recorded times; 0 where none are known).
    Of one example each: the time between examples is no replay's."""
    times = [t for s in steps for t in (s.sent_at, s.done_at) if t is not None]
    return max(times) - min(times) if times else 0.0


def _rated(plain, steps, until: float, passed: int = 0) -> tuple[InvariantViolation | None, Rate]:
    """(the first failure of up to RATE_REPLAYS plain replays of `steps` (HELD_RATE_REPLAYS, while
    none failed, where it sends requests at once), how its cuts are replayed: HELD_TRIES at least
    where it sends requests at once), or (None, Rate(0, replays=all of them)) when none failed.
    `passed`: replays of it made before, which all passed. A cut of a program that failed 2 of 8
    replays, failing as often, must not be thrown away on three unlucky replays."""
    held, results, began = sends_at_once(steps), [None] * passed, time.monotonic()
    while time.monotonic() < until and (len(results) < RATE_REPLAYS
                                        or (held and len(results) < HELD_RATE_REPLAYS and not any(results))):
        results.append(plain(steps))
        if len(results) == RATE_REPLAYS // 2 and all(results):
            break  # fails every time: one replay a cut
    failed = [r for r in results if r is not None]
    if not failed:
        return None, Rate(0, replays=len(results))
    tries = tries_for(len(failed), len(results))
    replay_s = (time.monotonic() - began) / (len(results) - passed)
    always, share = len(failed) == len(results), len(failed) / len(results)
    return failed[0], (Rate(max(tries, HELD_TRIES), True, replay_s, always, share) if held
                       else Rate(tries, always=always, share=share))


def _replayed(plain, rate: Rate, until: float):
    """A try for ddmin: a cut replayed as `rate` says (each replay started before `until`), its
    first failure. A cut of a program that sends requests at once is replayed for no more than
    HELD_CUT_SHARE of the time to `until` once it had one replay: a cut that waits a second in
    each replay would take its tries' worth of the time every other cut needs."""
    cap = HELD_CUT_SHARE * max(0.0, until - time.monotonic())
    floor = min(HELD_TIME_SHARE * rate.replay_s, cap)

    def more(n: int, spent: float) -> bool:
        if not rate.held:
            return n < rate.tries
        return n < HELD_MAX_TRIES and (spent < floor or (n < rate.tries and spent < cap))

    def replays(steps):
        began, n = time.monotonic(), 0
        while time.monotonic() < until and (n == 0 or more(n, time.monotonic() - began)):
            found = plain(steps)
            n += 1
            if found is not None:
                return found
        return None
    return replays


def tries_for(failed: int, replays: int) -> int:
    """How many replays a cut gets before it counts as passing, when its program failed `failed`
    of `replays`: enough that a cut failing as often is missed at most 1 time in 10 (one, when the
    program failed every time)."""
    if failed >= replays:
        return 1
    rate = failed / replays
    return min(MAX_TRIES, math.ceil(math.log(0.1) / math.log(1 - rate)))


def _first_fresh(server, spec: ModelSpec, invariant: str, settings: FuzzSettings, cuts: list,
                 deadline: float) -> InvariantViolation | None:
    """The shortest of the quick cuts that fails from a fresh model too (up to FLAKY_TRIES
    tries each), tried from the shortest up, each next one at least half as long again, for up to
    half the time left: a crowd's batch is composed otherwise after a reload in some replays,
    and one unlucky check of the shortest must not throw the whole cut away (seen: cut to the
    minimal 6 steps, checked twice from a fresh model, thrown away, and the reloads' shrink of
    the whole program then ended at 13)."""
    until = time.monotonic() + (deadline - time.monotonic()) / 2
    for steps in spread(cuts):
        if time.monotonic() >= until:
            break
        again = _first_failure(lambda: _try(server, spec, steps, invariant, settings), FLAKY_TRIES, until)
        if again is not None:
            return again
    return None


def _confirmed(server, spec: ModelSpec, invariant: str, settings: FuzzSettings, cuts: list, until: float,
               fresh: FreshCopies | None, rounds: int | None = None,
               shorter_than: float = math.inf) -> InvariantViolation | None:
    """The first of the cuts (`spread`, shortest first, round after round until `until`, or for
    `rounds` rounds) that fails from a fresh model (on a copy first, where there are copies) with
    a program shorter than `shorter_than`, or None."""
    kept = spread(cuts)
    for _ in itertools.count() if rounds is None else range(rounds):
        if not kept or time.monotonic() >= until:
            break
        for steps in kept:
            if time.monotonic() >= until:
                break
            again = _try(server, spec, steps, invariant, settings, fresh=fresh)
            if again is not None and len(again.program) < shorter_than:
                return again
    return None


def spread(cuts: list) -> list:
    """The cuts from the shortest up, each kept one at least half as long again as the one before:
    a few fresh tries that span the lengths, not one for every cut."""
    kept = []
    for cut in sorted(cuts, key=len):
        if not kept or 2 * len(cut) >= 3 * len(kept[-1]):
            kept.append(cut)
    return kept


def _failing(attempt, need: int, times: int, until: float = math.inf) -> InvariantViolation | None:
    """The first failure of up to `times` calls of `attempt` (started before `until`), where `need`
    of them fail; None where they cannot (it stops as soon as it knows)."""
    first, failed = None, 0
    for n in range(times):
        if failed + (times - n) < need or time.monotonic() >= until:
            break
        found = attempt()
        if found is not None:
            first, failed = first or found, failed + 1
            if failed >= need:
                return first
    return None


def _first_failure(attempt, times: int, until: float = float("inf")) -> InvariantViolation | None:
    """The first of up to `times` calls of `attempt` (started before `until`) that fails, or None."""
    for _ in range(times):
        if time.monotonic() >= until:
            break
        found = attempt()
        if found is not None:
            return found
    return None


def polish(server, spec: ModelSpec, violation: InvariantViolation, settings: FuzzSettings,
           budget_s: float, tried: Tried | None = None) -> InvariantViolation | None:
    """A failure that replays on its own, cut down further than Hypothesis could (fuzz/corpus/shrink.py),
    or None when nothing shorter breaks the same promise. Its tries are plain replays (a few ms,
    not a reload's 1.4 s), each with the ids moved, so that no try sees state an earlier one left
    keyed by id. What they find is kept only if it breaks the promise from a freshly loaded model
    too, so a count or a slot that outlived a try cannot have made it fail; it keeps the reload
    as its first step unless two more plain replays fail as well (it then needs no fresh model).
    A failure that does not come back in every replay gets more replays a cut (`_rated`). What
    its plain replays showed goes into `tried`."""
    deadline = time.monotonic() + budget_s
    plain = lambda steps: _moved(server, spec, steps, violation.invariant, settings)  # noqa: E731
    tried = tried or Tried()
    passed = tried.passed
    try:
        found, rate, rated = None, None, []
        if len(violation.program) > FOCUS_FIRST_STEPS:
            # A long one from the sequences it ended with first: a replay of it whole (or sent
            # in turn, as long) takes seconds.
            for core in shrink.focused(list(violation.program), spec, FOCUS_CORES):
                if any(_within(core, other) for other in rated):
                    continue  # a cut of a core whose replays passed
                found, rate = _rated_noting(plain, core, time.monotonic() + (deadline - time.monotonic()) * CORE_SHARE,
                                            tried)
                if found is not None:
                    break
                if _key(core) in passed:
                    rated.append(core)
        in_turn = shrink.plainly(violation.program)
        if found is None and in_turn != list(violation.program):
            # Sent one at a time it cuts faster (plain requests fold, and it is rated as such),
            # where its bug needs no execution its pipelined requests shared, and no cancel.
            found, rate = _rated_noting(plain, in_turn, time.monotonic() + budget_s * CORE_SHARE, tried)
        if found is None:
            found, rate = _rated_noting(plain, violation.program, deadline, tried)
        if found is None:
            return None  # it fails only with its own ids (a boundary id) or after its own history
        shortest = shrink.ddmin(found, _unless_rated(_replayed(plain, rate, deadline), passed),
                                lambda v: list(v.program), spec, deadline).program
        if len(shortest) >= len(violation.program):
            return None
        # A program sent at once that failed every replay asks its cut to fail twice from a fresh
        # model: its cuts get up to HELD_MAX_TRIES replays each, and a cut whose batch fails 1 time
        # in 20 (a START right behind an END on its id that gets another slot) once passed that
        # way on one lucky failure, and then replayed by no one.
        if rate.held:
            # and a cut sent at once must fail at least half as often as its program did: a cut
            # accepted on one lucky replay of HELD_MAX_TRIES replays no one (seen in CI, the same cut)
            again, cut = _rated(plain, shortest, time.monotonic() + min(10.0, max(1.0, 2 * RATE_REPLAYS * rate.replay_s)))
            if again is None or cut.share < rate.share / 2:
                return None
        need = 2 if rate.held and rate.always else 1
        fresh = _failing(lambda: _try(server, spec, shortest, violation.invariant, settings), need,
                         (1 if rate.tries == 1 else FLAKY_TRIES) + need - 1)
        if fresh is None:
            return None
        fresh = _without_reload(server, spec, fresh, settings)
        return fresh if len(fresh.program) < len(violation.program) else None
    except ServerGone:
        return None  # the run reports the death itself


# Steps a replay sends and waits for one at a time (a backlogged START and its answer, a reload
# among faults): a program of these alone that passed from a fresh model three times did not pass
# by its timing's luck. Requests sent at once (a crowd, a shared sequence, a cancel's group) can.
_SEQUENTIAL = frozenset(k for k in Kind if k.traits.sequential)


def _sequential(steps) -> bool:
    return all(s.kind in _SEQUENTIAL or (s.kind is Kind.FAULT and s.fault.name == "reload") for s in steps)


def _at_once(steps) -> bool:
    """A program of plain steps and requests a client sent at once (HELD), no fault but a reload."""
    return sends_at_once(steps) and _sequential(s for s in steps if s.kind not in (Kind.HELD, Kind.HELD_ANSWER))


def replays_only_on_history(server, spec: ModelSpec, violation: InvariantViolation, settings: FuzzSettings,
                            until: float, tried: Tried | None = None) -> bool:
    """Whether a failure that replays here passes from a freshly loaded model (started before
    `until`): it failed only on what earlier examples left in the model (a table that leaks), so
    its program reproduces nothing elsewhere. A program of steps sent one at a time is judged on
    FLAKY_TRIES reloads, and so is a client's pipelined requests sent in turn, where that fails in
    a plain replay too. Else a program that sends requests at once (`_at_once`) is judged as it is,
    on AT_ONCE_FRESH_TRIES reloads, and `tried.judged_at_once` says so: such a verdict may be a
    crowd's luck (it composes otherwise after a reload), and the caller keeps it replaying unless a
    shrink from a fresh model finds a cut. (Unjudged, such a failure was reported as replaying with a
    program that passes every fresh replay: a scale for every sum that only grows, which polish's
    fresh try had reset, so that the program sent in turn passed a plain replay too.) Any other
    program is not judged. Where it passed as it is, `tried` says so."""
    program, times = list(violation.program), FLAKY_TRIES
    try:
        if not _sequential(program):
            turned = shrink.in_turn(program)
            if _sequential(turned) and \
                    _try(server, spec, turned, violation.invariant, settings, reload=False) is not None:
                program = turned
            elif _at_once(program):
                times = AT_ONCE_FRESH_TRIES
                if tried is not None:
                    tried.judged_at_once = True
            else:
                return False
        tries = 0

        def attempt():
            nonlocal tries
            tries += 1
            return _try(server, spec, program, violation.invariant, settings)

        passed = _first_failure(attempt, times, until) is None and tries == times
        if tried is not None and program == list(violation.program):
            tried.passed_fresh = passed
        return passed
    except ServerGone:
        return False  # the run reports the death itself


def replays_reliably(server, spec: ModelSpec, violation: InvariantViolation, settings: FuzzSettings) -> bool:
    """Whether the violation's program, replayed as it is, breaks the same promise again: once,
    or JUDGE_NEED times of JUDGE_REPLAYS where it sends requests at once (`sends_at_once`), the replays
    started within a shrink's budget. A server that died in a replay ends them: not replayable
    (the run reports the death itself)."""
    need, times = (JUDGE_NEED, JUDGE_REPLAYS) if sends_at_once(violation.program) else (1, 1)
    attempt = lambda: _replay(server, spec, violation.program, violation.invariant, settings)  # noqa: E731
    try:
        return _failing(attempt, need, times, time.monotonic() + settings.shrink_budget_s) is not None
    except ServerGone:
        return False


def _moved(server, spec: ModelSpec, steps, invariant: str, settings: FuzzSettings) -> InvariantViolation | None:
    """A plain replay (no reload) with every id moved by a new offset (shrink.shifted), or, where
    the failing id's twin is of a kind an offset undoes (a negation, both aligned:
    shrink.undone_by_shifting), times a new odd factor: plain cuts of such a twin bug failed
    never, and its shrink from a fresh model, a reload a try, kept 2203 and 605 lines of it."""
    n = next(_POLISH_TRIES)
    if spec.id_bits == 64 and shrink.undone_by_shifting(steps):
        moved = shrink.shifted(steps, 0, shrink.try_tag(n), factor=(2 * n + 1) * POLISH_STRIDE % 2**64)
    else:
        moved = shrink.shifted(steps, n * POLISH_STRIDE % 2**64, shrink.try_tag(n))
    return _try(server, spec, moved, invariant, settings, reload=False)


def _without_reload(server, spec: ModelSpec, fresh: InvariantViolation, settings: FuzzSettings) -> InvariantViolation:
    """A program that failed from a fresh model, without its leading reload when plain replays of
    the rest (ids moved) fail too, after differing amounts of other traffic: 0, 1 and 2 whole
    sequences on ids of their own first. Then it needs no fresh model. A count the model keeps
    across sequences (requests, modulo some n) can stand alike for two tries in a row; the traffic
    between them moves it. A failure inside that traffic keeps the reload too. Else as it is."""
    body = _body(fresh)
    plain = []
    for before in range(3):
        traffic = _other_traffic(spec, body, before)
        if traffic is None:
            return fresh
        again = _moved(server, spec, traffic + body, fresh.invariant, settings)
        if again is None or len(again.program) <= before:
            return fresh
        plain.append(again)
    return plain[0] if len(plain[0].program) < len(fresh.program) else fresh


def _other_traffic(spec: ModelSpec, body, count: int) -> list[StepRecord] | None:
    """`count` whole sequences (START+END) of value 1, plain requests from the client and over the
    way of the body's first START, each on an id no step of the body uses, nor twins (equal modulo
    2**31, which a 32-bit CORRID would not tell apart); None where there is no START or no such id."""
    first = next((s for s in body if s.request is not None and s.request.start
                  and s.request.seq_id not in (0, "")), None)
    if first is None:
        return None
    used = {s.request.seq_id for s in body if s.request is not None}
    ids = _unused_ids(first.request.seq_id, used, count)
    if ids is None:
        return None
    return [StepRecord(index=0, client=first.client, action="a whole sequence before the program (other traffic)",
                       request=spec.request(i, 1, start=True, end=True), via=first.via)
            for i in ids]


def _unused_ids(like, used: set, count: int) -> list | None:
    """`count` ids of `like`'s type that no id in `used` equals or twins; integers no wider than
    the widest used (every CORRID that took those takes them)."""
    if isinstance(like, str):
        return [clip_id(f"other{k}.{like}") for k in range(count)]
    ints = [u for u in used if isinstance(u, int)] + [int(u) for u in used if isinstance(u, str) and u.isdigit()]
    residues = {u % 2**31 for u in ints}
    top = 2 ** max(3, max(ints, default=0).bit_length()) - 1
    free = (i for i in range(1, top + 1) if i % 2**31 not in residues)
    ids = list(itertools.islice(free, count))
    return ids if len(ids) == count else None


def _program(steps) -> list[StepRecord]:
    """The reload, then the steps, numbered from 1."""
    return _numbered([RELOAD, *steps])


def _numbered(steps) -> list[StepRecord]:
    """The steps numbered from 1."""
    return [attrs.evolve(s, index=i) for i, s in enumerate(steps, start=1)]


def _try(server, spec: ModelSpec, steps, invariant: str, settings: FuzzSettings, *,
         reload: bool = True, fresh: FreshCopies | None = None) -> InvariantViolation | None:
    """Replays the steps after a reload (or, `reload=False`, as they are); the violation if it
    broke `invariant`, else None (it kept every promise, broke another, or could not be
    replayed as recorded). Given `fresh` copies, a program with no fault of its own is tried on
    a copy first, and only if it fails there (most tries of a shrink pass) on the model itself
    after a reload, up to FLAKY_TRIES times: the copy showed that it can."""
    if reload and fresh is not None and replayable_on_copy(steps):
        copy = fresh.take()
        if copy is not None:
            try:
                if _replay(server, copy, _numbered(renamed(steps, copy.name)), invariant, settings) is None:
                    return None
            finally:
                fresh.done(copy)
            return _first_failure(lambda: _try(server, spec, steps, invariant, settings), FLAKY_TRIES)
    steps = renamed(steps, spec.name)
    return _replay(server, spec, _program(steps) if reload else _numbered(steps), invariant, settings)


def _replay(server, spec: ModelSpec, program, invariant: str, settings: FuzzSettings) -> InvariantViolation | None:
    try:
        replay_steps(server, spec, program, settings)
    except InvariantViolation as v:
        if v.invariant == "server_alive":
            raise ServerGone(str(v)) from None
        return v if v.invariant == invariant else None
    except ReplayDrift:
        return None
    return None


def _shrink(server, spec: ModelSpec, found: InvariantViolation, settings: FuzzSettings,
            deadline: float, fresh: FreshCopies | None = None, focused: bool = False) -> InvariantViolation:
    """Delta debugging (fuzz/corpus/shrink.py), each try replayed from a fresh model (or copy first)."""
    return shrink.ddmin(found, lambda steps: _try(server, spec, steps, found.invariant, settings, fresh=fresh),
                        _body, spec, deadline, focused=focused)


def _body(v: InvariantViolation) -> list[StepRecord]:
    """A replayed program without its leading reload: the steps up to the one that failed (the
    teardown's ENDs included, when it failed in the drain: the model saw them too)."""
    return [s for s in v.program if not (s.kind is Kind.FAULT and s.index == 1)]
