"""Cancelling a request queued on a running sequence (the engine's cancel_pipelined steps).

The batcher notices a cancelled request when it reaches the front of its sequence's queue and
then ends the whole sequence: it releases the slot, fails everything queued on it (CANCELLED)
and forgets the id (core r24.10 ReleaseSequenceSlot; before core 06b8f6e the id stayed mapped to
the released slot, server issue 7117). A client sees none of it on the stream it cancelled, and
a request it cancels may not even have left it. So the steps make the server show what happened:

    first     the sequence's next request, on unary gRPC (not waited for)
    behind    one more on the client's stream, queued behind it (a slow model makes sure), or
              several back to back (the stream keeps their order): a queue that lasts on a fast model
    witness   one more on unary gRPC (or on a stream of its own), queued behind that one
    cancel    the client cancels its stream
    answers   the first's, then the witness's
    after     the sequence's next request

The witness fails CANCELLED with the cancelled request (or with the START-flag error, had the
sequence already ended) only if that request reached the queue and was cancelled there: then the
sequence is over and `after` must be refused. Answered, the witness says how many of the requests
behind had run before it (a prefix of them: one stream, one queue); whatever the server's timing,
`after` must then be one of the sums that leaves possible, or refused if a cancelled request came
to the queue after the witness.

Now and then the cancel comes later, with no witness: once the request behind can run (the
first answered, and it sent: a fast model answers the first before the one behind goes), at once
or a fraction of the first's latency later, when the one behind may be running (or not read off
the stream yet, or queued). A model must keep a sequence whose running request was cancelled
going as the batcher does (or end it as the batcher would, had it seen the cancel in the queue):
`after` must be refused or one of the sums the group leaves possible.

Here the steps send, time and record; which sums a group's answers leave possible, and why an
answer breaks a promise, is the checker's (fuzz/checker/cancels.py).
"""
from __future__ import annotations

import queue
import time

import attrs

from .client import StreamClient, UnaryCall
from ..events import event
from ..generator.coverage import CANCELLED_RUNNING, swept_goal
from ..checker.cancels import Queue, one_of, swept
from ..checker import verdicts
from ..checker.invariants import check_prompt, describe_expectation
from ..checker.model import Ambiguous, Answer, Refusal, Window, key_of, refused_for_start
from ..steps import drift, play_helper, plays, prepares, recorded_via, replays
from ..values import EndedOr, Kind, Outcome, Request


@attrs.define
class Group:
    """One cancel_pipelined in progress: what went out, what the model expected of it, and what
    the answers so far leave possible for the next request."""
    base: float  # the sequence's sum before it
    sent_at: float
    asides: list = attrs.Factory(list)  # (request, expected answer, call, via): the first, the witness
    behind: list = attrs.Factory(list)  # (request, call): the request cancelled
    checked: int = 0  # asides whose answers were checked
    cancelled: bool = False  # the request behind had no answer when its stream was cancelled
    overtaken: bool = False  # the first request's answer shows it came after the others
    ended: bool | None = None  # the witness showed the sequence ended (True), going on (False), or cannot tell
    sums: frozenset = frozenset()  # the sums (before `after`) the sequence may go on with
    late: bool = False  # cancelled after the first's answer, with no witness (the one behind may have run)
    first: float | None = None  # the first's sum, answered before the others
    unsettled: bool = False  # requests behind went since anything waited for them to reach the server

    def queue(self, then) -> Queue:
        """Its requests as sent, for the checker (fuzz/checker/cancels.py) to reason on."""
        return Queue(self.base, tuple(a[0] for a in self.asides), tuple(r for r, _ in self.behind), then)


