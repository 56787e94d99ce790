"""Delta debugging over a failing program's steps, after Hypothesis has shrunk it (or could not).

Hypothesis shrinks the choices a program was drawn from; some programs it cannot turn into the
shorter one that shows the same bug. A `run` whose fifth request overflows the sum is not a
START with one large value to it, nor is `start a 0; continue a 1; restart a 0` the
`start a 1; restart a 0` it stands for. Here the program itself is cut down: chunks of steps are
removed, and a removed request of a running sequence *folds* into the request before it (its
value is added there, its END flag moves there), so every later answer of that sequence sums to
what it did. A candidate is kept only when a live replay breaks the same promise again: how a
try replays (after a reload, or with its ids moved) is the caller's (fuzz/corpus/isolate.py).

Everything here is pure: programs in, programs out.
"""
from __future__ import annotations

import re
import time
from typing import Callable, Optional

import attrs

from ..checker.history import ran
from ..checker.invariants import InvariantViolation
from ..checker.model import clip_id, key_of, too_long
from ..generator.coverage import DECIMAL_STEPS, MERSENNE_STEPS, NEIGHBOUR_STEPS
from ..generator.edges import ALIGNED_BITS
from ..spec import ModelSpec
from ..values import Kind, StepRecord

# Steps that wait out an idle timeout (or a recorded silence): a second or more each.
WAITS = tuple(k for k in Kind if k.traits.waits)
# A removal is tried keeping the time its steps took only when that adds this much silence.
MIN_GAP_S = 0.05
# Steps a replay sends after their recorded silence (fuzz/corpus/replay.py).
SENT = tuple(k for k in Kind if k.traits.sent)
# Steps whose request leaves its sequence's sum open (cancel_pipelined's and share_sequence's)
REBASES = tuple(k for k in Kind if k.traits.rebases)
# The tags earlier tries put in front of string ids (`try_tag`): a try's tag replaces them, so
# that a cut of a cut of a cut does not carry a dozen (seen: 'p90.p89.p46...4.g').
EARLIER_TAGS = re.compile(r"^(?:p\d+\.)+")
# Replays a candidate program: the violation when it broke the same promise again, else None.
Try = Callable[[list], Optional[InvariantViolation]]
# The steps of a replayed violation's program that a next candidate is cut from.
Body = Callable[[InvariantViolation], list]


def ddmin(found: InvariantViolation, try_: Try, body: Body, spec: ModelSpec,
          deadline: float, focused: bool = False, on_focus=None) -> InvariantViolation:
    """First every wait for an idle timeout at once (most bugs need none, and each costs every
    later try a second or more), then every request after a START at once (one try: bugs of
    slots and STARTs need none of them, and every later try replays a shorter program), then
    every such request sent alone (a crowd's bug needs its crowd, not how its sums were built),
    then every such request sent alone but each sequence's last (the one that checks its sum),
    then each group sent at once (a crowd, a share or cancel group) whole, then a cancel group's
    queue behind its first but its first request (`queued_behind`), then a crowd's
    requests a layer at a time (the last of each of its sequences, ...), then
    whole sequences (every step naming one id), then every other request of a sequence
    (`alternate_continuations`), then every request of a sequence after its START (a long run whose START the bug needs, not its middle), then each START moved into its
    sequence's next request (`start_later`), then single steps. Past the
    waits, a removal that no longer fails is tried once more keeping the time the removed steps
    took, as silence (a bug can need a sequence's gap, which they filled); the silences kept
    that way are dropped in one last try. Right after the waits, the program is cut to the
    sequences it ended with (`focus`; not where `focused`: a cut of a program focus cut already;
    `on_focus` is given what focus left, where it ran in full), and its crowds are tried one
    request at a time (`alone`)."""
    for units_of in DDMIN_PASSES:
        if units_of is DDMIN_PASSES[-1]:  # (half the time left at most, as every pass but the last)
            found = start_later(found, try_, body, spec, time.monotonic() + (deadline - time.monotonic()) / 2)
        # No pass but the last takes more than half the time left: proving a program of a hundred
        # needed sequences 1-minimal by sequence takes a try each, and the passes after it none
        # (seen: 6 s of 7 on 103 sequences, and a removable request of the one that failed left).
        until = deadline if units_of is DDMIN_PASSES[-1] else time.monotonic() + (deadline - time.monotonic()) / 2
        found = _ddmin(found, try_, body, spec, until, units_of, timed=units_of is not every_wait)
        if units_of is every_wait:
            if not focused:
                found = focus(found, try_, body, spec, deadline)
                if on_focus is not None and time.monotonic() < deadline:
                    on_focus(found)
            found = alone(found, try_, body, deadline)
    steps = body(found)
    if any(s.wait_s for s in steps if s.kind in SENT) and time.monotonic() < deadline:
        again = try_(quiet(steps))
        if again is not None and len(body(again)) <= len(steps):
            found = again
    return found


