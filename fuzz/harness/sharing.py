"""One sequence from several connections at once (the engine's share_sequence steps, its Sharing).

Several clients send the next request of one live sequence at the same moment, each on its own
connection (its stream, or unary gRPC). Which arrives first is the server's choice, so no single answer is determined; but the
batcher runs a sequence's requests one at a time, in its slot, so the answers must be the running
sums of *some* arrival order, and the sequence goes on with all of them (order_kept). Which orders
there are is the history checker's to say (fuzz/checker/linearize.py: the one judge of arrival
orders, which also judges every example once it has drained), here on the sequence's history so
far, as soon as the answers are in. A replay sends them at once again (SHARED steps, then their
answers), so a bug that needs them together can show again; its check is the same.
"""
from __future__ import annotations

import itertools
import operator
import time

import attrs

from .client import StreamClient
from ..events import event
from ..checker import linearize, verdicts
from ..checker.history import history_of
from ..checker.model import Answer, key_of, refused_for_start, sums_of_some
from ..steps import drift, plays, replays
from ..values import AnyOrder, Kind, Outcome, Request


@attrs.define
class Shared:
    base: float  # the sequence's sum before them
    sent: list = attrs.Factory(list)  # (client, request, box, via)
    at_risk_from: float = float("inf")  # the first one's Answer.at_risk_from
    times: list = attrs.Factory(list)  # when each went (time.monotonic())

    @property
    def sent_at(self) -> float:
        """When the first one went."""
        return self.times[0]


def possible(base: float, values: list, i: int, then=operator.add) -> tuple:
    """Every answer request i can get in some arrival order: after any of the others, its value.
    `then`: the sum after a value (the model's; a build that carries no state gives one answer)."""
    return tuple(sorted({then(s, values[i]) for s in sums_of_some(base, values[:i] + values[i + 1:], then)}))


