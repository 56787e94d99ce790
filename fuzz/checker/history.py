"""Histories as data: what each request of a program did, as operations a checker judges without
a server (fuzz/checker/linearize.py), the way Jepsen's Knossos and Porcupine judge a client's record.

An Op is one request: what was sent, what came back, and the interval in which the server may
have run it: from just before its client sent it to just after its answer came. What the answer
says decides whether it happened:
- an answer (OK): it ran, and its value is what it saw;
- an error the server gives instead of running it (the START-flag error, a wrong dtype, a backlog
  timeout): it did not, and it is left out;
- no answer, or one that does not say (cancelled, given up by its client, a lost connection): it
  *may* have happened, then or at any later time (a server may run a request its client gave up);
- but a cancel_pipelined group's request beside the cancelled stream (its first or its witness)
  that failed with a cancelled request queued before it (checker/cancels.py `swept`) did not run,
  and says its sequence ended while it waited: an Op that ends the sequence (`swept`);
- and the requests behind on the cancelled stream that had answered when the cancel went (its step
  keeps each one's answer) ran, in their stream's order; the others may have, after them (`follows`).
A fault that may end every sequence (a restart, a reload) is an Op too, one that may have happened
within its step. The deadlines fault sends whole sequences no step records: their ids are not judged.

Intervals come from the steps' times (the client's clock just before the send, the step's record
after the answer; a send never answered counts from the step before its group): an interval
always holds the true one. A program saved before steps kept their times
is placed by its step order instead: a request sent after the step before it was recorded (the
engine sends one step at a time; requests sent together are recorded as consecutive sends), and
without the order of a client's stream (in programs saved before a pipelined run's requests were
logged as they went, the order its steps were recorded in may not be the order they were sent:
they were recorded after a START among them that went to the backlog).
"""
from __future__ import annotations

import attrs

from .cancels import swept
from .model import Key, key_of
from ..values import UNSEEN, Kind, Outcome, Request, StepRecord

# Steps that send a request whose answer a later step records, and those answer steps (Traits).
SENDS = frozenset(k for k in Kind if k.traits.later)
ANSWERED_BY = {k: Kind(k.traits.answers) for k in Kind if k.traits.answers}
# Steps after which a client's requests go on a new stream: order on a stream holds within one.
NEW_STREAM = frozenset(k for k in Kind if k.traits.new_stream)
# Steps whose "stream" is the client's own (cancel_pipelined's witness may go on one of its own).
OWN_STREAM = frozenset(k for k in Kind if k.traits.own_stream)
WIPES = frozenset({"restart", "reload", "full_batch"})  # faults after which no sequence may be left
NEVER = float("inf")


@attrs.frozen
class Op:
    """One operation of a history. `request` None: a fault that may end every sequence."""
    step: int  # the step that recorded its answer (or its send, where none came)
    request: Request | None
    outcome: Outcome | None  # what came back: None where nothing did
    invoked: float  # no later than its send
    completed: float  # no earlier than its answer (NEVER: it may still run)
    certain: bool  # it surely ran (an answer came); else it may have
    # (client, n): the client's n-th stream, on which requests reach the server in the order sent;
    # None for a request on unary gRPC, HTTP or a stream of its own, and for one that may have run
    # (its stream may have broken: the server may run it after what the client sent next).
    channel: tuple | None = None
    sent: int = 0  # its send step: the order on its channel
    # It failed with a cancelled request queued before it: its sequence ended within its interval
    # (`certain`: that surely happened), and it did not run.
    swept: bool = False
    # The send (`sent`) of an op that ran before it, if it ran at all: a request behind a cancelled
    # stream that had not answered when the cancel went came after those on the stream that had.
    follows: int | None = None

    @property
    def key(self) -> Key | None:
        return None if self.request is None else key_of(self.request.seq_id)


@attrs.frozen
class History:
    ops: tuple  # Op, by invocation
    unjudged: frozenset = frozenset()  # keys something unrecorded sent on (the deadlines fault)
    timed: bool = True  # from the steps' times (else from their order)


def _clock(steps) -> tuple[list, list, bool]:
    """Each step's (done, before): when it was recorded, and when the step before it was."""
    timed = bool(steps) and all(s.done_at is not None for s in steps)
    done = [s.done_at if timed else float(i) for i, s in enumerate(steps)]
    return done, [-NEVER] + done[:-1], timed


def ran(outcome: Outcome | None) -> bool | None:
    """True: it ran; None: it may have; False: it did not (an error the server gives instead). An
    answer without a usable OUTPUT ran, to a sum nobody saw: as good as one that may have."""
    if outcome is None or outcome.status in UNSEEN or outcome.status == "BAD_RESPONSE":
        return None
    return outcome.ok


