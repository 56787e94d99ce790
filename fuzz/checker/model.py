"""The reference model: what the sequence batcher must answer, as a pure function of what was sent
and when. No I/O; time is passed in (the client's monotonic clock at send).

Semantics (../shared/TRITON_NOTES.md, confirmed live on 2.51 where noted):
- a sequence is keyed by its id; uint64 5 and string "5" are different sequences;
- a request without START to an id with no live sequence is refused with the START-flag error;
  START on a live id restarts it (state restarts, it keeps its slot: confirmed live);
- END forgets the id; its slot frees once the END request has run;
- idle expiry is measured from the arrival of the sequence's last request, also for a sequence
  that waited in the backlog (confirmed live: one admitted after waiting longer than the timeout
  answers its START and is gone by its next request);
- capacity = slots per instance x instances; a START that finds every slot held waits in a FIFO
  backlog, unreaped, until a slot frees.

Timing is never guessed. A sequence's expiry is a window [deadline - margin, deadline + late];
any expectation that depends on which side of a window the server is on comes back as Ambiguous,
and the generator waits the window out before sending. A backlogged START that is answered is
checked against the earliest moment a slot could have been free, and resolves the ambiguity by
observation.
"""
from __future__ import annotations

import heapq
import re

import attrs

from ..generator.depth import Depth
from ..spec import ModelSpec, exact_range, is_fraction
from ..values import Ambiguous, Answer, Expectation, Queued, Refusal, Request

Key = tuple  # ("u", int) or ("s", str)


class OutsideContract(ValueError):
    """A request whose sum the model's dtype cannot hold exactly. The generator never sends one
    (it fits its values); a program cut short by shrinking can (a removed request that could
    not fold): replaying it is a drift, never a finding."""


class AnswerPending(ValueError):
    """A request on a sequence whose last request is not answered yet. The generator never sends
    one (a generator error while fuzzing); a program cut short by shrinking can (a removed wait
    let a START into the backlog instead of a slot): replaying it is a drift, never a finding."""


START_ERROR = ("inference request for sequence {id} to model '{model}' must specify the START flag on the "
               "first request of the sequence")
ZERO_ID_ERROR = "inference request to model '{model}' must specify a non-zero or non-empty correlation ID"
BATCH_ONE_ERROR = ("inference request to model '{model}' must specify batch-size 1 due to requirements of "
                   "sequence batcher")
BATCH_MAX_ERROR = "inference request batch-size must be <= {max} for '{model}'"
DTYPE_ERROR = "inference input 'INPUT' data-type is '{sent}', but model '{model}' expects '{want}'"
# The same refusal as 2.36 words it (taken as built: divergence dtype-error-older-wording).
OLDER_DTYPE_ERROR = "inference input data-type is '{sent}', model expects '{want}' for '{model}'"
# A model without a batch dimension (max_batch_size 0) takes INPUT as [1]: a batch of 2 is the wrong
# shape. 2.51 ends the message with ". " (the core appends a hint that is empty here).
SHAPE_ERROR = "unexpected shape for input 'INPUT' for model '{model}'. Expected [1], got {got}. "
LONG_ID_ERROR = "string correlation ID cannot be longer than 128 characters"
# A START that waits in the backlog past its request `timeout` (the reaper fails it, UNAVAILABLE).
TIMEOUT_ERROR = "timeout of the corresponding sequence has been expired"
MAX_STRING_ID = 128  # in UTF-8 bytes: 2.51 refuses a 128-character id with a 2-byte character in it
# A sequence in use this many idle windows after its START (requests kept coming) is "kept alive":
# a server that reaps by age instead of idleness, or a model's cache that counts from the START,
# shows only past its window, in a sequence that never idled out.
KEPT_WINDOWS = 2
# A sequence in use this many seconds after its START is "long lived": a TTL in wall time (a
# session cache that drops an entry some seconds after it was made) shows only there. Steered
# once a campaign (a chain of pauses that long, mostly idle at the example's end).
LONG_LIFE_S = 10.0


def too_long(seq_id) -> bool:
    """A string id past the server's limit, which counts its UTF-8 bytes (the message says characters)."""
    return isinstance(seq_id, str) and len(seq_id.encode()) > MAX_STRING_ID


def clip_id(seq_id: str) -> str:
    """`seq_id` cut to the server's limit, never inside a character."""
    return seq_id.encode()[:MAX_STRING_ID].decode(errors="ignore")


def sums_of_some(base: float, values, then) -> set:
    """Every sum some of `values` make on `base`, each subset added in the list's order (`then`:
    the sum after a value, the model's, BatcherModel.then: a build that carries no state makes
    fewer; where addition is exact, as in every integer type, any order of a subset gives its sum)."""
    sums = {base}
    for value in values:
        sums |= {then(s, value) for s in sums}
    return sums


def batcher_error(spec, template: str, **fields) -> str:
    """A refusal by the sequence batcher itself (START_ERROR, ZERO_ID_ERROR, BATCH_ONE_ERROR). An
    ensemble passes on its step's, naming the step, after "in ensemble '<ensemble>', " (2.51);
    the checks the ensemble makes first (dtype, shape, batch size) name the ensemble."""
    text = template.format(model=spec.batcher, **fields)
    return f"in ensemble '{spec.name}', {text}" if spec.step else text


def refused_on_enqueue(spec, exp) -> bool:
    """`exp` is a refusal the sequence batcher makes as the request is enqueued (START_ERROR,
    ZERO_ID_ERROR, BATCH_ONE_ERROR: each names the batcher's model), not one of the ensemble's own
    checks, nor the backlog reaper's TIMEOUT_ERROR."""
    return isinstance(exp, Refusal) and f"model '{spec.batcher}'" in exp.message


