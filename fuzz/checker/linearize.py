"""The history checker: judges a history (fuzz/checker/history.py) per sequence, without a server.

A sequence's requests must be explained by one order in which the server ran them, as Knossos and
Porcupine check a register (Wing & Gong's search, with memory of what was tried): an order that
keeps every request whose answer came before another was sent ahead of it, keeps each client's
own stream in the order sent, runs every answered request, may run or leave out one that may have
happened, and in which each answer is what the accumulator contract gives: a START begins the
running sum from the state's initial value (an iterative START answers once per execution, and
every request to a split ensemble once per chunk), a
request without START adds its value to a live sequence (none: the START-flag error, so an answer
to one breaks start_is_required), END ends it, a fault may end every sequence, and a request that
failed with a cancelled one queued before it (swept: a cancel group's first or witness) ended its
sequence as it waited (an answer after that, with no START, breaks cancel_ends_sequence).

It knows nothing of idle timeouts, slots or the backlog: an expiry only ever turns an answer into
a refusal, which it does not judge. So it is weaker than the engine's reference model on those, and
needs no timing margin: what it finds broken no order of the recorded intervals explains. (An
answer past a sequence's idle window is no verdict either: a starved machine reaps late, and the
engine takes it as indeterminate unless the sequence's slot surely went to another, which needs
the slots; an expiry judged here by time alone was tried, and would call it broken.)
"""
from __future__ import annotations

import attrs

from .history import History, Op
from .model import Key
from ..spec import ModelSpec, same_sums

BUDGET = 50_000  # states one sequence's search may visit before its verdict is "unknown"
DEAD = (False, None)  # no live sequence
SWEPT = (False, "swept")  # none: a cancel ended it (a request queued behind the cancelled one failed with it)


@attrs.frozen
class Verdict:
    """One sequence's verdict: `kept`, `broken` (no order explains its answers) or `unknown`
    (the search ran out of budget, or something no step recorded sent on it)."""
    key: Key
    verdict: str
    invariant: str = ""
    step: int | None = None  # the answer no order explains, at the furthest any order got
    got: str = ""
    possible: tuple = ()  # what the orders that failed at it said it should be ("no live sequence" as None)
    ops: int = 0

    def describe(self) -> str:
        seq = f"sequence {self.key[1]!r}"
        if self.verdict != "broken":
            return f"{seq}: {self.verdict} ({self.ops} operations)"
        could = " or ".join("the START-flag error" if v is None else repr(v) for v in self.possible)
        if self.invariant == "cancel_ends_sequence":
            could += " (a request queued behind a cancelled one failed with it: the sequence ended there)"
        return f"{seq}: step {self.step} got {self.got}; in every order the history allows, it could only be {could}"


@attrs.frozen
class Contract:
    """The accumulator contract of one model, as a state machine over (live, running sum)."""
    spec: ModelSpec
    carries_state: bool = True  # False: every answer is the initial sum plus its value (taken as built)

    def start_sums(self, op: Op) -> tuple:
        return self.spec.start_sums(op.request.value, op.request.end)

    def run(self, state: tuple, op: Op):
        """(the state after `op` runs, what it answers: a tuple of sums, or None for a refusal)."""
        if op.request is None:
            return DEAD, None
        if op.swept:
            return SWEPT, None
        req = op.request
        if req.start:
            sums = self.start_sums(op)
            live = not (req.end or self.spec.iterations)  # an iterative START's last release ends it
            return ((True, sums[-1]) if live else DEAD), self.spec.chunk_answers(sums[-1]) + sums
        live, total = state
        if not live:
            return state, None
        total = self.spec.add(total if self.carries_state else self.spec.initial_sum, req.value)
        return ((False, None) if req.end else (True, total)), self.spec.chunk_answers(total) + (total,)


def answers(op: Op) -> tuple:
    return (*op.outcome.partials, op.outcome.value)


def judge(history: History, spec: ModelSpec, carries_state: bool = True, budget: int = BUDGET,
          only: Key | None = None, live_at: float | None = None) -> list[Verdict]:
    """A verdict for every sequence the history sends on (`only`: for that one), broken ones first.
    `live_at`: each sequence is live at that running sum when the history begins (a part of one
    judged on what the reference model holds); else none is."""
    contract = Contract(spec, carries_state)
    wipes = [op for op in history.ops if op.request is None]
    by_key: dict = {}
    for op in history.ops:
        if op.request is not None and (only is None or op.key == only):
            by_key.setdefault(op.key, []).append(op)
    verdicts = []
    for key, ops in by_key.items():
        if key in history.unjudged:
            verdicts.append(Verdict(key, "unknown", ops=len(ops)))
            continue
        if not any(op.certain for op in ops):
            continue  # nothing answered: nothing to explain
        merged = sorted(ops + wipes, key=lambda op: (op.invoked, op.sent, op.step))
        verdicts.append(_search(key, merged, contract, budget, DEAD if live_at is None else (True, live_at)))
    return sorted(verdicts, key=lambda v: (v.verdict != "broken", v.step or 0))