def focus(found: InvariantViolation, try_: Try, body: Body, spec: ModelSpec,
          deadline: float) -> InvariantViolation:
    """The program cut to the sequences it ended with, a short cut that fails. A promise breaks at
    the program's end, mostly on what the last few sequences did, and a crowd's program of
    hundreds of steps leaves ddmin's halving no time for its single steps (seen: 188 steps, three
    tries of 1.5 s each per pass, and the budget gone before a sequence was removed). First the
    last sequence alone, then with the sequences no END closed, then the last two (`_first_cuts`:
    the first of them that fails); then the last half: where it fails, the last 4, 8, ... up to
    it, and halving between the last that passed and the first that failed; where it passes,
    no cut of it can (it keeps fewer sequences than one that passed), and the fewest of the last
    sequences past the half that fail are searched by halving (a bug that needs a hundred
    sequences to have come and gone: seen, every cut of a 134-sequence program tried and passing,
    7 s of a 30 s budget, where halving finds the 101 it needs in 7 tries). A cut that no longer
    fails is tried once more keeping the time the cut sequences took, as silence (a sequence's age
    or gap the bug needs, which they filled), as _ddmin does."""
    steps = body(found)
    groups = sorted(by_sequence(steps), key=max)
    everything = set(range(len(steps)))
    best, passed = found, []  # passed: the kept positions of each cut that did not fail

    def fails(keep: set) -> bool:
        nonlocal best
        if time.monotonic() >= deadline or any(keep <= p for p in passed):
            return False
        gone = everything - keep
        kept = without(steps, gone, spec)
        if not kept or len(kept) >= len(body(best)):
            return False
        again = try_(kept)
        if again is None and time.monotonic() < deadline:
            again = _try_spaced(try_, steps, gone, kept, spec)
        if again is not None and len(body(again)) < len(body(best)):
            best = again
            return True
        if again is None:
            passed.append(keep)
        return False

    last = lambda k: _last(groups, k)  # noqa: E731
    n = len(groups)
    if n < 2 or any(fails(keep) for keep in _first_cuts(steps, groups)):
        return best
    half = n // 2
    if half > 2 and fails(last(half)):
        k, below = 4, 2
        while k < half and not fails(last(k)):
            k, below = k * 2, k
        _least_failing(fails, last, below, min(k, half))
    elif half >= 2:
        _least_failing(fails, last, half, n)
    return best


def _first_cuts(steps, groups) -> list[set]:
    """The kept positions of focus's first cuts: the last sequence alone; it and the sequences no
    END closed (left to their idle timeouts, or running at the end) and what sent nothing (the
    waits, the sequences left to expire): a leak the idle timeouts grow needs those, wherever they
    fell (seen: 435 steps, five expiries spread over the program); the last two."""
    open_ = {min(g) for g in unended(steps)}
    outlived = [g for g in groups[:-1] if min(g) in open_] + groups[-1:]
    cuts = [groups[-1:]] + ([outlived] if 1 < len(outlived) < len(groups) else []) + [groups[-2:]]
    return [{i for g in cut for i in g} for cut in cuts]


def _last(groups, k: int) -> set:
    """The positions of the last `k` sequences to have sent (`groups` sorted by their last step)."""
    return {i for g in groups[-k:] for i in g}


def _least_failing(fails, last, passing: int, failing: int) -> None:
    """Halves the span between a count of last sequences whose cut passed and one whose cut failed
    (or the whole program), down to the fewest that fail."""
    while failing - passing > 1:
        mid = (passing + failing) // 2
        if fails(last(mid)):
            failing = mid
        else:
            passing = mid