@attrs.frozen
class LateCancel:
    """A cancel that comes once the request behind can run, with no witness, as that one may be
    running. Fuzzed: `of_latency` times the first's latency after the one behind can run (the
    first answered, and it sent: a fast model answers the first before the one behind goes).
    Replayed: the `wait_s` it recorded, after the first's answer (and after the step before)."""
    of_latency: float | None = None
    wait_s: float | None = None

    def __attrs_post_init__(self):
        if (self.of_latency is None) == (self.wait_s is None):
            raise ValueError(f"a late cancel waits a fraction of a latency or a recorded time, one of them: {self!r}")

    def wait(self, first: UnaryCall, behind: list) -> float:
        """Seconds to wait from now, `first` answered (a call of each request behind in `behind`)."""
        if self.wait_s is not None:
            return self.wait_s
        # From when the answer came, which may be before this looked, or before the one behind
        # went: never 0, which would be a cancel that did not wait.
        done = getattr(first, "done_at", None) or time.monotonic()
        runs_from = max([done] + [call.started for call in behind])
        return max(runs_from + self.of_latency * (done - first.started) - time.monotonic(), 1e-4)


class Cancelling:
    """The engine's steps for cancel_pipelined, a part the engine holds (`engine.cancels`): the
    group in flight and the witness's stream are its own, and it sends and checks through the
    engine it was made for (its model, clients, log and checks). Each is one step of the
    program, so a replay runs them one by one."""

    def __init__(self, engine):
        self.engine = engine
        self.group: Group | None = None
        self.side: StreamClient | None = None  # the witness's stream, where it goes on one (side_stream)

    def side_stream(self) -> StreamClient:
        """A stream of the engine's own, no client's: the cancelled stream is not it. Connected
        before it is first used: a witness must reach the server before the cancel does."""
        if self.side is None:
            self.side = StreamClient(self.engine.server.grpc_url)
            self.side.warm(self.engine.settings.prompt_s)
        return self.side

    def close_side_stream(self, cancel: bool) -> None:
        side, self.side = self.side, None
        if side is not None:
            side.close(cancel_requests=cancel, timeout_s=self.engine.settings.prompt_s)
            side.close_channel()

    def settle_behind(self) -> None:
        """The requests behind go back to back (their stream keeps their order, so none waits for
        the one before it); what comes after them on another connection, the witness or the
        cancel, must find them there."""
        if self.group is not None and self.group.unsettled:
            self.group.unsettled = False
            time.sleep(self.engine.settings.wire_s / 3)

    def send_aside(self, client: int, req: Request, action: str, via: str = "grpc") -> bool:
        """Sends the next request of a live sequence on unary gRPC (the witness: or on a stream
        of its own), not waiting for it (the first one, or the witness after the request
        behind). False, sending nothing, if the model would not answer it at once (its sequence
        gone, or at its idle timeout: for the witness, a starved machine took that long since
        the first went)."""
        self.settle_behind()
        exp = self.engine.expect(req, time.monotonic())  # as if everything before it ran
        if not isinstance(exp, Answer):
            return False
        if self.group is None:
            self.group = Group(exp.value - req.value, time.monotonic())
        self.engine.going_out(req)
        call = self.side_stream().send(req) if via == "stream" else self.engine.grpc.send(req, self.engine.answer_bound())
        self.group.asides.append((req, exp, call, via))
        self.engine.record(client=client, action=action, kind=Kind.ASIDE, request=req, via=via,
                    expected=describe_expectation(exp) + (" or less" if len(self.group.asides) > 1 else ""),
                    got="(its answer is checked below)")
        time.sleep(self.engine.settings.wire_s / 3)  # what follows must find it there
        return True

    def send_behind(self, client: int, req: Request, action: str) -> bool:
        """Sends a request of the same sequence on the client's own stream, not waiting for it.
        False, sending nothing, where the sequence reached its idle window since the first went
        (a starved machine: seen, 19 campaigns on two cores)."""
        exp = self.engine.expect(req, time.monotonic())  # as if it ran: the cancel may come late
        if not isinstance(exp, Answer):
            return False
        self.engine.going_out(req)
        self.group.behind.append((req, self.engine.streams[client].send(req)))
        self.engine.record(client=client, action=action, kind=Kind.BEHIND, request=req, via="stream",
                    expected=f"CANCELLED, or {describe_expectation(exp)} if it runs before the cancel comes",
                    got="(in flight)")
        self.group.unsettled = True
        return True

    def cancel_stream(self, client: int, action: str, late: LateCancel | None = None) -> None:
        """The client cancels its stream: once the requests behind reached the server, or `late`,
        after the first's answer, and records how long it waited."""
        g, wait_s = self.group, 0.0
        if late is not None:
            # No settling first: the one behind runs within a millisecond of reaching the server
            # on a fast model, and a cancel that waits for it to settle finds it answered (0 of
            # 20 models had a cancel find its request running). Whatever the cancel finds (the
            # request not read yet, queued, running or answered), the next request must be refused
            # or one of the group's sums, and it waits below until the server has it all.
            g.late, first = True, g.asides[0][2]
            if isinstance(first, UnaryCall):  # (its answer is read again when it is checked)
                try:
                    first.get(self.engine.answer_bound())
                except queue.Empty:
                    pass
            wait_s = late.wait(first, [call for _, call in g.behind])
            g.unsettled = False
            time.sleep(wait_s)
        else:
            self.settle_behind()
        self.engine.streams[client].close(cancel_requests=True, timeout_s=self.engine.settings.prompt_s)
        if len(g.behind) > 1 or g.late:
            # The server reads a queue off the stream about as fast as it runs it: one it read as
            # the cancel came reaches the sequence a moment later, and a request sent after the
            # cancel on another connection must not overtake it (a loaded machine reads late).
            time.sleep(self.engine.settings.wire_s)
        got = [StreamClient.poll(call, 0) for _, call in g.behind]
        ran = sum(1 for o in got if o is not None and o.ok)
        g.cancelled = ran < len(got)
        for o in got:  # one not answered OK: the server may have run it before the cancel, or not
            self.engine.saw(o) if o is not None and o.ok else self.engine.tally.cancel()
        wrong = g.queue(self.engine.model.then).wrong_behind(got)
        rec = self.engine.record(client=client, action=action, kind=Kind.CANCEL_STREAM, wait_s=wait_s, answers_behind=got,
                          expected="" if wrong is None else wrong[1],
                          got=f"{ran} of {len(got)} request(s) behind answered before the cancel"
                              + ("" if wrong is None else f"; {wrong[0]}"))
        if wrong is not None:
            for _, _, call, _ in g.asides:  # answered before the example ends: none left in flight
                StreamClient.wait(call, self.engine.answer_bound())
            self.engine.fail(verdicts.behind_impossible(*wrong), rec)

    def check_aside(self, client: int, action: str) -> None:
        """The next unchecked answer beside the stream: the first request's, then the witness's."""
        g = self.group
        req, exp, call, via = g.asides[g.checked]
        g.checked += 1
        got = StreamClient.wait(call, self.engine.answer_bound())
        self.engine.saw(got)
        check = check_prompt(req, exp, got, via)
        if g.checked == 1:
            check, indeterminate = self._first(req, exp, got, check)
            expect = exp
            if got.ok and check.violation is None and not g.overtaken:
                g.first = got.value
        else:
            queued = g.queue(self.engine.model.then)
            sums = queued.witness_sums(exp.value, self.engine.model.carries_state)
            check, indeterminate = self._witness(req, exp, got, check, via, queued, sums)
            expect = EndedOr(tuple(dict.fromkeys(sums)))
        if g.behind and swept(got, via):
            # It failed with a cancelled request: the sequence ended, however the group's requests
            # came (also where the first came after the others), as the history checker judges it.
            g.ended = True
        rec = self.engine.record(client=client, action=action, kind=Kind.ASIDE_ANSWER, request=req, via=via,
                          expected=check.expected, got=check.got, expect=None if indeterminate else expect,
                          outcome=got)
        if not g.behind and g.checked == len(g.asides):  # the first alone: nothing went behind it
            self.group = None
        if check.violation:
            self.engine.fail(check.violation, rec)

    def _first(self, req, exp, got, check):
        """The sum with it: it went before the others. Had it reached the server after them (a
        loaded machine), it could have run after them or failed with them: indeterminate, and
        then the witness shows nothing either."""
        g = self.group
        if not g.behind:  # sent alone, nothing cancelled: a plain request's indeterminate windows only
            if got.ok:
                self.engine.model.answered(key_of(req.seq_id), time.monotonic())
            why = None if check.violation is None else self.engine._arrived_after_expiry(req, exp, got)
            if why is None:
                return check, False
            return attrs.evolve(check, violation=None, expected=f"{check.expected}, or {why} (indeterminate)"), True
        if check.violation is None:
            return check, False
        after_others = {self.engine.model.then(v, req.value) for v in g.queue(self.engine.model.then).any_sum(without=req)}
        if not (self.refused_with_it(got, req) or got.ok and got.value in after_others):
            return check, False
        g.overtaken = True
        self.engine.stats.ambiguous_waits += 1
        return attrs.evolve(check, violation=None, expected=f"{check.expected}, or (had it come after the requests "
                                                             f"behind it) more, or an error (indeterminate)"), True

    def _witness(self, req, exp, got, check, via: str, queued: Queue, sums: list):
        """CANCELLED (or the START-flag error): the cancelled request was queued before it and
        ended the sequence. Its sum with the cancelled request: that one ran first, the sequence
        goes on. Its sum without: the cancelled one was not there yet (or never came). Where the
        two sums are one (the cancelled request's value 0, or a model that carries no state) it
        tells nothing (seen: a witness with the sum read as 'ran first', and the cancel, come
        after it, had ended the sequence: a false valid_is_accepted). `sums`: the group's
        (`queued`) witness sums."""
        g = self.group
        with_behind = exp.value
        fewer = list(dict.fromkeys(v for v in sums[:-1] if v != with_behind))
        either = ""
        if fewer:
            shown = one_of(fewer, 3)
            why = "the one behind not there yet" if len(g.behind) == 1 else f"not all {len(g.behind)} behind there yet"
            either = f", or OUTPUT={shown} ({why})"
        check = attrs.evolve(check, expected=f"{check.expected}{either}, or CANCELLED with it")
        if g.overtaken:
            g.sums = queued.any_sum()
            fits = self.refused_with_it(got, req, via) or got.ok and got.value in g.sums
            return (attrs.evolve(check, violation=None), True) if fits else (check, False)
        if self.refused_with_it(got, req, via):
            g.ended = True
            if swept(got, via):  # (not the START-flag error: the path of a swept request's error)
                self.engine.stats.coverage.situation(swept_goal(via))
            return attrs.evolve(check, violation=None), False
        if got.ok and got.value == with_behind and sums.count(with_behind) == 1:
            g.ended, g.sums = False, frozenset({with_behind})
        elif got.ok and got.value in sums:
            # Those behind it not there yet may come after it, and run (in their order): the
            # fewest that can have run before it
            g.sums = frozenset(sums[sums.index(got.value):])
            return attrs.evolve(check, violation=None), False
        return check, False

    def refused_with_it(self, got: Outcome, req: Request, via: str = "grpc") -> bool:
        """Failed with a cancelled request it was queued behind, or after it ended the sequence."""
        return swept(got, via) or refused_for_start(self.engine.spec, got, req.seq_id)

    def after_cancel(self, client: int, req: Request, via: str, action: str) -> None:
        """The sequence's next request, held to what the answers so far leave possible."""
        g, self.group = self.group, None
        queued = g.queue(self.engine.model.then)
        if len(g.asides) < 2:  # no witness says whether the cancelled one ended the sequence
            # The first answered before the others: its sum, with or without the one behind;
            # else every sum the group's requests may have made.
            g.sums = frozenset(queued.prefixes(g.first)) if g.first is not None else queued.any_sum()
        key = key_of(req.seq_id)
        while True:
            exp = self.engine.expect(req, time.monotonic())  # as if everything before it ran
            if not isinstance(exp, Ambiguous):
                break
            time.sleep(max(0.0, exp.until + 0.005 - time.monotonic()))
        self.engine.going_out(req)
        got = (self.engine.http if via == "http" and self.engine.http else self.engine.grpc).infer(req, timeout_s=self.engine.answer_bound())
        if not g.cancelled or g.ended is False or isinstance(exp, Refusal) and not swept(got):
            # Nothing was cancelled, or the witness saw the cancelled request run first; or the
            # sequence is past its idle timeout by now: the model's own expectation.
            event("cancel pipelined: " + ("nothing was cancelled" if not g.cancelled else
                                          "the cancelled request ran first" if g.ended is False else "idled out"))
            return self.engine.check(client, req, exp, got, via, action, kind=Kind.AFTER_CANCEL)
        ended = self.refused_with_it(got, req)
        go_on = sorted({self.engine.model.then(s, req.value) for s in g.sums}) if isinstance(exp, Answer) and not g.ended else []
        expected = "the START-flag error, or CANCELLED (the sequence ended with its cancelled request)"
        if go_on:
            expected += ("; or, had the cancel found it running (or not there yet), OUTPUT=" if g.late else
                         "; or, had the cancelled request not been queued before, OUTPUT=") + \
                        one_of(go_on, 4)
        rec = self.engine.record(client=client, action=action, kind=Kind.AFTER_CANCEL, request=req, via=via,
                          expected=expected, got=got.describe(),
                          expect=EndedOr(go_on), outcome=got)
        self.engine.saw(got)
        event("cancel pipelined: " + ("no witness" if len(g.asides) < 2 else
                                      f"witness {'failed with it' if g.ended else 'ran without it'}")
              + f", the sequence {'ended' if ended else 'went on'}")
        if ended:
            self.engine.model.cut(key, Window(g.sent_at, time.monotonic()))
            self.engine.model.reaped(key)
        elif got.ok and got.value in go_on:
            self.engine.model.went_on(key, got.value, time.monotonic())
            if g.late and queued.ran_behind(req, got):
                self.engine.stats.coverage.situation(CANCELLED_RUNNING)
        else:
            # Where the sequence may go on (no witness, or one that ran before the cancelled
            # requests came), a sum none of the group's leaves possible is a wrong sum, whatever
            # the cancel found (seen: a build that carries no state, met first by such a group)
            detail = queued.went_on(req, got, late=g.late, ended=bool(g.ended), may_go_on=bool(go_on))
            self.engine.fail(verdicts.after_cancel_wrong(got, detail, wrong_sum=got.ok and bool(go_on)), rec)

    def pipeline_and_cancel(self, client: int, first: Request, behind: Request | tuple, witness: Request,
                            after: Request, via: str, witness_via: str = "grpc", late: LateCancel | None = None) -> bool:
        """The whole rule: False (nothing sent) if the model would not answer `first` at once.
        `behind`: one request, or several sent back to back (a fast model runs one in a
        millisecond: only a queue of many is still there when the cancel comes). `late`: no witness
        goes, and the cancel comes once the one behind can run, as it runs; the next request may
        find the sequence ended or going on from any of the group's sums."""
        if witness_via == "stream":
            self.side_stream()  # connected before the group's timing starts
        if not self.send_aside(client, first, "next request, on unary gRPC"):
            return False
        for req in behind if isinstance(behind, tuple) else (behind,):
            if not self.send_behind(client, req, "one more behind it on its stream"):
                break  # (those sent so far are the group's)
        if not self.group.behind:
            # No cancel: the first's answer is judged as it is, and the group ends there.
            event("cancel pipelined: the sequence reached its idle window before the one behind went")
            self.check_aside(client, "answer to the first")
            return True
        if late is not None:  # no witness: the cancel is to land while the one behind runs
            self.cancel_stream(client, "cancel its stream once the first is answered", late)
            self.check_aside(client, "answer to the first")
            self.after_cancel(client, after, via, "next request after the cancel")
            return True
        witnessed = self.send_aside(client, witness, "one more behind that, " + (
            "on a stream of its own" if witness_via == "stream" else "on unary gRPC"), witness_via)
        self.cancel_stream(client, "cancel its stream")
        self.check_aside(client, "answer to the first")
        if witnessed:
            self.check_aside(client, "answer to the one behind the cancelled one")
        else:
            event("cancel pipelined: the sequence reached its idle window before the witness went")
        self.after_cancel(client, after, via, "next request after the cancel")
        return True