def _frontier(ops: list, done: int) -> list[int]:
    """The ops that may run next: every op whose answer came before one was sent has run, and so
    has the op before it on its client's stream."""
    n, candidates, bound = len(ops), [], float("inf")
    i = (~done & (done + 1)).bit_length() - 1  # the first op not run yet
    while i < n and ops[i].invoked <= bound:
        if not done >> i & 1:
            candidates.append(i)
            bound = min(bound, ops[i].completed)
        i += 1
    return [c for c in candidates if ops[c].invoked <= bound]


def _twins(ops: list) -> tuple[dict, dict]:
    """(op -> the twin before it, op -> a mask of its twins after it). Twins: the same request,
    sent at the same moment, neither answered nor on a channel (a queue of alike requests behind a
    cancel, hundreds on a fast model). They are interchangeable, so the search decides them in
    order and runs a prefix of them: which of them ran is one of k + 1 counts, not one of 2^k
    subsets (a queue of 16 spent the whole budget, half a second, to say "unknown")."""
    chains: dict = {}
    for i, op in enumerate(ops):
        if not op.certain and op.channel is None and op.request is not None:
            chains.setdefault((op.request, op.invoked, op.completed), []).append(i)
    twin_before, later_twins = {}, {}
    for chain in chains.values():
        after = 0
        for at in range(len(chain) - 1, -1, -1):
            if at:
                twin_before[chain[at]] = chain[at - 1]
            later_twins[chain[at]], after = after, after | 1 << chain[at]
    return twin_before, later_twins


def in_some_order(spec: ModelSpec, base: float, requests: list, outcomes: list, carries_state: bool = True) -> bool:
    """Whether the answers of requests sent at once on a live sequence at the sum `base`, each on
    a connection of its own, are the running sums of one order in which they ran."""
    ops = tuple(Op(i, r, o, 0.0, 1.0, certain=True) for i, (r, o) in enumerate(zip(requests, outcomes)))
    found = judge(History(ops), spec, carries_state, live_at=base)
    return not found or found[0].verdict == "kept"


def _search(key: Key, ops: list, contract: Contract, budget: int, start: tuple = DEAD) -> Verdict:
    n = len(ops)
    everything = (1 << n) - 1
    before_on_channel = {}  # op -> the op before it on its stream
    last: dict = {}
    # A channel's order is its sends' (its client's clock; the step order only breaks ties): a
    # pipelined run's requests are recorded after a START among them that went to the backlog.
    for i in sorted(range(n), key=lambda j: (ops[j].invoked, ops[j].sent)):
        if ops[i].channel is not None:
            if ops[i].channel in last:
                before_on_channel[i] = last[ops[i].channel]
            last[ops[i].channel] = i
    twin_before, later_twins = _twins(ops)
    by_send = {op.sent: i for i, op in enumerate(ops) if op.request is not None}
    follows = {i: by_send[op.follows] for i, op in enumerate(ops) if op.follows in by_send}  # op -> the op it runs after
    seen, stack = set(), [(0, 0, start)]
    furthest, misses = -1, set()  # the most ops any order explained, and the ops it failed to explain there
    # The furthest order names the op; what it should have been is what every order that failed at
    # it said (`could`: not only the furthest's), and `after_sweep` the ops an order failed at after
    # their sequence was swept: an order that sweeps the sequence before a wrong sum gets further
    # than one that runs it first, and would call the wrong sum a request that must be refused.
    could, after_sweep = {}, set()
    while stack:
        done, ran, state = stack.pop()
        if done == everything:
            return Verdict(key, "kept", ops=n)
        if (done, state) in seen:
            continue
        seen.add((done, state))
        if len(seen) > budget:
            return Verdict(key, "unknown", ops=n)
        moves = []
        for c in _frontier(ops, done):
            if c in before_on_channel and not done >> before_on_channel[c] & 1:
                continue
            if c in twin_before and not done >> twin_before[c] & 1:
                continue  # twins are decided in order
            if c in follows and not done >> follows[c] & 1:
                continue  # it may only run after that one (one stream's queue)
            op, bit = ops[c], 1 << c
            after, said = contract.run(state, op)
            if op.swept:  # its sequence surely ended as it waited, whatever came before
                moves.append((done | bit, ran + 1, after))
            elif not op.certain:
                gone = bit | later_twins.get(c, 0)  # it did not run, nor did its twins after it
                moves.append((done | gone, ran + bin(gone).count("1"), state))
                if said is not None or op.request is None:
                    moves.append((done | bit, ran + 1, after))
            elif said is not None and same_sums(said, answers(op)):
                moves.append((done | bit, ran + 1, after))
            else:
                could.setdefault(c, set()).add(None if said is None else said[-1])
                if said is None and state == SWEPT:
                    after_sweep.add(c)
                if ran > furthest:
                    furthest, misses = ran, set()
                if ran == furthest:
                    misses.add(c)
        stack.extend(reversed(moves))
    first = min(misses, key=lambda c: (ops[c].invoked, ops[c].step)) if misses else None
    if first is None:  # cannot be: an order that meets no answer runs every op
        return Verdict(key, "unknown", ops=n)
    op, possible = ops[first], could[first]
    invariant = "sums_match" if possible != {None} else \
        "cancel_ends_sequence" if first in after_sweep else "start_is_required"
    return Verdict(key, "broken", invariant, op.step, op.outcome.describe(),
                   tuple(sorted(possible, key=lambda v: (v is not None, v or 0))), ops=n)