def history_of(steps) -> History:
    """The history a program's steps record."""
    steps = list(steps)
    done, before, timed = _clock(steps)
    # A group of requests sent together is recorded as consecutive sends: each went after the
    # step before the group.
    group_start = []
    for i, s in enumerate(steps):
        group_start.append(group_start[-1] if i and s.kind in SENDS and steps[i - 1].kind in SENDS else before[i])
    epoch: dict = {}  # client -> its stream's number since the last fault
    faults = 0  # a fault may break every stream (a cut, a restart)
    channel_of: dict = {}  # step position -> its channel
    open_sends: list = []  # [position, kind, request], sends not answered yet, in order
    ops, unjudged = [], set()
    cancelled: dict = {}  # client -> the position of its last cancel
    follows: dict = {}  # send position -> the send position of the op it may only run after

    def channel(s: StepRecord):
        # Without times, the order steps were recorded in need not be the order sent: no channel.
        own = timed and s.via == "stream" and s.client is not None and s.kind in OWN_STREAM
        return (s.client, faults, epoch.get(s.client, 0)) if own else None

    for i, s in enumerate(steps):
        if s.kind is Kind.FAULT and s.fault is not None:
            if s.fault.name in WIPES:
                ops.append(Op(s.index, None, None, before[i], done[i], certain=False))
            unjudged.update(key_of(seq_id) for seq_id in s.fault.ids)
            faults += 1
        if s.kind in SENDS and s.request is not None:
            channel_of[i] = channel(s)
            open_sends.append([i, s.kind, s.request])
        elif s.kind is Kind.CANCEL_STREAM:
            if s.answers_behind:
                ops.extend(_answered_behind(s, open_sends, steps, group_start, done[i], channel_of,
                                            since=cancelled.get(s.client, -1), follows=follows))
            cancelled[s.client] = i
        elif s.kind in ANSWERED_BY and s.request is not None:
            # its send: the same request, of the same client where there is one (a replay may
            # record the answers of a group's identical requests in another order than sent)
            sends = [o for o in open_sends if o[1] is ANSWERED_BY[s.kind] and o[2] == s.request]
            sent = next((o for o in sends if steps[o[0]].client == s.client), sends[0] if sends else None)
            if sent is not None:
                open_sends.remove(sent)
            at = sent[0] if sent is not None else i
            ops.append(_op(s, group_start[at], done[i], channel_of.get(at), at, timed))
        elif s.request is not None and s.kind not in SENDS:  # a request answered at once
            ops.append(_op(s, before[i], done[i], channel(s), i, timed))
        if s.kind in NEW_STREAM:
            epoch[s.client] = epoch.get(s.client, 0) + 1
    for at, _, request in open_sends:  # sent, never answered: it may have run, then or later
        s = steps[at]
        ops.append(Op(s.index, request, None, group_start[at], NEVER, certain=False, sent=at, follows=follows.get(at)))
    ops = [op for op in ops if op is not None]
    ops.sort(key=lambda op: (op.invoked, op.sent, op.step))
    return History(tuple(ops), frozenset(unjudged), timed)


def _answered_behind(s: StepRecord, open_sends: list, steps: list, group_start: list, done: float,
                     channel_of: dict, since: int, follows: dict) -> list:
    """The Ops of the requests behind a cancelled stream that had answered when the cancel went
    (`s`, the step that records their answers), taken off the sends still open; the
    others stay there (they may have run, then or later), each to run only after the last that
    had answered (`follows`: one stream is one queue). Its answers are the client's sends behind
    since its cancel before (at `since`), in their order; where their counts differ (a program
    edited by hand) which answer is whose is not known: none is taken."""
    behind = [o for o in open_sends if o[1] is Kind.BEHIND and o[0] > since and steps[o[0]].client == s.client]
    if len(behind) != len(s.answers_behind):
        return []
    ops, last = [], None
    for sent, got in zip(behind, s.answers_behind):
        at = sent[0]
        if got is not None and got.ok:
            open_sends.remove(sent)
            ops.append(Op(s.index, sent[2], got, group_start[at], done, certain=True,
                          channel=channel_of.get(at), sent=at))
            last = at
        elif last is not None:
            follows[at] = last
    return ops


def _op(s: StepRecord, not_before: float, done: float, channel, sent: int, timed: bool) -> Op | None:
    """The Op of a request whose answer step is `s` (None where the server refused it)."""
    # A step with an answer has its send time from its client's clock, taken just before the
    # send (requests pipelined on one stream went before the steps recorded ahead of them).
    invoked = s.sent_at if timed and s.outcome is not None and s.sent_at is not None else not_before
    if s.kind is Kind.ASIDE_ANSWER and s.outcome is not None and swept(s.outcome, s.via or "grpc"):
        return Op(s.index, s.request, s.outcome, invoked, done, certain=True, sent=sent, swept=True)
    happened = ran(s.outcome)
    if happened is False:
        return None
    return Op(s.index, s.request, s.outcome, invoked, done if happened else NEVER, certain=bool(happened),
              channel=channel if happened else None, sent=sent)