# Replaying the steps (the engine's own), in the order a group records them.

def _in_group(engine, step) -> None:
    if engine.cancels.group is None:
        raise drift(step, "no request was sent on a second stream before it")


@replays(Kind.ASIDE)
def _replay_aside(engine, step, spec, settings) -> None:
    engine.collect()
    if not engine.cancels.send_aside(step.client, step.request, step.action, step.via or "grpc"):
        raise drift(step, f"{step.request.seq_id!r} is not answered at once at replay")


@replays(Kind.BEHIND)
def _replay_behind(engine, step, spec, settings) -> None:
    _in_group(engine, step)
    if not engine.cancels.send_behind(step.client, step.request, step.action):
        raise drift(step, f"{step.request.seq_id!r} is not answered at once at replay")


@replays(Kind.CANCEL_STREAM)
def _replay_cancel_stream(engine, step, spec, settings) -> None:
    _in_group(engine, step)
    engine.cancels.cancel_stream(step.client, step.action, LateCancel(wait_s=step.wait_s) if step.wait_s else None)


@replays(Kind.ASIDE_ANSWER)
def _replay_aside_answer(engine, step, spec, settings) -> None:
    _in_group(engine, step)
    if engine.cancels.group.checked >= len(engine.cancels.group.asides):  # a shortened program lost its request
        raise drift(step, "no request on a second stream is left to answer at replay")
    engine.cancels.check_aside(step.client, step.action)