class Sharing:
    """The engine's requests of one sequence sent at once (share_sequence): the group in flight,
    sent and checked through the engine it was made for (its model, clients, log and checks)."""

    def __init__(self, engine):
        self.engine = engine
        self.shared: Shared | None = None  # the group sent and not yet checked

    def send(self, client: int, req: Request, action: str, via: str = "stream") -> bool:
        """Sends the next request of a live sequence on the client's stream (or on unary gRPC, a
        connection of its own), not waiting: one of several sent at once. False, sending nothing,
        if the model would not answer it at once (its sequence gone, or at its idle timeout; for
        one after the first, a starved machine took that long since the first went)."""
        exp = self.engine.expect(req, time.monotonic())  # as if in the order sent; the sum is the same
        if not isinstance(exp, Answer):
            return False
        if self.shared is None:
            self.shared = Shared(exp.value - req.value, at_risk_from=exp.at_risk_from)
        self.engine.going_out(req)
        self.shared.times.append(time.monotonic())
        box = self.engine.streams[client].send(req) if via == "stream" else self.engine.grpc.send(req)
        self.shared.sent.append((client, req, box, via))
        self.engine.record(client=client, action=action, kind=Kind.SHARED, request=req, via=via,
                    expected="(checked with the others below)", got="(in flight)")
        return True

    def check(self, action: str) -> None:
        """Their answers: each a running sum of one arrival order of them all."""
        g, self.shared = self.shared, None
        got = [StreamClient.wait(box, self.engine.answer_bound()) for _, _, box, _ in g.sent]
        values = [req.value for _, req, _, _ in g.sent]
        for o in got:
            self.engine.saw(o)
        key = key_of(g.sent[0][1].seq_id)
        late = self._refused_after_expiry(g, got)
        recs = []
        for i, ((client, req, _, via), outcome) in enumerate(zip(g.sent, got)):
            sums = possible(g.base, values, i, self.engine.model.then)
            expected = "a running sum in some arrival order: " + " or ".join(map(repr, sums))
            recs.append(self.engine.record(client=client, action=f"{action} ({i + 1} of {len(g.sent)})",
                                    kind=Kind.SHARED_ANSWER, request=req, via=via,
                                    expected=expected + (", or refused: it may have arrived after the "
                                                         "sequence's idle timeout (indeterminate)" if late is not None else ""),
                                    got=outcome.describe(), expect=None if late is not None else AnyOrder(sums), outcome=outcome))
        if late is not None:
            self.engine.model.reaped_first(key, time.monotonic(), since=late)
            self.engine.stats.ambiguous_waits += 1
            event("share sequence: refused after their idle window opened (indeterminate)")
            return
        broken = self._unexplained(key, g, got) if all(o.ok for o in got) else None
        if all(o.ok for o in got) and broken is None:
            self.engine.model.answered(key, time.monotonic())
            in_order = list(itertools.accumulate(values, self.engine.model.then, initial=g.base))[1:] == \
                [o.value for o in got]
            event(f"share sequence: {len(g.sent)} requests, " + ("in the order sent" if in_order else "another order"))
            return
        if broken is not None and broken.step not in {r.index for r in recs}:
            self.engine.fail_unexplained(broken)  # an answer before them no order explains (the reference took it)
            return
        self.engine.fail(verdicts.in_no_order(g.base, values, got), recs[-1])

    def _unexplained(self, key, g: Shared, got: list[Outcome]) -> linearize.Verdict | None:
        """The history checker's verdict on the sequence `key` (the example's history from the
        first step that named it), where no order of it explains its answers; None where one
        does. Where it cannot tell (its search ran out of budget: deep cancelled queues on the
        key, each of whose requests may have run at any later time), their answers must still be
        the running sums of one order from the sum the reference model holds."""
        first = next(i for i, s in enumerate(self.engine.log) if s.request is not None and key_of(s.request.seq_id) == key)
        found = linearize.judge(history_of(self.engine.log[first:]), self.engine.spec, carries_state=self.engine.model.carries_state, only=key)
        verdict = found[0] if found else None
        if verdict is None or verdict.verdict == "kept":
            return None
        if verdict.verdict == "broken":
            return verdict
        if linearize.in_some_order(self.engine.spec, g.base, [req for _, req, _, _ in g.sent], got, self.engine.model.carries_state):
            return None
        last = self.engine.log[-1]
        return linearize.Verdict(key, "broken", "order_kept", last.index, last.outcome.describe())

    def _refused_after_expiry(self, g: Shared, got: list[Outcome]) -> float | None:
        """Where every one refused was refused for want of START and answered once the sequence's
        idle window may have opened, when it opened (None where it cannot have): on a loaded
        machine a request can reach the server after the reaper took the sequence (as one can,
        Engine._arrived_after_expiry). With none answered the window counts from the sequence's
        last answer; with some, from when they went: their arrival restarted the idle clock, and
        one sent with them can still arrive an idle timeout after it (seen: 19 campaigns on two
        cores, one of four shared requests refused). Those answered must still be the running sums
        of an order of their own. A refusal that came before the window could open stands, however
        long the others took to be waited for. Timing decides nothing: indeterminate."""
        sent = [(req, o) for (_, req, _, _), o in zip(g.sent, got)]
        if all(o.ok for _, o in sent) or not all(o.ok or refused_for_start(self.engine.spec, o, req.seq_id) for req, o in sent):
            return None
        answered = [(req, o) for req, o in sent if o.ok]
        # When each went, by the client's own reading, taken as the request went out: the group's
        # time for it is taken before its connection is ready, and a starved machine can stall
        # between the two (a shared request's refusal was called broken once, on a machine loaded
        # by another server's start, and did not recur in four loaded campaigns: such a stall
        # would explain it).
        went = [o.sent_at if o.sent_at is not None else at for (_, o), at in zip(sent, g.times)]
        # Each answered one reached the server after it went: the idle window opens no earlier
        # than an idle timeout after the last of them went.
        opens = max(w for (_, o), w in zip(sent, went) if o.ok) + self.engine.spec.idle_s - self.engine.model.margin \
            if answered else g.at_risk_from
        # When the first refusal came: when it went and its latency (a stream's is taken as it
        # comes; a unary call's when waited for, later), else now.
        came = min(w + o.latency_s if o.latency_s else time.monotonic() for (_, o), w in zip(sent, went) if not o.ok)
        if came < opens:
            return None
        if answered and not linearize.in_some_order(self.engine.spec, g.base, *zip(*answered), self.engine.model.carries_state):
            return None
        return opens

    def send_at_once(self, reqs: list, action: str) -> bool:
        """The whole rule: (client, request, via) of one live sequence, sent at once. Once one is
        not sent (its sequence reached its idle window after the ones before it went: a starved
        machine, seen at ten-fold oversubscription), the rest are not either, and those that went
        are checked together. False if none went."""
        for client, req, via in reqs:
            if not self.send(client, req, action, via):
                if self.shared is None:
                    return False
                event("share sequence: its idle window opened before all went; the rest not sent")
                break
        self.check(f"answer to {action}")
        return True


# Replaying the steps (the engine's own): SHARED steps, then their answers.

@replays(Kind.SHARED)
def _replay_shared(engine, step, spec, settings) -> None:
    engine.collect()
    if not engine.sharing.send(step.client, step.request, step.action, step.via):
        raise drift(step, f"{step.request.seq_id!r} is not answered at once at replay")


@replays(Kind.SHARED_ANSWER)
def _replay_shared_answer(engine, step, spec, settings) -> None:
    if engine.sharing.shared is not None:  # the first answer's step checks them all
        engine.sharing.check(step.action.rsplit(" (", 1)[0])


# Playing them in the standalone reproducer (copied there: `p` is its Player, `step` a dict).

@plays(Kind.SHARED)
def play_shared(p, step):  # one of several requests of a sequence sent at once
    p.send_later(step, p.stream(step["client"]) if step["via"] == "stream" else None)


@plays(Kind.SHARED_ANSWER)
def play_shared_answer(p, step):
    p.answer_later(step, "grpc")