def refused_for_start(spec, got, seq_id) -> bool:
    """`got` (an Outcome) is the batcher's START-flag error for `seq_id`."""
    return not got.ok and normalize_message(got.message) == batcher_error(spec, START_ERROR, id=seq_id)


_REQUEST_ID_PREFIX = re.compile(r"^\[request id: [^\]]*\] ")


def normalize_message(message: str) -> str:
    """Triton prefixes some errors with the request id; the promise is about the rest."""
    return _REQUEST_ID_PREFIX.sub("", message)


def idle_margins(idle_s: float, margin_s: float | None = None, late_s: float | None = None) -> tuple:
    """(early, late) widths of the idle-expiry window: by default max(0.1 s, 30 % of the timeout)
    early (clock skew, send vs arrival) and max(0.3 s, 60 %) late (the reaper runs at nice 10)."""
    early = margin_s if margin_s is not None else max(0.1, 0.3 * idle_s)
    late = late_s if late_s is not None else max(0.3, 0.6 * idle_s)
    return early, late


def key_of(seq_id) -> Key:
    return ("s", seq_id) if isinstance(seq_id, str) else ("u", int(seq_id))


@attrs.frozen
class Window:
    lo: float
    hi: float




@attrs.frozen
class Ghost:
    """A sequence the model let expire at the far edge of its idle window without seeing the
    server do it. The late edge is an assumption (the reaper runs at nice 10; a starved machine
    runs it later), so until the server refuses the id the sequence may still be there.
    `slot_to`: the backlogged START the model let into its slot."""
    total: float
    requests: int
    slot_to: Key | None


@attrs.define
class Seq:
    key: Key
    total: float
    last_arrival: float
    running: bool
    expiry: Window | None = None  # while running
    admitted: Window | None = None  # when a backlogged START was (or will be) let in
    end_on_admit: bool = False
    requests: int = 1  # accepted requests since its START (the START included)
    # The earliest moment the server may have reaped it before one of its requests not yet
    # answered arrived (sent before that moment, a request can arrive after it on a loaded machine).
    at_risk_from: float = float("inf")
    ghost_of: Ghost | None = None  # a queued START on the id of a ghost
    # A restart (START on this live id) sent before its idle window opened, not yet known to have
    # arrived before the reaper could act: the window it was sent in, and when it was answered.
    # It may have reached the server after the reaper took the sequence (late_restart).
    restart_risk: Window | None = None
    restart_answered: float | None = None
    born: float = attrs.field(default=attrs.Factory(lambda self: self.last_arrival, takes_self=True))  # its START
    let_in_by: float | None = None  # a backlogged START: its answer, by when it surely held a slot
    starts_before: int = 0  # the model's new sequences (BatcherModel.starts) before its START (churn)



def _frees_from(seq: Seq) -> float:
    """The earliest moment a running sequence's slot may free: a START+END let in from the
    backlog frees it when it runs, any other at the early edge of its idle window."""
    return seq.admitted.lo if seq.end_on_admit and seq.admitted else seq.expiry.lo