@replays(Kind.AFTER_CANCEL)
def _replay_after_cancel(engine, step, spec, settings) -> None:
    _in_group(engine, step)
    engine.cancels.after_cancel(step.client, step.request, recorded_via(engine, step), step.action)


# Playing them in the standalone reproducer (copied there: `p` is its Player, `step` a dict).

@prepares
def prepare_cancel(p):
    p.scratch["cancel"] = {"unsettled": False, "behind": 0}  # requests behind sent, not yet settled / cancelled
    if any(s["kind"] == "aside" and s["via"] == "stream" for s in p.entry["steps"]):
        # a witness on a stream of its own: connected now, so that it reaches the server before the cancel
        p.stream("side").warm(p.args.timeout)


@play_helper
def settle_queue(p):  # requests behind went back to back: what follows on another connection waits for them
    if p.scratch["cancel"]["unsettled"]:
        p.scratch["cancel"]["unsettled"] = False
        time.sleep(0.017)


@plays(Kind.ASIDE)
def play_aside(p, step):  # unary (or the witness on a stream of its own), not waited for
    settle_queue(p)
    p.send_later(step, p.stream("side") if step["via"] == "stream" else None)
    time.sleep(0.017)  # let it reach the server before what follows


@plays(Kind.BEHIND)
def play_behind(p, step):  # on the client's stream, to be cancelled (several go back to back)
    p.stream(step["client"]).send(step["request"], p.args.model)
    p.scratch["cancel"] = {"unsettled": True, "behind": p.scratch["cancel"]["behind"] + 1}


@plays(Kind.CANCEL_STREAM, own_wait=True)
def play_cancel_stream(p, step):  # a cancel that waited: that long after the first's answer and the step before
    if not step["wait_s"]:  # (one that waits lands while the one behind runs: it does not settle first)
        settle_queue(p)
    queue_sent, p.scratch["cancel"] = p.scratch["cancel"]["behind"] > 1, {"unsettled": False, "behind": 0}
    boxes = p.asides.get(step["client"]) or []
    if step["wait_s"] and boxes:
        try:
            boxes[0].put(boxes[0].get(timeout=p.args.timeout))  # (read again when it is checked)
        except queue.Empty:
            pass
    time.sleep(step["wait_s"])
    if step["client"] in p.streams:
        p.streams.pop(step["client"]).close(cancel_requests=True)
    if queue_sent or step["wait_s"]:  # one the server read off the stream as the cancel came is queued a moment later
        time.sleep(0.05)


@plays(Kind.ASIDE_ANSWER)
def play_aside_answer(p, step):
    p.answer_later(step, step["via"])


@plays(Kind.AFTER_CANCEL)
def play_after_cancel(p, step):
    p.request(step)