def focus_cuts(steps) -> list[set]:
    """The step positions each of the cuts a long program is rated on first removes
    (fuzz/corpus/isolate.py), in focus's order: `_first_cuts`, then the last half, then the last
    4, 8, ... (a cut of the half: where the half passed, isolate skips them as focus does)."""
    groups = sorted(by_sequence(steps), key=max)
    everything = set(range(len(steps)))
    keeps = _first_cuts(steps, groups) if len(groups) > 1 else []
    keeps.append(_last(groups, len(groups) // 2))  # of one sequence: everything, left out below
    k = 4
    while k < len(groups):
        keeps.append(_last(groups, k))
        k *= 2
    out = []
    for keep in keeps:
        if keep != everything and everything - keep not in out:
            out.append(everything - keep)
    return out


def focused(steps, spec: ModelSpec, most: int) -> list[list[StepRecord]]:
    """Up to `most` of focus's cuts as programs, in its order, each shorter than `steps`."""
    out: list = []
    for gone in focus_cuts(steps):
        kept = without(steps, gone, spec)
        if kept and len(kept) < len(steps) and kept not in out:
            out.append(kept)
        if len(out) == most:
            break
    return out


def alone(found: InvariantViolation, try_: Try, body: Body, deadline: float) -> InvariantViolation:
    """The program with the requests it sent at once (a crowd, a burst) sent one at a time, each
    answered before the next, their answer steps gone: every group at once, then the last group
    alone. A bug a crowd met that needs no crowd (a count, a sum's type, a key) then shows in half
    the steps, and the passes after this one cut plain requests (seen: `drops_every_third`, a
    count across requests, shrunk to a crowd of 6 steps). Before them, the program with its
    cancel groups sent uncancelled, where it has any (`uncancelled`). Three tries at most; a bug
    of a batch's composition, or of a cancel, fails none and keeps its crowd or its group."""
    steps = body(found)
    if _holds_full_batch(steps):
        return found  # its STARTs are held by the server until the batch is full: one alone waits forever
    runs = held_runs(steps)
    tries = [unheld(steps, chosen) for chosen in ([runs, runs[-1:]] if len(runs) > 1 else [runs] if runs else [])]
    plain = uncancelled(steps)
    for candidate in ([plain] if plain != steps else []) + tries:
        if time.monotonic() >= deadline:
            break
        again = try_(candidate)
        if again is not None and len(body(again)) < len(steps):
            return again
    return found


def start_later(found: InvariantViolation, try_: Try, body: Body, spec: ModelSpec,
                deadline: float) -> InvariantViolation:
    """Each sequence's START left out, its next request sent as the START instead
    (`started_later`), the last sequence's first, a try each. Where that request went at once with
    others (a crowd, a burst), it carries the START's value: a bug that needs a sequence to begin
    in a crowd (a key of the row a START lands in) shows one request shorter, which no removal
    finds (a removed request folds back into the one before it, and a START has none). Where it
    went alone, it keeps its own value and the START's is dropped: removing that request folds it
    into the START already, but a bug of the inputs that came after the START (three in a line,
    one repeated) needs them as they were, and a START of another value in front of them is one
    line more (seen: `exact_prediction_decoded_as_repeat` kept at minimal + 2)."""
    best = found
    at = len(body(best)) - 1
    while at >= 0 and time.monotonic() < deadline:
        steps = body(best)
        candidate = started_later(steps, at, spec) if at < len(steps) else None
        again = try_(candidate) if candidate is not None else None
        if again is not None and len(body(again)) < len(steps):
            best = again
        at -= 1
    return best


def started_later(steps, at: int, spec: ModelSpec) -> list[StepRecord] | None:
    """The program without the START at `at`, its sequence's next request sent as the START
    instead: where that was sent at once with others (HELD), with both values (every later sum
    stays what it was); where it was sent alone (a plain request), with its own value. None where
    the step is no plain START answered, or the next request is none, a START or of another kind,
    a plain one not answered, or the values together would leave the model's range."""
    s = steps[at]
    req = s.request
    if s.kind is not Kind.REQUEST or req is None or not req.start or req.end or spec.iterations \
            or req.seq_id in ("", 0) or not _answered(s, spec):
        return None
    key = key_of(req.seq_id)
    nxt = next((j for j in range(at + 1, len(steps))
                if steps[j].request is not None and key_of(steps[j].request.seq_id) == key), None)
    if nxt is None or steps[nxt].kind not in (Kind.HELD, Kind.REQUEST) or steps[nxt].request.start:
        return None
    if steps[nxt].kind is Kind.REQUEST:
        if not _answered(steps[nxt], spec):
            return None  # refused (after an expiry, say): as a START it would be another program
        moved, answer = attrs.evolve(steps[nxt].request, start=True), None
    else:
        lo, hi = spec.value_range
        value = req.value + steps[nxt].request.value
        if not lo <= value <= hi:
            return None
        moved, answer = attrs.evolve(steps[nxt].request, start=True, value=value), answers_of_held(steps).get(nxt)
    return [attrs.evolve(step, request=moved) if i in (nxt, answer) else step
            for i, step in enumerate(steps) if i != at]


def _holds_full_batch(steps) -> bool:
    """The program strikes full_batch: its STARTs are held by the server until the batch is full."""
    return any(s.kind is Kind.FAULT and s.fault is not None and s.fault.name == "full_batch" for s in steps)


def _ddmin(found: InvariantViolation, try_: Try, body: Body, spec: ModelSpec, deadline: float,
           units_of, timed: bool) -> InvariantViolation:
    """Removes a chunk of units (each a list of step positions), keeps the removal when the rest,
    in its order, still fails the same way, and halves the chunks when none can go."""
    best, steps = found, body(found)
    units = units_of(steps)
    chunk = max(1, len(units) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        removed, start = False, 0
        while start < len(units) and time.monotonic() < deadline:
            gone = {i for u in units[start:start + chunk] for i in u}
            kept = without(steps, gone, spec)
            again = try_(kept) if kept else None
            if again is None and timed and kept:
                again = _try_spaced(try_, steps, gone, kept, spec)
            # Strictly shorter only: a replay's drain adds its own ENDs to what it sends, so a
            # program without its teardown can fail again at the same length, and forever.
            if again is not None and len(body(again)) < len(steps):
                best, removed = again, True
                steps = body(again)
                units = units_of(steps)
            else:
                start += chunk
        if not removed:
            chunk //= 2
    return best


def _try_spaced(try_: Try, steps, gone: set, kept: list, spec: ModelSpec) -> InvariantViolation | None:
    """A removal that no longer failed (`kept`), tried again keeping the time the removed steps
    took as silence (a bug can need the gap they filled); None where that adds too little."""
    spaced = without(steps, gone, spec, timed=True)
    if sum(s.wait_s for s in spaced) - sum(s.wait_s for s in kept) >= MIN_GAP_S:
        return try_(spaced)
    return None


def without(steps, gone: set, spec: ModelSpec, timed: bool = False) -> list[StepRecord]:
    """The steps but those at the positions in `gone`. A removed request of a running sequence
    that was answered folds into the kept request of that sequence before it (same incarnation,
    answered too): its value is added there and its END moves there (not past a kept request of
    the sequence sent at once, which it would end ahead of), so the sequence's later sums stay
    what they were. Anything else removed is just dropped. `timed`: a request that
    followed removed steps waits as long after the kept step before it as it went out then."""
    lo, hi = spec.value_range
    gone = gone | _partners(steps, gone)
    kept: list[StepRecord] = []
    last: dict = {}  # id key -> position in `kept` of its last answered request since its START
    crossed: set = set()  # keys with a request sent at once (HELD) kept since that request
    for i, s in enumerate(steps):
        req = s.request
        key = key_of(req.seq_id) if req is not None and req.seq_id not in ("", 0) else None
        if i not in gone:
            if timed and kept and i - 1 in gone and s.kind in SENT:
                s = _as_far_after(s, kept[-1])
            if key is not None and s.kind in SENT:
                last[key] = len(kept) if _answered(s, spec) and not req.end else None
                crossed.discard(key)
            elif key is not None and (s.kind in REBASES or (req.start and s.kind is Kind.HELD)):  # another base
                last[key] = None
            elif key is not None and s.kind is Kind.HELD and last.get(key) is not None:
                crossed.add(key)  # a removed END folded past it would end the sequence ahead of it
            kept.append(s)
            continue
        if key is None:
            continue
        if req.start:
            last[key] = None  # its continuations have nothing to fold into
            continue
        target = last.get(key)
        if target is None or s.kind is not Kind.REQUEST or not _answered(s, spec):
            continue
        into = kept[target].request
        value = into.value + req.value
        if lo <= value <= hi:
            end = into.end or (req.end and key not in crossed)
            kept[target] = attrs.evolve(kept[target], request=attrs.evolve(into, value=value, end=end))
        if req.end:
            last[key] = None
    return kept


def _as_far_after(s: StepRecord, before: StepRecord) -> StepRecord:
    """`s` with the silence that puts it as far after `before` as it went out when recorded."""
    if s.sent_at is None or before.done_at is None:
        return s
    gap = round(s.sent_at - before.done_at, 4)
    return attrs.evolve(s, wait_s=gap) if gap > s.wait_s else s


def paced(steps) -> list[StepRecord]:
    """The program with every request as far after the step before it as it went out when
    recorded. A replay sends faster than the campaign that recorded it (nothing drawn or judged
    between steps), and a bug of the time between requests (a restart some time after the
    sequence's last request) needs those gaps: the shrink ends by trying without them (quiet)."""
    return [_as_far_after(s, steps[i - 1]) if i and s.kind in SENT else s for i, s in enumerate(steps)]


def quiet(steps) -> list[StepRecord]:
    """The program with no silence before its requests."""
    return [attrs.evolve(s, wait_s=0.0) if s.kind in SENT and s.wait_s else s for s in steps]


def _partners(steps, gone: set) -> set:
    """A HELD step and its answer go together: a request sent without waiting whose answer step
    is gone would never be waited for, and the program's next request on its id would race it
    (seen: an END refused because it overtook its held START)."""
    return {i for held, answer in answers_of_held(steps).items() if held in gone or answer in gone
            for i in (held, answer)}


def answers_of_held(steps) -> dict:
    """Each HELD step's position -> its HELD_ANSWER's, where the program has it."""
    return answers_of(steps, Kind.HELD)


def answers_of(steps, sent: Kind) -> dict:
    """Each `sent` step's position -> that of the step that answers it (its kind's
    Traits.answers names `sent`), where the program has it (a client's answers are checked in
    the order it sent)."""
    answers, open_ = {}, {}  # open_: client -> positions of its `sent` steps not yet answered, in order
    for i, s in enumerate(steps):
        if s.kind is sent:
            open_.setdefault(s.client, []).append(i)
        elif s.kind.traits.answers == sent.value and open_.get(s.client):
            answers[open_[s.client].pop(0)] = i
    return answers


def _sent_alone(s: StepRecord, answer: StepRecord | None) -> StepRecord:
    """`s` as a plain request, carrying what `answer` (its answer step, or None) checked."""
    return attrs.evolve(s, kind=Kind.REQUEST, action=f"{s.action}, sent alone",
                        expected=answer.expected if answer else "", got=answer.got if answer else "",
                        expect=answer.expect if answer else None, outcome=answer.outcome if answer else None)


def unheld(steps, runs: list) -> list[StepRecord]:
    """The program with the HELD steps of `runs` (held_runs' groups) sent as plain requests, in
    the order they went, each carrying what its answer step checked; those answer steps gone."""
    answers = answers_of_held(steps)
    chosen = {i for run in runs for i in run}
    gone = {answers[i] for i in chosen if i in answers}
    out = []
    for i, s in enumerate(steps):
        if i in gone:
            continue
        if i in chosen:
            s = _sent_alone(s, steps[answers[i]] if i in answers else None)
        out.append(s)
    return out


def in_turn(steps) -> list[StepRecord]:
    """The program with the requests a client pipelined on its stream (a run of HELD steps all
    of one client: a `run`, a churn's chunk) sent one at a time, each answered before the next.
    Not where the server holds STARTs until a batch is full: one alone would wait for good."""
    if _holds_full_batch(steps):
        return list(steps)
    runs = [run for run in held_runs(steps) if len({steps[i].client for i in run}) == 1]
    return unheld(steps, runs) if runs else list(steps)


def plainly(steps) -> list[StepRecord]:
    """The program sent in turn (`in_turn`) and its cancel groups uncancelled (`uncancelled`):
    what a shrink tries first, where plain requests fold."""
    return uncancelled(in_turn(steps))


# A cancel group's steps that send a request, and those that only answer or cancel
CANCEL_SENDS = (Kind.ASIDE, Kind.BEHIND, Kind.AFTER_CANCEL)


def uncancelled(steps) -> list[StepRecord]:
    """The program with each cancel group's requests (the first, those queued behind it, the
    witness, the one after) sent as plain requests, one at a time in the order they went, each
    carrying what its answer step checked; its cancel and answer steps gone. A failure found in
    a cancel group that needs no cancel (a sum a request of the queue answered wrong, a START the
    one after was let through) then shrinks as plain requests do, which fold (seen: 55 to 80
    steps kept of a 3-step divergence, most of them a queue of 63 requests behind); one that
    needs the cancel fails no more this way, and the group stays."""
    if not any(s.kind in CANCEL_SENDS for s in steps):
        return list(steps)
    answers = answers_of(steps, Kind.ASIDE)
    out = []
    for i, s in enumerate(steps):
        if s.kind in (Kind.CANCEL_STREAM, Kind.ASIDE_ANSWER):
            continue
        if s.kind in CANCEL_SENDS:
            s = _sent_alone(s, s if s.kind is Kind.AFTER_CANCEL else steps[answers[i]] if i in answers else None)
        out.append(s)
    return out


def _answered(s: StepRecord, spec: ModelSpec) -> bool:
    """A plain request of the model's dtype, one element, that came back with a sum (a QUEUED
    START's own step has no outcome: its answer is a step of its own)."""
    req = s.request
    plain = req.batch == 1 and req.dtype == spec.dtype
    return plain and (s.kind is Kind.QUEUED or (s.outcome is not None and s.outcome.ok))


def try_tag(n: int) -> str:
    """The tag try number `n` puts in front of string ids (EARLIER_TAGS matches it)."""
    return f"p{n}."


# Ids this far apart (coverage's neighbours, 10^k apart and 2^k - 1 apart twins): an odd factor
# undoes them, an offset keeps them.
OFFSET_KEPT = (*NEIGHBOUR_STEPS, *DECIMAL_STEPS, *MERSENNE_STEPS)
ALIGNED_TO = 2**min(ALIGNED_BITS)  # both ids multiples of this (coverage's aligned twins): a factor keeps it
# An id with this many low zero bits hardly moves under an odd factor (2^63 not at all), so a
# try would meet what an earlier one left on it (2^53 and 2^63 are ids the generator sends).
FIXED_BITS = 40


def undone_by_shifting(steps) -> bool:
    """Whether moving the program's ids by an odd factor keeps what an offset would undo: the id
    its last request went to (the failing one) has its negation modulo 2**64 among the others,
    or both are multiples of ALIGNED_TO; and no two of its ids are OFFSET_KEPT apart (a twin a
    factor undoes), and none has FIXED_BITS low zero bits."""
    ids = [s.request.seq_id for s in steps
           if s.request is not None and not isinstance(s.request.seq_id, str) and s.request.seq_id != 0]
    if not ids:
        return False
    last, every = ids[-1], set(ids)
    others = every - {last}
    twin = (2**64 - last) % 2**64 in others or \
        last % ALIGNED_TO == 0 and any(b % ALIGNED_TO == 0 for b in others)
    return twin and not any(a % 2**FIXED_BITS == 0 or any((a + d) % 2**64 in every for d in OFFSET_KEPT)
                            for a in every)


def shifted(steps, offset: int, tag: str, factor: int = 1) -> list[StepRecord]:
    """The program with its ids moved, so that a try sees no state an earlier try left keyed by
    id: integers (and strings that name one, so 5 and "5" stay twins) times `factor` (odd), plus
    `offset`, modulo 2**64. An offset keeps every equality and difference (so every congruence);
    an odd factor keeps every equality, every congruence modulo a power of two, a negation and a
    multiple of 2^k, modulo 2**64 (undone_by_shifting; a narrower CORRID's twins of those are
    moved by an offset). Other strings get `tag` in front, in place of an earlier try's (cut to
    the longest id a server takes, unless already longer: a misuse). The misuse ids 0 and ""
    stay. A fault's calls (give_up's, deadlines') are sequences too: their ids move alike."""
    def move(seq_id):
        if seq_id in (0, ""):
            return seq_id
        if isinstance(seq_id, str):
            if seq_id.isdigit() and 0 < int(seq_id) < 2**64:
                return str(move(int(seq_id)))
            moved = f"{tag}{EARLIER_TAGS.sub('', seq_id, count=1)}"
            return moved if too_long(seq_id) else clip_id(moved)
        return (seq_id * factor + offset) % 2**64 or offset

    def moved(s: StepRecord) -> StepRecord:
        if s.request is not None:
            return attrs.evolve(s, request=attrs.evolve(s.request, seq_id=move(s.request.seq_id)))
        if s.fault is not None and s.fault.ids:
            return attrs.evolve(s, fault=attrs.evolve(s.fault, ids=[move(i) for i in s.fault.ids]))
        return s
    return [moved(s) for s in steps]


def by_sequence(steps) -> list[list[int]]:
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


def unended(steps) -> list[list[int]]:
    """by_sequence's groups that no END closed, and those that send nothing (a wait, a sequence
    left to expire, a reload); not those whose every step is a refused request (a misuse on an
    id no sequence lived on: nothing of it outlives its answer, and focus's cut of the sequences
    left open kept two of them in a 10-step program, the budget gone before single steps)."""
    out = []
    for g in by_sequence(steps):
        sent = [steps[i] for i in g if steps[i].request is not None]
        misuse = len(sent) == len(g) and all(ran(s.outcome) is False for s in sent)
        if not any(s.request.end for s in sent) and not misuse:
            out.append(g)
    return out


def continuations(steps) -> list[list[int]]:
    """Per sequence id, the positions of its requests other than STARTs, as one unit."""
    groups: dict = {}
    for i, s in enumerate(steps):
        if s.request is not None and not s.request.start:
            groups.setdefault(s.request.seq_id, []).append(i)
    return list(groups.values())


def alternate_continuations(steps) -> list[list[int]]:
    """Per sequence id, every other request it sent alone after its START, counted back from its
    last but one, as one unit: a removal halves how often the sequence sends and keeps it going
    as long, its last request where it was (kept as silence where the bug needs the time). Chunks
    of requests in a row would leave one gap past its idle timeout, and single steps take a try
    each (seen: a sum that lives 0.75 s from its START, shrunk to 46 steps, 34 of them keeping two
    sequences alive). A crowd's requests are crowd_layers' to cut."""
    alone = [[i for i in group if steps[i].kind is Kind.REQUEST] for group in continuations(steps)]
    return [group[-2::-2] for group in alone if len(group) > 1]


def crowd_layers(steps) -> list[list[int]]:
    """In each run of requests sent at once (HELD: a crowd, a burst), the requests of its
    sequences counted from each sequence's last one: one unit the last of each, one the one before
    each, and so on (STARTs stay), so that a removal shortens every sequence of a crowd at once and
    keeps it a crowd. A crowd shows a batch's composition in some replays only, and removing its
    steps one at a time spends most tries on replays that pass by chance."""
    units = []
    for run in held_runs(steps):
        tails: dict = {}
        for j in run:
            if not steps[j].request.start:
                tails.setdefault(key_of(steps[j].request.seq_id), []).append(j)
        depth = max((len(t) for t in tails.values()), default=0)
        units += [[t[-1 - k] for t in tails.values() if k < len(t)] for k in range(depth)]
    return [u for u in units if u]


def held_runs(steps) -> list[list[int]]:
    """The positions of each run of requests sent at once (HELD steps in a row), in order."""
    runs, run = [], []
    for i, s in enumerate([*steps, None]):
        if s is not None and s.kind is Kind.HELD and s.request is not None:
            run.append(i)
        elif run:
            runs.append(run)
            run = []
    return runs


def crowd_cores(steps, spec: ModelSpec) -> list[list[StepRecord]]:
    """Where a program sends requests at once: the steps of the sequences of its last group sent
    at once and of its last step (the one that failed): first each with only its last START
    before the group (its requests sent alone folded in), then with every request it sent alone
    folded into its START, then as they are; [] where it sends none at once. Such a
    failure shows in some replays only, so a long program is slow to rate and to cut (seen: 130
    steps, a second a replay, none of ten failing), where the group that failed is mostly all it
    needs, and its sequences' sums."""
    runs = held_runs(steps)
    if not runs or (steps and steps[-1].kind is Kind.FAULT):
        # A fault's own calls failed (a spared call of give_up's): focus's first cut, the fault
        # alone, is its core, and the crowd before it has nothing to do with it (seen: three
        # cores of a 196-request run rated first, a plain replay taking seconds each, and the
        # fault, failing 24 of 30 plain replays alone, never tried; 5769 steps kept).
        return []
    last = runs[-1]
    keys = {key_of(steps[i].request.seq_id) for i in last}
    if steps[-1].request is not None:
        keys.add(key_of(steps[-1].request.seq_id))
    gone = set()
    for group in by_sequence(steps):
        req = next((steps[i].request for i in group if steps[i].request is not None), None)
        if req is None or key_of(req.seq_id) not in keys:
            gone |= set(group)
    alone = {i for i, s in enumerate(steps) if s.kind is Kind.REQUEST and s.request is not None and not s.request.start}
    latest = {}  # each kept sequence's last START before the group
    for i in range(last[0]):
        req = steps[i].request
        if i not in gone and req is not None and req.start:
            latest[key_of(req.seq_id)] = i
    before = {i for i in range(last[0]) if i not in gone and i not in latest.values()}
    cores = []
    for core in (without(steps, gone | alone | before, spec), without(steps, gone | alone, spec),
                 without(steps, gone, spec)):
        if core and len(core) < len(steps) and core not in cores:
            cores.append(core)
    return cores


def every_wait(steps) -> list[list[int]]:
    """Every step that waits out an idle timeout (or a recorded silence), as one unit."""
    unit = [i for i, s in enumerate(steps) if s.kind in WAITS]
    return [unit] if unit else []


def every_continuation(steps) -> list[list[int]]:
    """Every request that is not a START, as one unit."""
    unit = [i for group in continuations(steps) for i in group]
    return [unit] if unit else []


def every_plain_continuation(steps) -> list[list[int]]:
    """Every request that is not a START and was sent alone (not in a crowd, a burst or a run's
    group), as one unit: the answered ones fold into their STARTs, so a crowd's bug keeps its
    crowd while the sequences it crowded lose the steps that only built their sums (seen: six
    continuations of one sequence left at the end, with single steps the last pass)."""
    unit = [i for i, s in enumerate(steps) if s.kind is Kind.REQUEST and s.request is not None and not s.request.start]
    return [unit] if unit else []


def every_continuation_but_the_last(steps) -> list[list[int]]:
    """Every request sent alone that is not a START and not the last request of its sequence
    (of its id since its START), as one unit: they fold into their STARTs, and each sequence keeps
    the request that checks its sum. every_continuation cuts the request that failed too, so a
    failure whose sequence needs others to have come and gone (ENDed, cached out) kept every
    request it sent (seen: a run of 493 requests and three more left in a 509-step program when
    the budget ran out). [] where that is every_plain_continuation's unit (a try already made)."""
    starts: dict = {}  # id key -> STARTs sent on it so far: which sequence of the id a request is on
    last, of = {}, {}
    for i, s in enumerate(steps):
        if s.request is None:
            continue
        key = key_of(s.request.seq_id)
        if s.request.start:
            starts[key] = starts.get(key, 0) + 1
        else:
            of[i] = (key, starts.get(key, 0))
            last[of[i]] = i
    unit = [i for i, s in enumerate(steps) if s.kind is Kind.REQUEST and i in of and last[of[i]] != i]
    return [unit] if unit and [unit] != every_plain_continuation(steps) else []


# Kinds of steps that go out, and are answered, as one group (a crowd or a burst; a share or a
# cancel group), each group's steps in a row: their Traits.group, and a group's last steps
GROUP_ANSWERS = tuple(k for k in Kind if k.traits.ends_group)


def sent_together(steps) -> list[list[int]]:
    """Each group of steps sent at once, with its answers, as one unit: a whole crowd, share or
    cancel group goes in one try, where by_sequence keeps it with the sequence it ran on and single
    steps take a try per step (seen: a share group of six steps on the sequence whose sum was
    evicted, left when the budget ran out). A group begins where a send follows an answer, so two
    crowds in a row are two units; none while the program holds a full batch (`alone`'s reason)."""
    if _holds_full_batch(steps):
        return []
    units, family, before = [], None, None
    for i, s in enumerate(steps):
        now = s.kind.traits.group or None
        if now is not None and now == family and not (before in GROUP_ANSWERS and s.kind not in GROUP_ANSWERS):
            units[-1].append(i)
        elif now is not None:
            units.append([i])
        family, before = now, s.kind
    return units


def single_steps(steps) -> list[list[int]]:
    return [[i] for i in range(len(steps))]


def queued_behind(steps) -> list[list[int]]:
    """A cancel group's queue behind its first, cut from its end: its last half, the last half of
    what is left, ... (never its first request), each a unit. On a fast model a queue is hundreds
    long (cancelling.py) and sent_together keeps a group whole; a queue's requests are alike, so
    these units find how short one still fails in a few tries (one unit a request took two
    replays a request where most of the queue is needed)."""
    units, run = [], []
    for i in range(len(steps) + 1):
        if i < len(steps) and steps[i].kind.traits.in_runs and (not run or steps[run[-1]].kind is steps[i].kind):
            run.append(i)
            continue
        rest = run[1:]
        while rest:
            half = len(rest) // 2
            units.append(rest[half:])
            rest = rest[:half]
        run = []
    return units


DDMIN_PASSES = (every_wait, every_continuation, every_plain_continuation, every_continuation_but_the_last,
                sent_together, queued_behind, crowd_layers, by_sequence,
                alternate_continuations, continuations, single_steps)  # ddmin's, in order