class BatcherModel:
    def __init__(self, spec: ModelSpec, margin_s: float, prompt_s: float = 5.0, late_s: float | None = None,
                 order_s: float = 1.0, carries_state: bool = True, dtype_error: str = DTYPE_ERROR):
        self.spec = spec
        self.dtype_error = dtype_error  # OLDER_DTYPE_ERROR where a build's older wording is taken as built
        # False: the reference takes as built a build that carries no state between requests (a
        # known divergence the campaign has seen): every answer is the initial sum plus its value.
        self.carries_state = carries_state
        # Two STARTs queued this close together (on different connections: a client with a START
        # in the backlog sends nothing else) may reach the server in either order; a client that
        # waits a little after queueing one makes the send order likely, not certain.
        self.order = order_s
        self.margin = margin_s  # how early the server may reap (clock skew, arrival vs send)
        self.late = margin_s if late_s is None else late_s  # how late (the reaper runs at nice 10)
        self.prompt = prompt_s
        self.seqs: dict[Key, Seq] = {}
        self.backlog: list[Key] = []
        self.awaiting: dict[Key, Window] = {}  # admitted from the backlog, answer not yet seen
        self.cancelled_waiting: set[Key] = set()  # cancelled STARTs still holding a backlog place
        # Cancelled backlogged STARTs whose cancel may not have reached the server yet (a loaded
        # server took it in 0.1 s and more): until when a slot freeing may still let one in.
        self.unsettled: dict[Key, float] = {}
        # Such STARTs let into a slot that freed before their cancel surely came, with when it surely came.
        self.maybe_ran: dict[Key, float] = {}
        self.ghosts: dict[Key, Ghost] = {}  # settled as expired, not yet seen refused
        self.revived: set[Key] = set()  # ghosts seen alive, whose other pipelined requests may follow
        # Slots freed by a START+END let in from the backlog, once its answer came, that went to no
        # one: a START let in meanwhile may have had one of them first (_passed_on_by_start_end).
        self.passed_on: list[Window] = []
        # Ids of iterative STARTs without END: the core ends such a sequence after its final answer
        # (a request it enqueues on the last release), so the id stays taken for a moment no one
        # sees; no request goes to it again.
        self.spent: set[Key] = set()
        # Ids of iterative START+ENDs: a START on one soon after stalls on some builds
        # (iterative-start-after-start-end-stalls), where the engine's guard keeps off them.
        self.started_and_ended: set[Key] = set()
        self.depth = Depth()
        self.restarts = 0  # STARTs on a live id (coverage)
        self.long_gaps = 0  # requests that went on after half the window the server surely keeps (coverage)
        self.kept_alive = 0  # requests to sequences in use for KEPT_WINDOWS idle windows and more (coverage)
        self.long_lived = 0  # requests to sequences in use for LONG_LIFE_S and more (coverage)
        self.quiet_gaps = 0  # requests that went on a sequence after no client sent anything for as long (coverage)
        self.reused_at_once = 0  # STARTs let in on the id whose END the model had just before, nothing between (coverage)
        self.just_ended = None  # the id key of the request before, where it ran and ended its sequence
        self.last_sent: float | None = None  # when the last request of any client went
        self.starts = 0  # new sequences (STARTs of ids not running), in all
        self.churn = 0  # the most new sequences one sequence saw start during its life and then went on (coverage)

    # -- views ----------------------------------------------------------------------------------
    @property
    def running(self) -> list[Seq]:
        return [s for s in self.seqs.values() if s.running]

    def is_live(self, key: Key) -> bool:
        return key in self.seqs

    def is_running(self, key: Key) -> bool:
        """`key` holds a slot (not waiting in the backlog)."""
        seq = self.seqs.get(key)
        return seq is not None and seq.running

    def expiry_of(self, key: Key) -> Window:
        """When the server may reap running `key`: its idle timeout from its last request."""
        return self.seqs[key].expiry

    def born_at(self, key: Key) -> float:
        """When live `key`'s START was sent."""
        return self.seqs[key].born

    def requests_of(self, key: Key) -> int:
        """Requests live `key` has had since its START (the START included)."""
        return self.seqs[key].requests

    def soonest_expiry(self) -> float:
        """The earliest moment a running sequence may be reaped (inf: none runs)."""
        return min((s.expiry.lo for s in self.running), default=float("inf"))

    def running_keys(self) -> list[Key]:
        return [s.key for s in self.running]

    def has_backlog(self) -> bool:
        """A START waits for a slot (a cancelled one whose place is not dropped yet included)."""
        return bool(self.backlog)

    def is_awaited(self, key: Key) -> bool:
        """`key`'s START was let in from the backlog and its answer has not come yet."""
        return key in self.awaiting

    def is_spent(self, key: Key, start_end_too: bool = False) -> bool:
        """No request goes to `key` again (spent): an iterative START's id, or a cancelled START's
        that may have run; with `start_end_too`, an iterative START+END's id too (the guard of
        iterative-start-after-start-end-stalls keeps off them)."""
        return key in self.spent or (start_end_too and key in self.started_and_ended)

    def maybe_ran_until(self, key: Key) -> float | None:
        """When the cancel of `key`'s START, let into a slot before it surely came, surely came
        (maybe_ran); None where `key` has no such START."""
        return self.maybe_ran.get(key)

    def keys(self) -> set[Key]:
        """Every live sequence's key, running or waiting in the backlog."""
        return set(self.seqs)

    def surely_idle_at(self, among=None) -> list[float]:
        """When each running sequence surely idles out (its window's late edge), soonest first,
        but one let in from the backlog whose answer has not come (is_awaited); of the keys
        `among` only, where given."""
        return sorted(s.expiry.hi for s in self.running
                      if s.key not in self.awaiting and (among is None or s.key in among))

    def ghost_keys(self) -> list[Key]:
        """The sequences settled as expired and not yet seen refused (is_ghost)."""
        return list(self.ghosts)

    def is_ghost(self, key: Key) -> bool:
        """`key`'s sequence was settled as expired and not yet seen refused: the server may hold it still."""
        return key in self.ghosts

    def is_backlogged(self, key: Key) -> bool:
        return key in self.backlog and key not in self.cancelled_waiting

    def live_keys(self) -> list[Key]:
        return [k for k, s in self.seqs.items() if s.running and k not in self.awaiting and k not in self.spent]

    def at_its_window(self, key: Key, now: float) -> bool:
        """`key` runs, no answer pending, and its idle window has opened by `now`: its next request
        would be ambiguous (expect's case)."""
        seq = self.seqs.get(key)
        return seq is not None and seq.running and key not in self.awaiting and now >= seq.expiry.lo

    def waits_for_an_answer(self, key: Key) -> bool:
        """A request of `key` is still unanswered (a START in the backlog, or let in from it): no
        other request of that sequence may be sent before its answer comes."""
        seq = self.seqs.get(key)
        return seq is not None and (not seq.running or key in self.awaiting)

    def then(self, total: float, value: float) -> float:
        """A sequence's sum after a request of `value` runs on `total`."""
        return self.spec.add(total if self.carries_state else self.spec.initial_sum, value)

    def free_slots(self) -> int:
        """Slots a START would take at once (none while the backlog waits)."""
        return 0 if self.backlog else max(0, self.spec.capacity - len(self.running))

    def total(self, key: Key) -> float:
        return self.seqs[key].total

    def churn_of(self, key: Key) -> int:
        """New sequences started since `key`'s own START (its restart included)."""
        return self.starts - self.seqs[key].starts_before

    def given_up(self, n: int) -> None:
        """`n` whole sequences expected were given up by their clients: they may never have started,
        so churn (coverage) does not count them."""
        self.starts -= n

    def surely_backlogged_until(self, key: Key) -> float:
        """Until when `key` certainly stays in the backlog (no slot can free before then)."""
        if not self.is_backlogged(key):
            return float("-inf")
        # A cancelled START ahead may take no slot at all (unsettled): not counted ahead of it.
        pos = [k for k in self._live_backlog() if k not in self.unsettled or k == key].index(key)
        los = sorted(s.expiry.lo for s in self.running)
        return los[pos] if pos < len(los) else float("inf")

    # -- time -----------------------------------------------------------------------------------
    def _expiry(self, last_arrival: float, admitted: Window | None = None) -> Window:
        deadline = last_arrival + self.spec.idle_s
        lo, hi = deadline, deadline
        if admitted is not None:  # the reaper can only release it once it holds the slot
            lo, hi = max(deadline, admitted.lo), max(deadline, admitted.hi)
        return Window(lo - self.margin, hi + self.late)

    def settle(self, now: float) -> None:
        """Applies every expiry that has certainly happened by `now`, admitting the backlog."""
        while True:
            gone = [s for s in self.running if s.expiry.hi < now and s.key not in self.awaiting]
            if not gone:
                return self._settle_cancels(now)
            for seq in sorted(gone, key=lambda s: s.expiry.hi):
                slot_to = self._release(seq, seq.expiry, expired=True)
                self.ghosts[seq.key] = Ghost(seq.total, seq.requests, slot_to)

    def _settle_cancels(self, now: float) -> None:
        """Cancels that have surely reached the server by `now` while their START still waited:
        it takes no slot now; its place is dropped when a slot next frees."""
        for key, settles_at in list(self.unsettled.items()):
            if settles_at <= now:
                del self.unsettled[key]
                if key in self.backlog:
                    self.seqs.pop(key, None)
                    self.cancelled_waiting.add(key)

    def settled_maybe_ran(self, now: float) -> list[Key]:
        """STARTs that may have run (maybe_ran) whose cancel has surely reached the server by
        `now`: each ran and holds its slot until its idle timeout, or never ran (or ran and was
        ended by its cancel). An END tells which, and frees the slot either way. Not one whose
        slot came from a sequence the model let expire (a ghost): a reaper later than the margin
        may not have freed it yet, and an END then joins the START in the server's backlog."""
        from_ghosts = {g.slot_to for g in self.ghosts.values()}
        return [k for k, settles_at in self.maybe_ran.items()
                if settles_at <= now and k in self.seqs and self.seqs[k].running and k not in from_ghosts]

    def end_maybe_ran(self, key: Key, freed: Window) -> None:
        """The END of a settled maybe-ran START was answered or refused for want of START (`freed`:
        when it went and came back): the slot is free by the answer, whichever it was."""
        self._release(self.seqs[key], freed)

    def ended_at_its_window(self, key: Key, ran: bool, freed: Window) -> None:
        """The END of a sequence inside its idle window (`freed`: when it went and came back) was
        answered (`ran`: the sequence was still there, the END freed its slot) or refused for want
        of START (the reaper took it first, from its window's start on). It is gone either way."""
        seq = self.seqs[key]
        self._release(seq, freed if ran else Window(seq.expiry.lo, freed.hi), expired=not ran)

    def _release(self, seq: Seq, freed: Window, expired: bool = False) -> Key | None:
        """Ends `seq`; returns the backlogged START let into its slot, if any."""
        self.seqs.pop(seq.key, None)
        self.maybe_ran.pop(seq.key, None)
        self.depth.ended(seq, expired)
        return self._admit_next(freed)

    def _admit_next(self, freed: Window) -> Key | None:
        # A cancelled START keeps its place until a slot frees; then the batcher drops it and
        # offers the slot to the next one (sequence_batch_scheduler's ReleaseSequenceSlot).
        while self.backlog and self.backlog[0] in self.cancelled_waiting:
            self.cancelled_waiting.discard(self.backlog.pop(0))
        if not self.backlog:
            return None
        seq = self.seqs[self.backlog.pop(0)]
        settles_at = self.unsettled.pop(seq.key, None)
        if settles_at is not None:
            return self._maybe_let_in(seq, freed, settles_at)
        seq.running = True
        self.depth.slot_taken()
        seq.admitted = freed
        seq.expiry = self._expiry(seq.last_arrival, freed)
        self.awaiting[seq.key] = freed
        return seq.key

    def _maybe_let_in(self, seq: Seq, freed: Window, settles_at: float) -> Key | None:
        """A slot freed in `freed` while `seq`'s START was cancelled, its cancel on its way until
        `settles_at`. Freed after: the cancel came first, the START is dropped, the slot goes on.
        Freed before: the START may have run (its answer went to a closed stream) and may hold
        the slot until its idle timeout, or may not: the slot frees anywhere from `freed` to that
        expiry. No request goes to its id again (spent)."""
        if freed.lo >= settles_at or seq.end_on_admit:  # a START+END that ran ended at once
            self.seqs.pop(seq.key, None)
            return self._admit_next(freed)
        self.spent.add(seq.key)
        self.maybe_ran[seq.key] = settles_at
        self.depth.slot_taken()
        seq.running, seq.admitted = True, freed
        seq.expiry = Window(freed.lo, self._expiry(seq.last_arrival, freed).hi)
        return seq.key

    # -- requests -------------------------------------------------------------------------------
    @property
    def quiet_s(self) -> float:
        """How long no client may send before a request for it to go after a quiet model (a
        gap of half the idle window the server surely keeps a sequence for)."""
        return (self.spec.idle_s - self.margin) / 2

    def expect(self, req: Request, now: float) -> Expectation:
        """What the server must do with `req` sent at `now`; updates the model as if it did. An
        Ambiguous answer leaves the model as it was (past what time settles): the request is not
        sent then, and the model is asked again when it goes."""
        self.settle(now)
        key = key_of(req.seq_id)
        before = (self.last_sent, self.just_ended, key in self.revived, self.ghosts.get(key), self.starts)
        exp = self._expect(req, now)
        if isinstance(exp, Ambiguous):
            self.last_sent, self.just_ended, revived, ghost, self.starts = before
            if revived:
                self.revived.add(key)
            if ghost is not None:
                self.ghosts[key] = ghost
        return exp

    def _expect(self, req: Request, now: float) -> Expectation:
        quiet = self.last_sent is not None and now - self.last_sent >= self.quiet_s
        self.last_sent = now
        just_ended, self.just_ended = self.just_ended, None
        refusal = self._invalid(req)
        if refusal is not None:
            return refusal
        key = key_of(req.seq_id)
        self.revived.discard(key)
        seq = self.seqs.get(key)
        if key in self.unsettled:
            return Ambiguous(self.unsettled[key], f"the cancel of {req.seq_id!r}'s START may not have reached the server")
        if key in self.maybe_ran:
            return Ambiguous(seq.expiry.hi, f"{req.seq_id!r}'s cancelled START may have run in a slot freed before its cancel came")
        ghost = self.ghosts.pop(key, None) if req.start else None
        if self.waits_for_an_answer(key):
            raise AnswerPending(f"generator error: request for {req.seq_id!r} while its previous one is pending")
        if seq is not None and now >= seq.expiry.lo:
            return Ambiguous(seq.expiry.hi, f"sequence {req.seq_id!r} is at its idle timeout")

        if not req.start:
            if seq is None:
                return Refusal("INVALID_ARGUMENT", batcher_error(self.spec, START_ERROR, id=req.seq_id),
                               "start_is_required")
            seq.total = self._exact(req, self.then(seq.total, req.value))
            seq.requests += 1
            self.churn = max(self.churn, self.churn_of(key))
            if seq.running and now - seq.last_arrival >= (self.spec.idle_s - self.margin) / 2:
                self.long_gaps += 1
                self.quiet_gaps += quiet
            if seq.running and now - seq.born >= KEPT_WINDOWS * self.spec.idle_s:
                self.kept_alive += 1
            if seq.running and now - seq.born >= LONG_LIFE_S:
                self.long_lived += 1
            return self._ran(seq, req, now)

        # A START's sum: from the state's initial value; an iterative one's after each execution.
        sums = tuple(self._exact(req, s) for s in self._start_sums(req))
        first, partials, end = sums[-1], sums[:-1], req.end or bool(self.spec.iterations)
        if self.spec.iterations:
            (self.started_and_ended if req.end else self.spent).add(key)
        if seq is not None:  # restart: same slot, fresh state
            self.restarts += 1
            if seq.running and key not in self.awaiting:
                seq.restart_risk, seq.restart_answered = seq.expiry, None
            self.depth.ended(seq)
            seq.total, seq.requests, seq.born, seq.starts_before = first, 1, now, self.starts
            return self._ran(seq, req, now, end, partials)
        self.starts += 1
        if self.free_slots():
            self.reused_at_once += key == just_ended  # runs now: the instance's next execution
            seq = Seq(key, first, now, running=True, starts_before=self.starts)
            self.seqs[key] = seq
            self.depth.slot_taken()
            return self._ran(seq, req, now, end, partials)
        open_windows = [s.expiry.hi for s in self.running if now >= s.expiry.lo]
        if open_windows:
            return Ambiguous(min(open_windows), "every slot is held, one of them at its idle timeout", or_a_slot=True)
        if req.timeout_us is not None:
            return self._times_out(req, now)
        self.seqs[key] = Seq(key, first, now, running=False, end_on_admit=end, ghost_of=ghost, starts_before=self.starts)
        self.backlog.append(key)
        return Queued(first, partials=partials or self.spec.chunk_answers(first))

    def _exact(self, req: Request, total: float) -> float:
        """`total`, where the model's dtype holds it exactly: past that, what the server answers
        is not promised (a wrapped INT32), so no answer can be judged. A float sum is judged
        anywhere: its rounding is IEEE's (ModelSpec.add)."""
        if self.spec.is_float:
            return total
        lo, hi = exact_range(*self.spec.sum_range, is_fraction(total))
        if not lo <= total <= hi:
            raise OutsideContract(f"{req.describe()} would bring its sequence's sum to {total}, outside "
                                  f"[{lo}, {hi}] where {self.spec.dtype} is exact")
        return total

    def _start_sums(self, req: Request) -> tuple:
        """What a START answers, in order. An iterative sequence's START without END runs once per
        iteration in its slot, adding its value each time, and its last release ends the sequence
        (core IterativeSequencer); a START with END is not rescheduled."""
        return self.spec.start_sums(req.value, req.end)

    def _times_out(self, req: Request, now: float) -> Refusal | Ambiguous:
        """A START with a `timeout` that must wait in the backlog: the reaper fails it (and every
        request queued behind it) once the timeout has passed, counted from its arrival, and the
        id is forgotten; a slot freed first would let it in, timeout or not (core r24.10: the
        timeout is checked only in the backlog). One reaper thread does both, idle sequences
        first: woken late, it may end an idle sequence in the same pass, and the batcher may give
        its slot to the expired START before the pass removes it. So a refusal only when the
        timeout's late edge comes before any slot may free; else the answer depends on which
        comes first: ask again once the earliest slot has surely freed."""
        deadline = now + req.timeout_us / 1e6 + self.late
        earliest = min(s.expiry.lo for s in self.running)
        if deadline < earliest:
            return Refusal("UNAVAILABLE", batcher_error(self.spec, TIMEOUT_ERROR), "timeouts_respected")
        return Ambiguous(min(s.expiry.hi for s in self.running),
                         "a START's timeout ends near the earliest moment a slot may free")

    def _ran(self, seq: Seq, req: Request, now: float, end: bool | None = None, partials: tuple = ()) -> Answer:
        """`req` runs in `seq`'s slot; `end` (default: its END flag) ends the sequence with it."""
        seq.at_risk_from = float("inf") if req.start else min(seq.at_risk_from, seq.expiry.lo)
        seq.last_arrival = now
        seq.expiry = self._expiry(now)
        if req.end if end is None else end:
            self._release(seq, Window(now, now + self.prompt))
            self.just_ended = seq.key
        return Answer(seq.total, seq.at_risk_from, partials=partials or self.spec.chunk_answers(seq.total))

    def _invalid(self, req: Request) -> Refusal | None:
        m = self.spec.name
        if req.dtype != self.spec.dtype:
            return Refusal("INVALID_ARGUMENT", self.dtype_error.format(sent=req.dtype, model=m, want=self.spec.dtype),
                           "invalid_is_refused")
        if self.spec.max_batch_size == 0 and req.shape != (1,):
            got = "[" + ",".join(map(str, req.shape)) + "]"
            return Refusal("INVALID_ARGUMENT", SHAPE_ERROR.format(model=m, got=got), "invalid_is_refused")
        if req.batch > 1 and req.batch > self.spec.max_batch_size:
            return Refusal("INVALID_ARGUMENT", BATCH_MAX_ERROR.format(max=self.spec.max_batch_size, model=m),
                           "invalid_is_refused")
        if too_long(req.seq_id):
            return Refusal("UNIMPLEMENTED", LONG_ID_ERROR, "invalid_is_refused")
        if req.seq_id in (0, ""):
            return Refusal("INVALID_ARGUMENT", batcher_error(self.spec, ZERO_ID_ERROR), "invalid_is_refused")
        if req.batch > 1:
            return Refusal("INVALID_ARGUMENT", batcher_error(self.spec, BATCH_ONE_ERROR), "invalid_is_refused")
        return None

    # -- what comes back later ------------------------------------------------------------------
    def answered(self, key: Key, at: float) -> None:
        """The server answered a request of `key` at `at`. The idle clock counts from when the
        server took the request, somewhere between its send and this answer: a request that
        waited in a queue (a pipelined run on a loaded machine) restarts the clock late, so the
        sequence may live until `at` + idle + late. Only ever widens the expiry window."""
        seq = self.seqs.get(key)
        if seq is not None and seq.restart_risk is not None and seq.restart_answered is None:
            if at < seq.restart_risk.lo:  # it came back before the reaper could act: it held the slot
                seq.restart_risk = None
            else:
                seq.restart_answered = at
        if seq is not None and seq.running and seq.expiry is not None and key not in self.awaiting:
            seq.expiry = Window(seq.expiry.lo, max(seq.expiry.hi, at + self.spec.idle_s + self.late))
            seq.at_risk_from = float("inf")  # it was alive when this request arrived

    def reaped_first(self, key: Key, now: float, since: float | None = None) -> None:
        """A request of `key` expected to run was refused for want of START, answered after its
        `at_risk_from` (or `since`, where others sent with it ran first): the server reaped the
        sequence before the request arrived. Observation settles the window: the sequence, if the
        model still runs it, is gone, its slot freed between then and `now`."""
        seq = self.seqs.get(key)
        lo = seq.at_risk_from if seq is not None and since is None else since
        if seq is not None and seq.running and key not in self.awaiting and lo < float("inf"):
            self._release(seq, Window(lo, now), expired=True)

    def unreaped(self, key: Key, value: float, sent: float, end: bool = False) -> Answer | None:
        """A request without START to an id the model let expire was answered: the server had
        not reaped the sequence yet (a late reaper, see Ghost). Returns the answer that would
        give and takes the sequence as running again, or None if it cannot have been there (its
        slot went to a backlogged START the server answered, and no slot is left for it). An END
        answered so ends it there, freeing its slot."""
        ghost = self.ghosts.get(key)
        if ghost is not None and ghost.slot_to in self.maybe_ran:
            # Its slot never freed: the cancelled START that may have taken it never ran.
            gone = self.seqs.pop(ghost.slot_to)
            self.maybe_ran.pop(gone.key, None)
            self.depth.ended(gone)
            ghost = self.ghosts[key] = attrs.evolve(ghost, slot_to=None)
        if ghost is not None:
            unadmit = ghost.slot_to in self.awaiting  # then the server has not let it in after all
            if len(self.running) - unadmit >= self.spec.capacity and (unadmit or not self._reaped_instead(ghost)):
                return None
            del self.ghosts[key]
            if unadmit:
                self._unadmit(ghost.slot_to)
            seq = Seq(key, ghost.total, sent, running=True, requests=ghost.requests, starts_before=self.starts)
            self.seqs[key] = seq
            self.revived.add(key)
        elif key in self.revived and key in self.seqs:  # the next of a pipelined run on it
            seq = self.seqs[key]
        else:
            return None
        seq.total = self.then(seq.total, value)
        seq.requests += 1
        seq.last_arrival = sent
        seq.expiry = self._expiry(sent)
        if end:
            self.revived.discard(key)
            self._release(seq, Window(sent, sent + self.prompt))
        return Answer(seq.total, partials=self.spec.chunk_answers(seq.total))

    def _reaped_instead(self, ghost: Ghost) -> bool:
        """A late-reaped `ghost` answered while every slot is held, one of them by the backlogged
        START its slot went to, answered meanwhile: the server let that START in through another
        slot, one whose holder's idle window had opened by the START's answer (a starved reaper
        is late for one sequence and on time for another). The earliest such holder becomes a
        ghost in its place, its slot gone to the same START; a later answer of its own settles it
        the same way. False (a finding) if no holder can have been reaped by then, or if the
        START is not known to have been let in that way."""
        taker = self.seqs.get(ghost.slot_to) if ghost.slot_to is not None else None
        if taker is None or not taker.running or taker.let_in_by is None:
            return False
        held = [s for s in self.running if s.key not in self.awaiting and s.key != ghost.slot_to
                and s.expiry.lo <= taker.let_in_by]
        if not held:
            return False
        gone = min(held, key=lambda s: s.expiry.lo)
        self.seqs.pop(gone.key)
        self.maybe_ran.pop(gone.key, None)
        # Not a slot freed for a new sequence: the ghost keeps its own, the START already had this.
        self.depth.ended(gone)
        self.ghosts[gone.key] = Ghost(gone.total, gone.requests, ghost.slot_to)
        return True

    def reaped(self, key: Key) -> None:
        """The server refused a request without START to `key`: whatever the model let expire
        there is gone."""
        self.ghosts.pop(key, None)

    def _unadmit(self, key: Key) -> None:
        """Puts a START the model had let in from the backlog back at its front."""
        seq = self.seqs[key]
        self.awaiting.pop(key)
        seq.running, seq.admitted, seq.expiry = False, None, None
        self.backlog.insert(0, key)

    def served(self, key: Key, at: float) -> str | None:
        """A backlogged START was answered at `at`. Returns why that breaks capacity, or None
        (and the model now holds the sequence as running)."""
        if key in self.backlog and key not in self.cancelled_waiting:
            # Answered before the model let it in: legal only if, in the earliest schedule the
            # batcher could have followed, enough slots freed by `at` for it to reach the front.
            # A sequence let in after waiting longer than the idle timeout is reaped at once,
            # so slots can pass down the backlog in a chain. If so, they did: observation
            # settles the ambiguity.
            ahead = self._live_backlog().index(key)
            schedule = self._earliest_admissions(ahead + 1)
            if len(schedule) <= ahead or schedule[-1][0] > at:
                rival = self._unanswered_rival(key) or self._ghost_rival(key)
                if rival is not None:
                    self._swap(rival, key)
                    schedule = []
                elif ahead == 0 and self._late_restart(key, at):
                    schedule = []
                else:
                    schedule = self._overtaking(key, at)
                    if schedule is None:
                        held = ", ".join(f"{s.key[1]!r} (idle until >= {s.expiry.lo:.3f})" for s in self.running)
                        return (f"served at t={at:.3f} while every slot was held by a live sequence: {held}; "
                                f"{ahead} earlier sequence(s) in the backlog")
            for _, holder in schedule:
                seq = self.seqs.get(holder)
                if seq is None or not seq.running:  # a cancelled START the chain dropped (unsettled)
                    continue
                # A START+END let in from the backlog freed its slot when it ran, not at expiry
                # (the same rule _earliest_admissions schedules by).
                held = seq.admitted if seq.end_on_admit and seq.admitted else seq.expiry
                self._release(seq, Window(held.lo, min(held.hi, at)), expired=not seq.end_on_admit)
        window = self.awaiting.pop(key, None)
        if window is None:
            return f"answered, but the model holds no backlogged START for {key[1]!r}"
        if at < window.lo:
            earlier = self._passed_on_by_start_end(key, at)
            if earlier is None:
                return (f"served at t={at:.3f}, before the slot it took could have been free "
                        f"(t >= {window.lo:.3f})")
            window = Window(earlier, window.hi)
        seq = self.seqs.get(key)
        if seq is not None:
            # The answer bounds when it got the slot, and so when the reaper may take it.
            seq.admitted = Window(window.lo, min(window.hi, at))
            seq.born = at  # it ran by then: its age counts from no earlier
            seq.let_in_by = at
            seq.expiry = self._expiry(seq.last_arrival, seq.admitted)
            if seq.end_on_admit and self._release(seq, seq.admitted) in (None, *self.maybe_ran):
                self.passed_on.append(seq.admitted)  # (a cancelled START may not have taken it)
        return None

    def _passed_on_by_start_end(self, key: Key, at: float) -> float | None:
        """When a slot reached `key` by `at` through a START+END let in from the backlog: it ran,
        ended and freed its slot at once, so the batcher may have passed that slot on before the
        one the model gave `key` freed (seen live, 30 minutes at -n 12). Either one still
        unanswered, or one whose answer came and whose slot went to no one (passed_on, used up
        here). The earliest such slot's window start; None if there is none. The slot counts
        stay right: `key` holds one slot either way, and the other is free or let in."""
        arrived = self.seqs[key].last_arrival if key in self.seqs else at
        self.passed_on = [w for w in self.passed_on if w.hi >= arrived]  # freed before key queued
        usable = [w for w in self.passed_on if w.lo <= at]
        if usable:
            first = min(usable, key=lambda w: w.lo)
            self.passed_on.remove(first)
            return first.lo
        return min((s.admitted.lo for k, s in self.seqs.items()
                    if k != key and k in self.awaiting and s.end_on_admit and s.admitted is not None
                    and s.admitted.lo <= at), default=None)

    def _unanswered_rival(self, key: Key) -> Key | None:
        """A START the model let in ahead of `key` whose own answer has not come, queued so
        shortly before `key` that the server may have had them the other way round."""
        sent = self.seqs[key].last_arrival
        rivals = [k for k in self.awaiting if k in self.seqs and 0 <= sent - self.seqs[k].last_arrival <= self.order]
        return max(rivals, key=lambda k: self.seqs[k].last_arrival, default=None)

    def _ghost_rival(self, key: Key) -> Key | None:
        """A START queued on the id of a ghost and answered at once: the server still held the
        sequence and restarted it in its slot, where the model had let another START in."""
        ghost = self.seqs[key].ghost_of
        return ghost.slot_to if ghost is not None and ghost.slot_to in self.awaiting else None

    def _overtaking(self, key: Key, at: float) -> list | None:
        """A START answered before the STARTs queued ahead of it could have let it in: those
        queued less than `order` before it may have reached the server after it (two connections
        on a loaded machine; the 50 ms a new START waits makes the send order likely, not
        certain). The earliest schedule with `key` moved ahead of them, where that lets it in by
        `at` (the backlog keeps that order: observation settles it); else None, nothing moved."""
        live = self._live_backlog()
        i = live.index(key)
        sent = self.seqs[key].last_arrival
        j = i
        while j > 0 and 0 <= sent - self.seqs[live[j - 1]].last_arrival <= self.order:
            j -= 1
        if j == i:
            return None
        before = list(self.backlog)
        self.backlog.remove(key)
        self.backlog.insert(self.backlog.index(live[j]), key)
        schedule = self._earliest_admissions(j + 1)
        if len(schedule) > j and schedule[-1][0] <= at:
            return schedule
        self.backlog = before
        return None

    def _late_restart(self, key: Key, at: float) -> bool:
        """The first backlogged START `key` answered while every slot was held: a holder restarted
        just before its idle window and answered after it opened may have been reaped before its
        restart arrived (transit longer than the margin on a loaded machine). Then `key`, queued
        by then, took its slot, and the restart, a new START by then, took the first slot to free
        after that, by its answer (none queued before the restart was sent: they would come
        first). If such a schedule exists, the model follows it (True); else nothing changes."""
        waiting = self.seqs[key]
        for holder in sorted((s for s in self.running if s.restart_answered is not None and s.restart_risk.lo <= at
                              and waiting.last_arrival <= min(s.restart_risk.hi, s.restart_answered)),
                             key=lambda s: s.restart_risk.lo):
            if any(self.seqs[k].last_arrival < holder.born for k in self._live_backlog()
                   if k != key and k not in self.unsettled):
                continue
            window = Window(max(holder.restart_risk.lo, waiting.last_arrival), min(holder.restart_risk.hi, at))
            let_in = attrs.evolve(waiting, running=True, admitted=window,
                                  expiry=self._expiry(waiting.last_arrival, window))
            others = [let_in] + [s for s in self.running if s.key not in (holder.key, key)]
            gone = min(others, key=_frees_from)
            if _frees_from(gone) > holder.restart_answered:
                continue
            holder.restart_risk = holder.restart_answered = None
            self.backlog.remove(key)
            self.seqs[key] = let_in
            self.awaiting[key] = window
            self.depth.slot_taken()
            # The slot `gone` held went to the restart, not down the backlog.
            self.seqs.pop(gone.key)
            self.maybe_ran.pop(gone.key, None)
            self.depth.ended(gone, not gone.end_on_admit)
            self.depth.slot_taken()
            if not gone.end_on_admit:
                self.ghosts[gone.key] = Ghost(gone.total, gone.requests, None)
            return True
        return False

    def _swap(self, rival: Key, key: Key) -> None:
        """The server let `key` in where the model had let `rival` in: observation settles which
        of two STARTs of unknown arrival order got there first. `rival` goes back to the front."""
        r, k = self.seqs[rival], self.seqs[key]
        window = self.awaiting.pop(rival)
        r.running, r.admitted, r.expiry = False, None, None
        self.backlog.remove(key)
        self.backlog.insert(0, rival)
        k.running, k.admitted, k.expiry = True, window, self._expiry(k.last_arrival, window)
        self.awaiting[key] = window

    def _live_backlog(self) -> list[Key]:
        return [k for k in self.backlog if k not in self.cancelled_waiting]

    def _earliest_admissions(self, count: int) -> list[tuple[float, Key]]:
        """For the first `count` backlogged sequences: (earliest admission time, the holder whose
        slot it takes), each holder freeing at its earliest possible expiry."""
        heap = [(_frees_from(s), s.key) for s in self.running]
        heapq.heapify(heap)
        out = []
        for waiting in self._live_backlog()[:count]:
            if not heap:
                break
            free_at, holder = heapq.heappop(heap)
            out.append((free_at, holder))
            seq = self.seqs[waiting]
            # (a cancelled START whose cancel may not have come yet may pass the slot on at once)
            frees = free_at if seq.end_on_admit or waiting in self.unsettled else \
                max(seq.last_arrival + self.spec.idle_s - self.margin, free_at)
            heapq.heappush(heap, (frees, waiting))
        return out

    def due(self, key: Key) -> float | None:
        """By when an admitted backlogged START must have been answered (None: not admitted)."""
        window = self.awaiting.get(key)
        return None if window is None else window.hi + self.prompt

    def cancelled(self, key: Key, settles_at: float | None = None) -> None:
        """A backlogged START was cancelled: the whole sequence ends (TRITON_NOTES.md). It takes
        no slot; its place in the backlog is dropped when a slot next frees. `settles_at`: until
        when the cancel may still be on its way to the server (None: it is there); a slot that
        frees before then may let the START in after all (_maybe_let_in)."""
        if key not in self.backlog:
            return
        if settles_at is not None:
            self.unsettled[key] = settles_at
            return
        self.seqs.pop(key, None)
        self.cancelled_waiting.add(key)

    def cancel_unsettled(self, key: Key) -> float | None:
        """Until when `key`'s cancelled START may still be let in (None: not so)."""
        return self.unsettled.get(key)

    def cut(self, key: Key, freed: Window) -> None:
        """A running sequence ended because a request queued on it was cancelled: the batcher
        releases its slot, drops what was queued on it and forgets the id (core r24.10
        ReleaseSequenceSlot), somewhere in `freed`."""
        seq = self.seqs.get(key)
        if seq is not None and seq.running:
            self._release(seq, freed)

    def went_on(self, key: Key, total: float, at: float) -> None:
        """Observation settles a sum the server's timing left open (a cancel that may have come
        before or after the request it cancelled reached the queue): the sequence goes on with
        `total`."""
        seq = self.seqs.get(key)
        if seq is not None:
            seq.total = total
        self.answered(key, at)

    def lingering(self, key: Key) -> bool:
        """The id of a cancelled START whose backlog place has not been dropped yet."""
        return key in self.cancelled_waiting or key in self.unsettled

    def forget_all(self) -> None:
        """The server restarted, or reloaded the model: every sequence and the backlog are gone."""
        self.just_ended = None
        for seq in self.running:
            self.depth.ended(seq)
        self.seqs.clear()
        self.backlog.clear()
        self.awaiting.clear()
        self.cancelled_waiting.clear()
        self.unsettled.clear()
        self.maybe_ran.clear()
        self.ghosts.clear()
        self.revived.clear()
        self.passed_on.clear()
