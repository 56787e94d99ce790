"""The harness every driver shares: one example's clients, reference model, checker and log.

Data flows one way: a driver (the state machine's rules, or a corpus replay) hands it a Request;
the reference model (model.py) says what must happen, the client (client.py) sends it, the
checker (invariants.py) compares, and the step is logged. Each client owns a gRPC stream; some
steps go over unary gRPC or HTTP instead. A client whose START waits in the backlog is pending
(its box fills when the server lets it in), and a client whose request must wait for an
idle-timeout window is parked: either way only that client waits, the others go on.
"""
from __future__ import annotations

import collections
import time
from typing import Callable

import attrs
from hypothesis.errors import HypothesisException

from .. import nemesis
from . import server as server_module
from .cancelling import Cancelling
from .sharing import Sharing
from ..events import event
from .client import GrpcClient, HttpClient, StreamClient
from ..generator.coverage import CANCELLED_BESIDE, CANCELLED_ID_AGAIN, CANCELLED_QUEUED, EXPIRY_REUSE, KEPT_ALIVE, LONG_LIFE, QUIET, REUSED_AT_ONCE, Coverage, flag_shape, full_rows, live_row_goals
from ..checker.history import history_of
from .lag import Lag
from ..checker import linearize, verdicts
from ..checker.verdicts import FINAL_ALONE, OVERTAKES
from ..values import Cancelled, EndedOr, Fault, Kind, Request, StepRecord  # noqa: F401 - re-exported for drivers and tests
from ..values import LOST_CONNECTION, UNSETTLED, Outcome, program_lines
from ..checker.divergences import accepted, by_key, steered_around
from ..checker.invariants import InvariantViolation, check_prompt, check_served, describe_expectation, failure_key, \
    judged
from ..checker.model import (DTYPE_ERROR, KEPT_WINDOWS, LONG_LIFE_S, OLDER_DTYPE_ERROR, Ambiguous, Answer, BatcherModel, Queued,
    Refusal, Window, idle_margins, key_of, refused_for_start, refused_on_enqueue, too_long)
from ..checker.server_stats import Lenience, Snapshot, Tally, judge
from ..spec import ModelSpec


@attrs.frozen
class FuzzSettings:
    prompt_s: float = 5.0  # a request that must be answered at once gets this long
    margin_s: float | None = None  # how early a sequence may be reaped; default max(0.1 s, 30 % of the timeout)
    late_s: float | None = None  # how late; default max(0.3 s, 60 % of the timeout): the reaper runs at nice 10
    max_clients: int = 6
    wire_s: float = 0.05  # time for a queued START to reach the server before the next step
    shrink_budget_s: float = 30.0  # after the first failure, how long shrinking may replay live programs
    check_stats: bool = True
    # Faults the machine may draw (fuzz/nemesis/__init__.py NEMESES); none by default.
    nemesis: frozenset = attrs.field(default=frozenset(), converter=frozenset)
    proxied_clients: int = 2  # how many clients reach the server through the fault proxy (cut, stall)
    # A request whose answer depends on an idle-timeout window is parked on its client until the
    # window has passed, while the other clients go on (fuzzing). False: the whole engine waits
    # (corpus replay, which re-sends a recorded program in its recorded order).
    park: bool = True
    # How long one client may be held for an idle-timeout window (the model's idle timeout plus
    # the late margin) in any example. An example whose client waits out a longer one idles for
    # seconds at its end, so such waits (up to longest_wait_s) are taken only while the ends of
    # examples spent waiting took under WAIT_SHARE of the campaign (the first is always taken);
    # rules that must wait out a window longer still are left out, and the summary says so.
    max_wait_s: float = 2.0
    longest_wait_s: float = 20.0
    # Keys of known divergences (fuzz/checker/divergences.py) this campaign has seen on its build and whose
    # behaviour the reference now takes as built (their `as_built`), so that it fuzzes on past them.
    accept: frozenset = attrs.field(default=frozenset(), converter=frozenset)
    # Keys of known divergences whose guards are off, so that the fuzzer meets them as it would a
    # bug nobody had seen (pytest --known-divergences find: all; the rediscovery benchmark: one).
    find_known: frozenset = attrs.field(default=frozenset(), converter=frozenset)


DEATH_GRACE_S = 0.5
# After a step, a server seen live this recently counts as live: asking a server someone else runs
# is a round trip, which every step paid (a sixth of a campaign's time). A failure still asks at once.
ALIVE_WITHIN_S = 0.1
GIVEN_UP = frozenset({"CLIENT_TIMEOUT", "CANCELLED"})  # a deadlines fault's call its client gave up
HISTORY_EXAMPLES = 8  # examples kept for a failure that needs what ran before it
# In a clean round (fuzz/campaign.py), a live sequence whose idle window opens within this share of
# the idle timeout is ended between steps (Engine.end_aging): a client left idle past its window
# while the others ran (a long `run`, a crowd) would leave the model what it keeps for it for good,
# where the round means to leave it nothing (seen: 4 of 5 clean examples on a 500 ms model).
AGING_SHARE = 0.5
# How long a backlogged START's cancel may take to reach the server once its stream is closed: a
# loaded 2-core CI let such a START in 0.1 s after the close. Until then a slot that frees may
# still take it (the model's cancelled(settles_at)); nothing waits for it.
CANCEL_REACHES_S = 1.0



class NotPrompt(Exception):
    """A request to be sent with others at once would not be answered at once (it would wait in
    the backlog, or on an idle-timeout window): the generator never sends one so, and a replay
    whose program no longer fits the server's state stops before sending it."""


class Stale(NotPrompt):
    """A live sequence a rule chose to send on with others reached its idle window before they
    went (a starved machine: seen, 19 campaigns on two cores). Nothing was sent and the model is
    as it was: the rule does nothing."""


@attrs.define
class Pending:
    request: Request
    expectation: Queued
    box: object
    sent_at: float
    step: int
    got: object = None  # the answer, once taken from the box (it may be checked later: _collect_answers)

    def answer(self, timeout_s: float = 0.0):
        """The answer if it has come (waiting up to timeout_s), else None."""
        if self.got is None:
            self.got = StreamClient.poll(self.box, timeout_s)
        return self.got


@attrs.frozen
class Parked:
    """A request a client holds back until `until` (monotonic): its answer would depend on which
    side of an idle-timeout window the server is, or it is a START that must not overtake a START
    still on its way to the backlog. Only this client waits; the model is asked again at send time.
    `then`: what the client does once it is answered, if it keeps its sequence going (a pause
    kept up past the idle window): a function giving the next (request, until, last), or None
    when the sequence is gone. `early`: at the example's end it may go before `until` once a slot
    is free (a START that waits only for a slot one sequence's idle window may free: the
    teardown's ENDs free one first)."""
    request: Request
    via: str
    action: str
    context: str
    until: float
    since: float
    then: Callable | None = None
    early: bool = False


@attrs.define
class RunStats:
    """Counters shared by every example of one model's test."""
    examples: int = 0
    steps: int = 0
    requests: int = 0
    ambiguous_waits: int = 0
    backlogged: int = 0  # STARTs sent to wait in the backlog
    started: float = attrs.Factory(time.monotonic)
    first_failure_s: float | None = None
    shortest: dict = attrs.Factory(dict)  # invariant -> the violation with the shortest program seen
    # invariant -> the first violation seen: it ran on the least history, so when the shortest one
    # needs more history than a failure keeps, the first may still replay from a fresh model.
    first: dict = attrs.Factory(dict)
    shrink_stopped: bool = False  # the shrink budget ran out
    # The known divergence the checker named the first failure as it saw it (verdicts: known_as),
    # else "": Hypothesis shrinks it for a share of the budget only (it is reported, not reduced).
    first_known_as: str = ""
    faults: dict = attrs.Factory(dict)  # nemesis rule -> how many times it struck
    fault_s: dict = attrs.Factory(dict)  # server fault -> seconds its strikes took (restarts, reloads)
    wait_s: float = 0.0  # seconds the ends of examples waited for parked requests (idle windows, pauses)
    # Whether those waits had their share of the campaign when the example began, kept from the
    # first failure on: what a rule decides by it, a replay of the example decides alike.
    waits_spent: bool = False
    stuck_s: float = 0.0  # seconds every client waited mid-example for windows to free slots (Engine.wait_*)
    # How many sequences had each length (requests), over every example (fuzz/generator/depth.py): a
    # tally, not a list, so that a campaign of hours keeps it as small as one of seconds.
    lengths: collections.Counter = attrs.Factory(collections.Counter)
    reuse_cycles: int = 0  # expiry -> slot-reuse cycles, over every example
    # Rounds Hypothesis ended on a draw that differed from an earlier one (fuzz/campaign.py).
    unsteady_rounds: int = 0
    harness_errors: int = 0  # examples ended by an error that is no broken promise (machine.teardown)
    lag: Lag = attrs.Factory(Lag)  # how slow the server answers: the hang bound widens with it (fuzz/harness/lag.py)
    # The last examples' programs, oldest first: what ran before a failure (fuzz/corpus/isolate.py).
    history: collections.deque = attrs.Factory(lambda: collections.deque(maxlen=HISTORY_EXAMPLES))
    # Goals reached (fuzz/generator/coverage.py); Setup.of sizes it to the model.
    coverage: Coverage = attrs.Factory(Coverage)
    # When the campaign's budget ends (time.monotonic()): no step starts after it, unless a
    # failure is being shrunk (fuzz/campaign.py sets it; a replay's engine has none).
    stop_at: float = float("inf")
    round_stop_at: float = float("inf")  # when the clean round running now ends (fuzz/campaign.py)
    rounds: int = 0  # rounds of examples begun (campaign._rounds)
    fresh_rounds: int = 0  # of them, those begun on a freshly reloaded model
    # A clean round (campaign.CLEAN_EXAMPLES) is due: the next round begins on a fresh copy.
    clean_due: bool = False
    reload_due: bool = False  # the next round begins on a fresh copy whatever the time (a phase past a divergence)
    clean_rounds: int = 0  # rounds of examples begun that were clean rounds
    in_clean_round: bool = False  # the round running now is one
    clean_examples: int = 0  # examples of those
    # of them, those where a sequence ended with no END all the same (a client left idle past its
    # window while the others ran): from then on the copy is no longer clean
    clean_examples_idled: int = 0
    # Whether a decoupled model's final flag came in a response of its own after any answer so far
    # (True, and it stays so: one such answer shows the model may do it), only in answers (False),
    # or none answered yet (None). final-alone-cancel-crash's guard reads it, as it was when the
    # example began (final_alone_then, kept from the first failure on, as waits_spent is).
    final_alone: bool | None = None
    final_alone_then: bool | None = None

    def example_ended(self, by: BaseException | None) -> bool:
        """Counts an example ended by an error that is no broken promise (a bug of the harness):
        a round it ends can never pass as unsteady (fuzz/campaign.py). True for one."""
        harness = isinstance(by, Exception) and not isinstance(by, (InvariantViolation, HypothesisException))
        self.harness_errors += harness
        return harness

    def forget_failures(self) -> None:
        """A new phase of the campaign (past a known divergence): its failures are its own, the
        counts and the coverage go on."""
        self.first_failure_s, self.shortest, self.first, self.shrink_stopped = None, {}, {}, False
        self.first_known_as, self.harness_errors = "", 0


class BudgetSpent(KeyboardInterrupt):
    """The campaign's budget is spent: the example ends after the step that ran past it (its
    teardown drains and checks as usual) and no new one starts. A KeyboardInterrupt, so that
    Hypothesis stops on it instead of taking it for a failure to shrink."""


class RoundSpent(BudgetSpent):
    """A clean round's time is spent (campaign.CLEAN_ROUND_S): its example ends after the step
    that ran past it, as at the budget's end, and the campaign goes on with a plain round."""


def go_silent(seconds: float) -> float:
    """Every client stays silent for `seconds`; returns the time actually slept."""
    started = time.monotonic()
    if seconds > 0:
        time.sleep(seconds)
    return time.monotonic() - started


@attrs.frozen
class Setup:
    """What every example against one model shares: the server, the model, the settings, the
    campaign's counters, and what follows from them."""
    server: object
    spec: ModelSpec
    settings: FuzzSettings
    stats: RunStats
    margin: float  # how early the server may reap an idle sequence
    late: float  # how late
    n_clients: int
    proxied: range  # the clients that reach the server through the fault proxy
    as_value: type  # int or float: the model's dtype in Python

    @classmethod
    def of(cls, server, spec: ModelSpec, settings: FuzzSettings = FuzzSettings(),
           stats: RunStats | None = None, n_clients: int | None = None) -> "Setup":
        """n_clients: how many stream clients (default: the model's slots + 3, 4 to max_clients: one stays
        free while the others wait on the backlog or a window, see the machine's _last_idle)."""
        margin, late = idle_margins(spec.idle_s, settings.margin_s, settings.late_s)
        n_clients = n_clients or max(4, min(settings.max_clients, spec.capacity + 3))
        stats = stats if stats is not None else RunStats()
        stats.coverage.lo, stats.coverage.hi = spec.value_range
        stats.coverage.full_rows, stats.coverage.row_limit = full_rows(spec), live_row_goals(spec)
        stats.coverage.rounds = spec.rounds if spec.is_float and not spec.iterations else None
        proxied = range(min(settings.proxied_clients, n_clients - 1)) \
            if settings.nemesis & {"cut", "stall"} else range(0)
        return cls(server, spec, settings, stats, margin, late,
                   n_clients, proxied, float if spec.is_float else int)

    @property
    def lingering_guard(self) -> bool:
        """This build leaves a cancelled backlogged START's id behind: no request goes to it."""
        return self.guarded("cancelled-backlog-id-lingers")

    @property
    def start_behind_its_end_ok(self) -> bool:
        """Whether a START may be pipelined right behind an END on its id: not once the campaign
        has taken start-overtakes-its-ids-end as built (what the END answers then depends on how
        the model keeps its state), nor where a START behind a START+END is steered around."""
        return not accepted(self.settings.accept, "no_start_behind_its_end") and \
            not self.guarded("start-behind-end-runs-first") and not self.guarded("iterative-start-after-start-end-stalls")

    def guarded(self, key: str) -> bool:
        """Whether the fuzzer steers around the known divergence `key` on this model and build."""
        version = getattr(self.server, "version", None)
        return any(d.key == key for d in steered_around(self.spec, version, self.settings.find_known))

    @property
    def lenience(self) -> Lenience:
        """What stats_agree lets the fail count do: the guards of this build's known divergences."""
        return Lenience(fails_per_error=2 if self.guarded("ensemble-failure-counted-twice") else 1,
                        fails_per_answer=1 if self.guarded("iterative-release-counts-failure") else 0)

    @property
    def expiry_wait_s(self) -> float:
        """How long a client waits for a sequence it left to surely idle out."""
        return self.spec.idle_s + self.late

    @property
    def expiry_ok(self) -> bool:
        return self.expiry_wait_s <= self.settings.longest_wait_s

    @property
    def expiry_rationed(self) -> bool:
        """Waiting out an idle window costs an example seconds at its end: taken within a share."""
        return self.expiry_wait_s > self.settings.max_wait_s

    @property
    def cancel_pipelined_guard(self) -> str:
        """Why cancel_pipelined is left out for this model on this build ("" if it is not)."""
        if self.spec.decoupled:
            return ("cancel_pipelined: the request after the cancel could only go over a stream, where an "
                    "error swept up with the cancelled sequence is lost (swept-request-error-lost-on-stream)")
        version = getattr(self.server, "version", None)
        keeps = [d.key for d in steered_around(self.spec, version, self.settings.find_known)
                 if d.key == "cancelled-request-keeps-sequence"]
        return f"cancel_pipelined: this build keeps a sequence whose requests were cancelled ({keeps[0]})" \
            if keeps else ""

    def left_out(self) -> tuple:
        """What this model's campaign does not fuzz, and why: one line each."""
        out = () if self.expiry_ok else (
            f"idle expiry (let_expire, refill_after_timeout): waiting out the idle timeout takes "
            f"{self.expiry_wait_s:.1f} s, over longest_wait_s {self.settings.longest_wait_s:g} s; "
            f"fuzz a model with a shorter max_sequence_idle_microseconds for it",)
        cancel = ("cancel: this build runs a START cancelled in the backlog all the same (cancel-not-honoured)",) \
            if self.guarded("cancel-not-honoured") else ()
        return out + cancel + ((self.cancel_pipelined_guard,) if self.cancel_pipelined_guard else ())


CANCEL_WIRE_S = 0.001  # a cancel's way to the server, for ran_beside_given_up


def ran_beside_given_up(got: list, spared: list, at_once: int) -> bool:
    """Whether, in some round of `at_once` calls (the fault's: nemesis.hurry's rounds), a spared call that
    answered ran in an execution that carried more live rows than answers came from it (the rest
    were calls given up in flight: nothing else is sent while calls are hurried), and came after
    every call of its round given up had been cancelled (a given-up call's outcome is stamped
    once its stream's cancel went): those cancels reached the server while that execution ran,
    not once it was over. (A round runs once the one before has come back: a cancel of a later
    round comes after every answer of an earlier one.)"""
    size = max(1, at_once)  # (as nemesis.hurry sends them)
    return any(_ran_beside_in_round(got[i:i + size], spared[i:i + size]) for i in range(0, len(got), size))


def _ran_beside_in_round(got: list, spared: list) -> bool:
    cancels = [o.sent_at + o.latency_s for o, keep in zip(got, spared) if not keep and not o.ok and o.sent_at is not None]
    if not cancels:
        return False
    last_cancel = max(cancels)
    answered = collections.Counter(o.execution for o in got if o.ok and o.execution is not None)
    return any(keep and o.ok and o.execution is not None and o.live_rows is not None and o.sent_at is not None
               and o.live_rows > answered[o.execution] and o.sent_at + o.latency_s > last_cancel + CANCEL_WIRE_S
               for o, keep in zip(got, spared))


class Engine:
    """One example: sends what a driver asks for, checks every answer against the reference
    model, and logs each step. `finish()` drains and checks what is left, then cleans up."""

    def __init__(self, setup: Setup, salt: int):
        self.setup = setup
        self.server, self.spec, self.settings, self.stats = setup.server, setup.spec, setup.settings, setup.stats
        self.margin, self.late, self.n_clients, self.proxied = setup.margin, setup.late, setup.n_clients, setup.proxied
        self.as_value, self.lingering_guard = setup.as_value, setup.lingering_guard
        self.start_end_guard = setup.guarded("iterative-start-after-start-end-stalls")
        self.start_behind_end_guard = setup.guarded("start-behind-end-runs-first")
        # a START that overtook its id's END is a known divergence of this model and build (named as seen)
        self.overtaking_known = by_key(OVERTAKES).applies(self.spec, getattr(self.server, "version", None))
        self.refusal_guard = setup.guarded("ensemble-step-refusal-unanswered")
        # where the step's refusals go unanswered, guarded or not: the clean-up sends none
        self.refusals_lost = by_key("ensemble-step-refusal-unanswered").applies(
            self.spec, getattr(self.server, "version", None))
        self.salt = salt  # fresh ids differ per example: no state leaks between them
        # steering aims at what this example has not reached (what the campaign lacks first)
        self.stats.coverage.new_example(shrinking=self.stats.first_failure_s is not None)
        self.nemesis = nemesis.Nemesis(self.server, self.spec.batcher)  # an ensemble: reload its step
        self.teardown_client = self.n_clients  # past the stream clients: ends what is left, on unary gRPC
        self.model = BatcherModel(self.spec, margin_s=self.margin, prompt_s=self.settings.prompt_s, late_s=self.late,
                                  carries_state=not accepted(self.settings.accept, "carries_no_state"),
                                  dtype_error=OLDER_DTYPE_ERROR if accepted(self.settings.accept, "older_dtype_wording")
                                  else DTYPE_ERROR)
        self.proxy = None
        self.sharing = Sharing(self)  # requests of one sequence sent at once (share_sequence)
        self.cancels = Cancelling(self)  # a request cancelled behind another, and its witness (cancel_pipelined)
        self.connect()
        self.pending: dict[int, Pending] = {}
        self.parked: dict[int, Parked] = {}
        self.draining = False  # the example is over: its teardown sends what is parked and ends what is live
        self.held: dict = {}  # a replay's HELD requests, by client in the order sent, until their answer's step
        self.hooked = False  # a full_batch fault left the server running with its scheduler hooks
        self.silenced: set = set()  # sequences left to expire: no client sends on them
        self.backlog_settled_at = 0.0  # a new START waits until the last queued START is there
        self.used_ids: list = []
        self.touched: set = set()  # every id sent, to clean up after a failure
        # STARTs on a live sequence whose sum is not the one a START begins from, by id(): a
        # START that makes a difference to its answer (coverage: FULL_START)
        self.discarding: dict = {}
        self.log: list[StepRecord] = []
        self.judged = 0  # steps of the log the registered invariants' judges have seen
        self.last_step_at = time.monotonic()
        # What the clients saw since stats_before. A cancelled START: the client cancels locally and
        # never hears whether the server ran it first (a slot can free before the cancel arrives).
        self.tally = self._new_tally()
        self.stats_before = None  # taken at the first request: the last example's stragglers are not ours
        self.failed = False
        self.finished = False

    def death(self, grace_s: float = 0.0, within_s: float = 0.0) -> InvariantViolation | None:
        """server_alive's violation if the server is gone (with its log's last lines), else None.
        `grace_s`: how long to keep looking (a killed process closes its sockets a moment before
        it can be seen to have exited); `within_s`: the server's check_alive's."""
        deadline = time.monotonic() + grace_s
        while True:
            try:
                self.server.check_alive(within_s=within_s)
            except Exception as err:
                return verdicts.server_gone(getattr(err, "reason", None) or str(err), self._after_given_up(),
                                            getattr(err, "log_tail", ""))
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)

    def _after_given_up(self) -> str:
        """What a death came after, where the deadlines or give_up fault gave calls up on this server
        process: the known crash (issue 7368) can show examples later, at any step; and where streams
        were cancelled on a model whose final flag came alone, that too (final-alone-cancel-crash)."""
        given_up, streamed = self.server.calls_given_up, self.server.streams_given_up
        return (f" (after {given_up} unary calls given up by their clients on this server process: the "
                f"deadlines fault)" if given_up else "") + \
            (f" (after {streamed} streamed calls cancelled in flight by their clients on this server process: "
             f"the deadlines or give_up fault{FINAL_ALONE if self.stats.final_alone else ''})" if streamed else "")

    def check_alive(self) -> None:
        """After every step: the server still runs, the run was not told to stop (a signal's
        exception can be lost, e.g. inside a garbage collector's callback, and a round of
        examples can be long), and the campaign's budget is not spent (an example of a fault
        campaign can take minutes)."""
        if server_module.stopping():
            raise server_module.Terminated(server_module.stop_reason() or "the run was told to stop")
        died = self.death(within_s=ALIVE_WITHIN_S)
        if died is not None:
            self.fail(died, self.log[-1] if self.log else None)
        self.judge_steps()
        if self.budget_spent():
            raise BudgetSpent("the campaign's budget is spent")
        if self.stats.first_failure_s is None and not self.stats.harness_errors \
                and time.monotonic() >= self.stats.round_stop_at:  # (not while a failure shrinks)
            raise RoundSpent("the clean round's time is spent")

    def saw(self, got: Outcome) -> None:
        """One request's outcome, as the tally counts it."""
        self.tally.saw(got)
        self.heard(got)

    def heard(self, got: Outcome) -> None:
        """How a decoupled model's answer sent its final flag (RunStats.final_alone: once alone, always)."""
        if got.ok and self.spec.decoupled:
            self.stats.final_alone = bool(self.stats.final_alone) or got.final_alone

    def judge_steps(self) -> None:
        """The registered invariants' judges (invariants.register) over the steps recorded since
        they last looked: after every step, and once the drain has recorded the rest."""
        while self.judged < len(self.log):
            rec = self.log[self.judged]
            self.judged += 1
            violation = judged(rec, self.spec)
            if violation is not None:
                self.fail(violation, rec)

    def judge_history(self) -> None:
        """The history checker (fuzz/checker/linearize.py) on the whole example, once it has drained: an
        answer that no order of the recorded requests explains breaks its promise, whatever the
        reference model made of it (it took a step as indeterminate, or its bookkeeping of a
        pipelined, shared or cancelled group was wrong)."""
        found = linearize.judge(history_of(self.log), self.spec, carries_state=self.model.carries_state)
        broken = next((v for v in found if v.verdict == "broken"), None)
        if broken is not None:
            self.fail_unexplained(broken)

    def fail_unexplained(self, broken: linearize.Verdict) -> None:
        """Fails on the step whose answer the history checker found no order explains."""
        self.fail(verdicts.unexplained(broken), self.log[broken.step - 1])

    def budget_spent(self) -> bool:
        """The campaign's budget has run out (never while a failure is being shrunk): a long
        step (a deep run on a slow model takes a minute) stops sending more."""
        return self.stats.first_failure_s is None and time.monotonic() >= self.stats.stop_at

    def finish(self) -> None:
        """Drains (unless the example failed) and cleans up, whatever happens; once."""
        if self.finished:
            return
        self.finished = True
        if server_module.stopping():
            self.failed = True  # the harness stopped the server: clean up only, check nothing
        try:
            if not self.failed:
                self._drain()
                self.judge_steps()
                self.judge_history()
        finally:
            self.stats.lengths.update(self.model.depth.lengths)
            if self.log:
                self.stats.history.append(tuple(self.log))
            self.stats.reuse_cycles += self.model.depth.reuse_cycles
            self.stats.clean_examples_idled += self.stats.in_clean_round and self.model.depth.expired > 0
            if self.model.restarts:
                self.stats.coverage.situation("restart")
            if self.model.depth.reuse_cycles:
                self.stats.coverage.situation(EXPIRY_REUSE)
            if self.model.long_gaps:
                self.stats.coverage.situation("long gap")
            if self.model.quiet_gaps:
                self.stats.coverage.situation(QUIET)
            if self.model.reused_at_once:
                self.stats.coverage.situation(REUSED_AT_ONCE)
            if self.model.kept_alive:
                self.stats.coverage.situation(KEPT_ALIVE)
            if self.model.long_lived:
                self.stats.coverage.situation(LONG_LIFE)
            self.stats.coverage.depths(self.model.depth.lengths)
            self.stats.coverage.churned(self.model.churn)
            self._cleanup()

    def connect(self):
        """Clients for the server as it is now (a restart may move its ports); the first
        `proxied` clients go through a fresh fault proxy."""
        if self.proxied:
            self.proxy = nemesis.open_proxy(self.server.grpc_url)
        self.streams = [StreamClient(self.proxy.url if c in self.proxied else self.server.grpc_url)
                        for c in range(self.n_clients)]
        # A decoupled model takes no unary call and no HTTP: its "grpc" requests (and the
        # teardown's) go over a stream of their own, and HTTP steps over that too.
        self.grpc = StreamClient(self.server.grpc_url) if self.spec.decoupled else GrpcClient(self.server.grpc_url)
        self.http = HttpClient(self.server.http_url, self.settings.prompt_s) \
            if self.server.http_url and not self.spec.decoupled else None

    def _disconnect(self):
        try:
            self.cancels.close_side_stream(cancel=bool(self.failed))
        except Exception:
            pass
        for s in [*self.streams, self.grpc] if self.spec.decoupled else self.streams:
            try:
                s.close_channel()
            except Exception:
                pass
        if not self.spec.decoupled:
            self.grpc.close()
        if self.http:
            self.http.close()
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None

    def struck(self, fault: str):
        self.stats.faults[fault] = self.stats.faults.get(fault, 0) + 1
        event(f"fault struck: {fault}")

    def statistics(self) -> Snapshot | None:
        """The model's statistics for stats_agree (None when it is not checked or they cannot be read)."""
        return self.server.statistics(self.spec.name) if self.settings.check_stats else None

    def _settled_statistics(self) -> Snapshot | None:
        """The baseline: two readings a moment apart that agree. The server counts a request just
        after answering it, so a request answered right before this example (the last example's
        teardown, someone else's warm-up) may not be counted yet by a first reading, and would
        then count as one of this example's (seen on a loaded machine: one inference too many)."""
        before, deadline = self.statistics(), time.monotonic() + 0.5
        while before is not None and time.monotonic() < deadline:
            time.sleep(0.002)
            again = self.statistics()
            if again == before:
                break
            before = again
        return before

    def record(self, **kw) -> StepRecord:
        now, got = time.monotonic(), kw.get("outcome")
        sent_at = now if got is None else got.sent_at if got.sent_at is not None else now - got.latency_s
        rec = StepRecord(index=len(self.log) + 1, sent_at=sent_at, done_at=now, **kw)
        self.log.append(rec)
        self.last_step_at = time.monotonic()
        self.stats.steps += 1
        self._covered(rec)
        return rec

    def _covered(self, rec: StepRecord) -> None:
        """What a step reached: the sums it was answered with, the batcher situations it shows."""
        cover, got = self.stats.coverage, rec.outcome
        if got is not None and got.ok and rec.expect is not None:
            for value in (*got.partials, got.value):
                cover.answered(value)
            if rec.kind is Kind.ANSWER:
                cover.situation("admitted")
        req = rec.request
        if got is not None and got.ok and got.value is not None and req is not None and self._plain(req):
            cover.summed(req, got.value)  # (an indeterminate one's too: the next sum goes on from it)
        if got is not None and got.ok and req is not None and req.start and not req.end:
            cover.started_beside(req.seq_id, [k[1] for k in self.model.running_keys() if k != key_of(req.seq_id)],
                                 self.spec.id_bits)
        if got is not None and got.ok and got.execution is not None and req is not None:
            cover.ran_in(got.execution, key_of(req.seq_id), flag_shape(req.start, req.end), got.row, got.live_rows)
        if got is not None and got.live_rows:  # the model's own count, exact where statistics guess
            cover.rows_said(got.live_rows, self.discarding.pop(id(req), None) is not None, req is not None and req.end,
                            got.row)
        if rec.kind is Kind.QUEUED:
            cover.situation("backlog")
        if isinstance(rec.expect, Refusal) and rec.expect.invariant == "start_is_required" \
                and got is not None and not got.ok:
            cover.situation("refused")

    def fail(self, violation: InvariantViolation, rec: StepRecord | None = None, *, lost: bool = False):
        """Raises the violation with the program so far. `lost`: the answer was a lost connection,
        which a server dying right now would give (it is looked for a moment longer)."""
        self.failed = True
        if server_module.stopping():
            # A signal stopped the run (its exception can be lost, e.g. raised inside a garbage
            # collector callback): what this example saw since is not a finding.
            raise server_module.Terminated("the run was told to stop; what followed is not a finding")
        if violation.invariant != "server_alive":
            died = self.death(DEATH_GRACE_S if lost else 0.0)
            if died is not None:  # a refusal or a wrong answer seen once the server was gone is its death
                violation = died
        if self.stats.first_failure_s is None:
            self.stats.first_failure_s = time.monotonic() - self.stats.started
            self.stats.first_known_as = getattr(violation, "known_as", "")
        program = "\n".join(program_lines(self.log))
        where = f" at step {rec.index}" if rec else ""
        violation.program = list(self.log)
        violation.history = tuple(self.stats.history)  # the examples before this one
        violation.got = rec.got if rec else getattr(violation, "got", "")
        violation.got += getattr(violation, "after", "")  # what a death came after: the known crash's sign
        violation.expected = rec.expected if rec else getattr(violation, "expected", "")
        key = failure_key(violation)  # (a divergence the checker named is kept apart from a finding)
        self.stats.first.setdefault(key, violation)
        best = self.stats.shortest.get(key)
        # A death keeps the program that was running when it came: every later one (shrinking
        # included) runs against a dead server and fails at once, whatever it sends.
        if best is None or (len(violation.program) < len(best.program) and violation.invariant != "server_alive"):
            self.stats.shortest[key] = violation
        tail = getattr(violation, "log_tail", "")
        violation.args = (f"[{violation.invariant}] {violation.detail}{where}\n"
                          f"model {self.spec.describe()}\nTriton {getattr(self.server, 'version', '?')} at "
                          f"{self.server.grpc_url}{server_module.log_block(tail)}\nprogram:\n{program}",)
        raise violation from None  # what was being handled (a client error) is in the program already

    def idle_clients(self) -> list[int]:
        return [c for c in range(self.n_clients) if c not in self.pending and c not in self.parked]

    def remember(self, seq_id):
        if seq_id not in self.used_ids:
            self.used_ids.append(seq_id)
        self.touched.add(seq_id)

    def expect(self, req: Request, now: float):
        """The reference's expectation of `req` sent at `now` (it updates the reference as if the
        server did it); coverage notes the request's flags and where its id stood before (not
        for a request held back at an idle-timeout window: it is expected again when it goes)."""
        misuse = req.seq_id in (0, "") or too_long(req.seq_id) or not self._plain(req)
        state = None if misuse else self.id_state(req.seq_id)
        if self.stats.coverage.full_rows and req.start and state == "live" \
                and self.model.total(key_of(req.seq_id)) != self.spec.initial_sum:
            self.discarding[id(req)] = req  # kept, so that its id() is not another request's
        exp = self.model.expect(req, now)
        if state is not None and not isinstance(exp, Ambiguous):
            self.stats.coverage.flags(req, state)
        return exp

    def id_state(self, seq_id) -> str:
        """Where `seq_id` stands in this example: fresh, live or done (coverage.ID_STATES)."""
        if self.model.is_live(key_of(seq_id)):
            return "live"
        return "done" if seq_id in self.touched else "fresh"

    def going_out(self, req: Request, *, whole: bool = False) -> None:
        """Bookkeeping for a request about to be sent, however it goes: the statistics baseline
        (taken at the example's first request), its id (for clean-up and reuse, unless it is a
        `whole` sequence no rule goes on with), the request count."""
        if self.stats_before is None:
            began = time.monotonic()  # before the reading: the stretch it starts holds every request after it
            self.stats_before = (began, self._settled_statistics())  # unreadable (None): not judged this example
        if not whole:
            self.remember(req.seq_id)
        self.stats.requests += 1
        self.stats.coverage.sent(req, plain=self._plain(req))

    def _plain(self, req: Request) -> bool:
        """Of the model's dtype, one row: its value is a summand (not a misuse's shape)."""
        return req.batch == 1 and req.dtype == self.spec.dtype

    def _hold_until(self, req: Request, now: float):
        """Until when `req` must wait before it may be sent (None: send it now)."""
        if req.start and not self.model.is_live(key_of(req.seq_id)) and now < self.backlog_settled_at:
            # A START queued in the backlog a moment ago may still be on its way; a new START
            # sent now on another connection could overtake it and take its backlog place.
            return self.backlog_settled_at
        return None

    def send(self, client: int, req: Request, via: str, action: str, context: str = "", park: bool = True,
             since: float | None = None):
        """Sends one request the generator chose; checks a prompt answer, parks a queued one,
        or parks the request itself on its client while its answer depends on a window
        (park=False: waits, as a replay does, for a step that must go now). `since`: when the
        client chose to send it (default now): the silence recorded before it counts from there."""
        self.collect()
        return self.dispatch(client, req, via, action, context, since=time.monotonic() if since is None else since,
                             park=park)

    def dispatch(self, client: int, req: Request, via: str, action: str, context: str, since: float,
                  park: bool = True):
        while True:
            now = time.monotonic()
            # A backlogged START's answer that came before this request is sent is the model's to
            # see first: were an END taken first, the model would let that START in at the END,
            # after its answer (a false capacity_respected at -n 13: the answer came 2 ms before).
            self._collect_answers(before=now)
            hold = self._hold_until(req, now)
            exp = None
            if hold is None:
                exp = self.expect(req, now)
                if isinstance(exp, Ambiguous):
                    self.stats.ambiguous_waits += 1
                    event(f"waited out an idle-timeout window ({exp.reason.split(' ', 1)[0]})")
                    hold = exp.until + 0.005
            if hold is None:
                break
            if park and self.settings.park:
                self.parked[client] = Parked(req, via, action, context, hold, since,
                                             early=exp is not None and exp.or_a_slot)
                return exp or Ambiguous(hold, "held behind a START on its way to the backlog")
            go_silent(max(0.0, hold - time.monotonic()))
            self.collect()
        # Recorded as the silence before this send (since the later of when it was drawn and
        # the last step), so a replay, which runs the steps in order, sleeps just that gap.
        if self._kept_back(exp, action):
            return exp
        waited = now - max(since, self.last_step_at)
        # As it goes, not when a rule chose it (it may park); one the model judges by the id alone
        if isinstance(exp, Refusal) and exp.invariant == "start_is_required" and self.model.lingering(key_of(req.seq_id)):
            self.stats.coverage.situation(CANCELLED_ID_AGAIN)
        self.going_out(req)
        event(f"{action} -> {type(exp).__name__}")
        if isinstance(exp, Queued):
            self._queue(client, req, exp, action, waited)
            return exp
        if via == "stream":
            got = self.streams[client].infer(req, timeout_s=self.answer_bound())
        elif via == "http":
            got = self.http.infer(req, timeout_s=self.answer_bound())
        else:
            got = self.grpc.infer(req, timeout_s=self.answer_bound())
        if got.status not in UNSETTLED:  # a lone request, held by nothing but the server
            self.stats.lag.saw(got.latency_s, self.settings.prompt_s, ran=got.ok)
        self.check(client, req, exp, got, via, action, wait_s=waited, context=context)
        return exp

    def _kept_back(self, exp, action: str) -> bool:
        """Whether a request is not sent: its step would refuse it as it is enqueued, and that
        refusal is never answered (ensemble-step-refusal-unanswered, guarded)."""
        if not (self.refusal_guard and refused_on_enqueue(self.spec, exp)):
            return False
        event(f"{action}: not sent, the step would refuse it unanswered (ensemble-step-refusal-unanswered)")
        return True

    def _new_tally(self) -> Tally:
        """What the clients saw, from nothing; a split ensemble's statistics count one inference
        for the answers of all its chunks."""
        return Tally(answers_per_run=max(1, self.spec.chunks))

    def _release_parked(self) -> None:
        """Sends every parked request whose time has come, the earliest first; at the example's
        end, a START that waits only for a slot once one is free (mid-example, a rule that freed a
        slot for a START of its own, e.g. an id started again at once, must find it free)."""
        while self.parked:
            now = time.monotonic()
            due = [(c, p) for c, p in self.parked.items()
                   if p.until <= now or p.early and self.draining and self.model.free_slots()]
            if not due:
                return
            client, p = min(due, key=lambda cp: cp[1].until)
            del self.parked[client]
            self.dispatch(client, p.request, p.via, p.action, p.context, since=p.since)
            follow = p.then() if p.then is not None and client not in self.parked else None
            if follow is not None:
                req, until, last = follow
                self.parked[client] = Parked(req, p.via, p.action, p.context, until, time.monotonic(),
                                             None if last else p.then)

    def check(self, client, req, exp, got, via, action, *, wait_s=0.0, context="", kind: Kind | None = None):
        """Checks a prompt answer against the model's expectation and logs the step."""
        # A decoupled model's "grpc" steps go over a stream too, whose errors carry no status.
        check = check_prompt(req, exp, got, "stream" if self.spec.decoupled else via, context=context)
        indeterminate = None
        if check.violation is not None:
            indeterminate = self._arrived_after_expiry(req, exp, got)
            if indeterminate is None:
                check, indeterminate = self._reaped_late(req, exp, got, via, check)
        elif isinstance(exp, Refusal) and exp.invariant == "start_is_required":
            self.model.reaped(key_of(req.seq_id))
        if indeterminate:
            check = attrs.evolve(check, expected=f"{check.expected}, or {indeterminate} (indeterminate)",
                                 violation=None)
        elif check.violation is not None and check.violation.invariant == "sums_match" and not req.start \
                and kind is Kind.HELD_ANSWER and self.overtaking_known:
            behind = self._start_behind(client, req)
            overtaken = behind and verdicts.start_ran_first(req, self.spec.start_sums(behind.value, behind.end)[-1],
                                                             self.spec.initial_sum, got, self.model.then)
            check = attrs.evolve(check, violation=overtaken or check.violation)
        kind = kind or (Kind.REFILL if context == "refill" else Kind.REQUEST)
        rec = self.record(client=client, action=action, kind=kind,
                           request=req, via=via, wait_s=wait_s, expected=check.expected, got=check.got,
                           expect=None if indeterminate else exp, outcome=got)
        self.saw(got)
        if got.ok:
            self.model.answered(key_of(req.seq_id), time.monotonic())
        if check.violation:
            self.fail(check.violation, rec, lost=got.status in LOST_CONNECTION)

    def _start_behind(self, client: int, req: Request) -> Request | None:
        """The START the client sent on its stream right behind the END of `req`'s sequence, on its
        id, none of them waited for: the client's HELD steps from `req` on are its sequence's (no
        other START) up to that END, then that START. Else None."""
        held = [s.request for s in self.log if s.kind is Kind.HELD and s.client == client]
        # the very request sent (an equal one may have gone since, in a shortened program), else an equal one
        at = next((i for i in range(len(held) - 1, -1, -1) if held[i] is req), None)
        at = at if at is not None else next((i for i in range(len(held) - 1, -1, -1) if held[i] == req), None)
        if at is None:
            return None
        for i in range(at, len(held)):
            if held[i].seq_id != req.seq_id or (i > at and held[i].start):
                return None
            if held[i].end:
                behind = held[i + 1] if i + 1 < len(held) else None
                return behind if behind is not None and behind.start and behind.seq_id == req.seq_id else None
        return None

    def answer_bound(self) -> float:
        """How long a request that must be answered at once is waited for before it is a hang:
        the prompt bound, widened by the latency measured (fuzz/harness/lag.py)."""
        return self.settings.prompt_s + self.stats.lag.grace()

    def _arrived_after_expiry(self, req: Request, exp, got) -> str | None:
        """A request of a running sequence refused for want of START, answered after the
        sequence's idle window opened: on a loaded machine it can reach the server after the
        reaper took the sequence. Timing decides nothing: the step is indeterminate, and the
        model takes the sequence as expired."""
        now = time.monotonic()
        if not isinstance(exp, Answer) or req.start or got.ok or now < exp.at_risk_from:
            return None
        # (where the step's refusal is never answered, its silence)
        lost = self.refusals_lost and got.status == "CLIENT_TIMEOUT"
        if not (refused_for_start(self.spec, got, req.seq_id) or lost):
            return None
        self.model.reaped_first(key_of(req.seq_id), now)
        self.stats.ambiguous_waits += 1
        event("refused: arrived after its idle window opened (indeterminate)")
        return "refused: it may have arrived after the sequence's idle timeout"

    def _reaped_late(self, req: Request, exp, got, via: str, check):
        """The other side of the same window: a request without START to a sequence the model let
        expire at its window's late edge, answered as the sequence's next request. The late edge
        is an assumption about the reaper's schedule (a starved machine runs it later), so this
        is indeterminate too, and the model takes the sequence as running again. Returns (the
        check, why it is indeterminate or None): answered with another sum than the sequence had
        made, it breaks sums_match either way (seen in CI: a state bug met on a sequence a loaded
        machine's reaper had not taken was called a request that must be refused)."""
        if not (isinstance(exp, Refusal) and exp.invariant == "start_is_required" and got.ok):
            return check, None
        alive = self.model.unreaped(key_of(req.seq_id), req.value, time.monotonic() - got.latency_s, end=req.end)
        if alive is None:
            return check, None
        late = check_prompt(req, alive, got, via)
        if late.violation is not None:
            return attrs.evolve(check, expected=f"{check.expected}, or {late.expected} had the server not reaped "
                                                f"its sequence yet", violation=late.violation), None
        self.stats.ambiguous_waits += 1
        event("answered: its sequence outlived the idle window (indeterminate)")
        return check, f"answered {alive.value:g}: the server may not have reaped it yet"

    def collect(self):
        """Checks what has come back, then sends the parked requests whose time has come."""
        self._collect_answers()
        self._release_parked()

    def _collect_answers(self, before: float | None = None):
        """Checks answered backlogged STARTs, in the order they arrived. A START the model has
        let in is waited for here (until it is due), so that a program notices its answer at
        the same step on every replay, and one that never comes is a hang. `before`: only the
        answers that came before then, and no waiting (a request about to be sent then: the
        model must see what came before it first, and what came after it afterwards)."""
        while True:
            answered = []
            for client, p in list(self.pending.items()):  # every box first: the model may have let
                got = p.answer()                          # in another START than the server did
                if got is not None and (before is None or p.sent_at + got.latency_s < before):
                    answered.append((p.sent_at + got.latency_s, client, p, got))
                    del self.pending[client]
            if before is not None and not answered:
                return
            if not answered:
                dues = sorted((due, client) for client, p in self.pending.items()
                              if (due := self.model.due(key_of(p.request.seq_id))) is not None)
                if not dues:
                    return
                due, client = dues[0]
                grace = self.stats.lag.grace()
                if time.monotonic() <= due + grace:
                    time.sleep(0.001)
                    continue
                p = self.pending.pop(client)
                rec = self.record(client=client, action="still waiting", kind=Kind.STILL_WAITING, request=p.request, via="stream",
                                   expected=describe_expectation(p.expectation), got="no answer",
                                   expect=p.expectation)
                self.fail(verdicts.queued_start_let_in_unanswered(p.step, self.settings.prompt_s + grace), rec)
            for at, client, p, got in sorted(answered, key=lambda a: a[0]):
                problem = self.model.served(key_of(p.request.seq_id), at) if got.ok else None
                check = check_served(p.request, p.expectation, got, problem)
                self.saw(got)
                rec = self.record(client=client, action=f"answer to step {p.step}", kind=Kind.ANSWER, request=p.request,
                                   via="stream", expected=check.expected, got=check.got,
                                   expect=p.expectation, outcome=got)
                event("backlogged START answered")
                if check.violation:
                    self.fail(check.violation, rec, lost=got.status in LOST_CONNECTION)

    def parked_keys(self) -> set:
        return {key_of(p.request.seq_id) for p in self.parked.values()}

    def blocked(self, seq_id) -> bool:
        key = key_of(seq_id)
        if self.model.is_backlogged(key) or self.model.is_awaited(key) or key in self.parked_keys():
            return True
        if self.model.is_spent(key, start_end_too=self.start_end_guard):
            return True
        if key in self.silenced and self.model.is_live(key):
            return True
        return self.lingering_guard and self.model.lingering(key)

    def live(self):
        """Running sequences a client may send on: not waiting for an answer, not left to
        expire, no request parked on them."""
        self.silenced &= self.model.keys()
        held = self.parked_keys()
        return [k for k in self.model.live_keys() if k not in self.silenced and k not in held]

    def cancel_queued(self, client: int):
        """The client cancels its START waiting in the backlog. If a slot may have freed before
        the cancel got there (the model's earliest schedule lets the START in by its answer), an
        answer is the START having run first: a race the model settles by observation (its sum is
        still checked); otherwise an answer breaks cancel_ends_sequence."""
        p = self.pending.pop(client)
        self.streams[client].close(cancel_requests=True, timeout_s=self.settings.prompt_s)  # what was in flight ends CANCELLED
        got = p.answer(self.settings.prompt_s)
        key = key_of(p.request.seq_id)
        action = f"cancel its queued START (step {p.step})"
        ran_first = got is not None and got.ok and self.model.served(key, p.sent_at + got.latency_s) is None
        if ran_first:
            check = check_served(p.request, p.expectation, got, None)
            rec = self.record(client=client, action=action, kind=Kind.CANCEL_QUEUED, request=p.request, via="stream",
                               expected=f"CANCELLED, or {check.expected} if a slot freed before the cancel arrived "
                                        f"(indeterminate)", got=check.got, outcome=got)
            event("cancel raced with the START's admission (indeterminate)")
            self.stats.ambiguous_waits += 1
            self.saw(got)
            if check.violation:
                self.fail(check.violation, rec)
            return
        # (longer where answers come slowly: the lag's grace, ten times the slowest recent one)
        self.model.cancelled(key, settles_at=time.monotonic() + max(CANCEL_REACHES_S, self.stats.lag.grace()))
        self.stats.coverage.situation(CANCELLED_QUEUED)
        self.tally.cancel()
        rec = self.record(client=client, action=action, kind=Kind.CANCEL_QUEUED, request=p.request,
                           via="stream", expected="CANCELLED, sequence ended",
                           got=got.describe() if got else "nothing", expect=Cancelled(), outcome=got)
        ran = verdicts.cancelled_start_ran(got)
        if ran is not None:
            self.fail(ran, rec)

    def go_silent_past_idle(self):
        """Every client goes silent until every running sequence has certainly timed out (a
        wait for every client: the nemesis's full batch, and replays of old programs)."""
        now = time.monotonic()
        seconds = max([e - now for e in self.model.surely_idle_at()] + [0]) + 0.01
        waited = go_silent(seconds)
        self.record(client=None, action="go silent past the idle timeout", kind=Kind.GO_SILENT, wait_s=waited)
        self.collect()

    def wait_while_stuck(self) -> float:
        """When no client can do anything but wait (every slot held by sequences left to expire
        or waiting for an answer, none live to send on), every client waits until the next thing
        time brings: the earliest such sequence surely idles out or a parked request is due.
        Skipping steps instead spent the rest of the example doing nothing (a fifth of a 2-slot
        model's steps). Returns the seconds waited (0: not stuck)."""
        now = time.monotonic()
        self.model.settle(now)
        if self.live() or self.model.free_slots():
            return 0.0
        ends = self.model.surely_idle_at() + [p.until for p in self.parked.values()]
        return self._wait_until(min(ends, default=now) + 0.005, "no slot and no live sequence until a window passes")

    def wait_for_slots(self, needed: int, keep=None) -> float:
        """Every client waits until `needed` slots are surely free, where only time can free them:
        no START waits in the backlog, no live sequence but `keep` could be ended instead, and
        sequences left to expire hold the slots. Never up to the early edge of `keep`'s window
        (a live sequence that is to go on after the wait; it may be one not started yet).
        Returns the seconds waited (0: no such wait)."""
        now = time.monotonic()
        self.model.settle(now)
        short = needed - self.model.free_slots()
        if short <= 0 or self.model.has_backlog() or now < self.backlog_settled_at or \
                any(k != keep for k in self.live()):
            return 0.0
        ends = self.model.surely_idle_at(among=self.silenced)
        if len(ends) < short:
            return 0.0
        until = ends[short - 1] + 0.005
        if self.model.is_live(keep) and until >= self.model.expiry_of(keep).lo - self.settings.wire_s:
            return 0.0
        return self._wait_until(until, f"{needed} slot(s) free once sequences left to expire have")

    def wait_out(self, seconds: float, why: str) -> None:
        """Every client waits `seconds`, recorded as a pause, which a replay and a reproducer sleep too."""
        self.record(client=None, action=f"every client waits: {why}", kind=Kind.PAUSE, wait_s=go_silent(seconds))

    def _wait_until(self, until: float, why: str) -> float:
        """Every client waits until `until` (at most one idle window from now), recorded as a
        pause, which a replay sleeps too; then what came back is checked and what is parked goes."""
        now = time.monotonic()
        if until <= now or until - now > self.setup.expiry_wait_s + 0.005:
            return 0.0
        waited = go_silent(until - now)
        self.record(client=None, action=f"every client waits: {why}", kind=Kind.PAUSE, wait_s=waited)
        self.collect()
        return waited

    def hush(self, client: int, why: str) -> float:
        """Every client waits until `client`'s parked request is due, and nothing is sent
        meanwhile (the model and the server idle); then it goes. Returns the seconds waited: 0
        where another parked request is due first (it would go late)."""
        mine = self.parked.get(client)
        if mine is None or any(p.until < mine.until for c, p in self.parked.items() if c != client):
            return 0.0
        self.collect()
        waited = self._wait_until(mine.until + 0.001, why)
        self.stats.wait_s += waited
        return waited

    def park(self, client: int, req: Request, action: str, until: float, context: str = "",
             then: Callable | None = None):
        self.parked[client] = Parked(req, "stream", action, context, until, time.monotonic(), then)

    def leave_to_expire(self, keys) -> None:
        """No client sends on these sequences any more: they are left to the idle timeout."""
        if keys:
            self.silenced.update(keys)
            self.record(client=None, kind=Kind.LEAVE_TO_EXPIRE, action=f"leave {len(keys)} sequence(s) to expire: "
                                             + ", ".join(repr(k[1]) for k in keys))

    def _queue(self, client: int, req: Request, exp: Queued, action: str, waited: float = 0.0):
        """Sends a START the model queues in the backlog; collect() checks its answer."""
        box = self.streams[client].send(req)
        # Taken after send(): an answer's latency runs from inside it, so sent + latency is never
        # earlier than the answer really came (from `now`, a loaded machine made a START look
        # served before the END that freed its slot was sent).
        sent = time.monotonic()
        self.pending[client] = Pending(req, exp, box, sent, len(self.log) + 1)
        self.stats.backlogged += 1
        # send() hands the request to gRPC's sender thread; two STARTs "sent" a moment apart on
        # different streams can reach the server in either order (seen live), and the backlog's
        # order is the server's. A new START waits until this one is there (_hold_until);
        # nothing else has to.
        self.backlog_settled_at = sent + self.settings.wire_s
        self.record(client=client, action=action, kind=Kind.QUEUED, request=req, via="stream", wait_s=waited,
                     expected=describe_expectation(exp), got="(waiting)", expect=exp)

    def send_nowait(self, client: int, req: Request, action: str):
        """Hands a request to the client's stream without waiting for its answer. Returns
        (client, request, expectation, box, action) for check_sent when an answer or refusal
        is due at once; None when it went another way: queued in the backlog (collect() checks
        it), or parked on its client (held behind a START on its way, or inside an idle window)."""
        now = time.monotonic()
        if req.end:  # it frees a slot: see dispatch (the others of the chunk free none)
            self._collect_answers(before=now)
        if self._hold_until(req, now) is None:
            exp = self.expect(req, now)
            if isinstance(exp, Queued):
                self.going_out(req)
                self._queue(client, req, exp, action)
                return None
            if self._kept_back(exp, action):
                return None
            if not isinstance(exp, Ambiguous):
                self.going_out(req)
                item = client, req, exp, self.streams[client].send(req), action
                # Logged as it went, before the answers to those ahead of it: a replay sends it
                # with them at once too (it may share their executions), and a failure among
                # their answers keeps it in its program.
                self._log_held(item)
                return item
        self.dispatch(client, req, "stream", action, "", since=now)  # parks it (an Ambiguous left the model as it was)
        return None

    def check_sent(self, sent, latency: float = 0.0):
        """Checks the answers to (client, request, expectation, box, action) items, in order; a
        client's pipelined requests get `latency` more each."""
        wait_s = self.answer_bound() + len(sent) * latency
        for client, req, exp, box, action in sent:
            self.check(client, req, exp, StreamClient.wait(box, wait_s), "stream", f"answer to {action}",
                       kind=Kind.HELD_ANSWER)

    def send_held(self, reqs, action: str) -> list:
        """Sends requests without waiting (STARTs into a batch the server holds until it is full,
        or a burst), each logged as a HELD step; check_held checks their answers afterwards."""
        sent = self.send_all(reqs, action)
        for item in sent:
            self._log_held(item)
        return sent

    def _log_held(self, item) -> None:
        """A request sent without waiting for its answer, as a HELD step (its answer is a
        HELD_ANSWER step of its own)."""
        client, req, exp, _, action = item
        self.record(client=client, action=action, kind=Kind.HELD, request=req, via="stream",
                    expected=describe_expectation(exp), got="(held)", expect=exp)

    def check_held(self, sent) -> None:
        for client, req, exp, box, action in sent:
            self.check(client, req, exp, StreamClient.wait(box, self.answer_bound()), "stream",
                       f"answer to {action}", kind=Kind.HELD_ANSWER)

    def send_together(self, reqs, action: str):
        """Sends every (client, request) at once on the clients' streams; each must be answered
        promptly (the model must expect an Answer or a Refusal for each). Logged as HELD steps and
        their answers, so that a replay sends them at once too (what they did together, such as
        sharing a batch, may be what broke)."""
        self.check_held(self.send_held(reqs, action))

    def send_all(self, reqs, action: str) -> list:
        """Sends every (client, request) on the clients' streams at once: all encoded first, then
        handed over together (each client's in order). Returns (client, request, expectation,
        box, action) for each, in the order given."""
        now = time.monotonic()
        self._collect_answers(before=now)
        firsts = {}  # each sequence's first request among them: the model is asked before any
        for _, req in reqs:
            firsts.setdefault(key_of(req.seq_id), req)
        late = [r for k, r in firsts.items() if self.model.at_its_window(k, now)]
        if late:
            raise Stale(f"{late[0].describe()}: its sequence reached its idle window before it went")
        # (asked before the model is: what its step would refuse, a split ensemble never answers)
        lost = [r for k, r in firsts.items() if self.refusal_guard and (
            r.seq_id in (0, "") or not (r.start or self.model.is_live(k)))]
        if lost:
            raise Stale(f"{lost[0].describe()}: the step would refuse it unanswered (ensemble-step-refusal-unanswered)")
        exps, by_client = [], {}
        for i, (client, req) in enumerate(reqs):
            if self.model.waits_for_an_answer(key_of(req.seq_id)):  # e.g. a shrunk program's backlogged START
                raise NotPrompt(f"{req.describe()} would not be answered at once: its sequence waits for an answer")
            exp = self.expect(req, now)
            if not isinstance(exp, (Answer, Refusal)):
                raise NotPrompt(f"{req.describe()} would not be answered at once: {describe_expectation(exp)}")
            self.going_out(req)
            exps.append(exp)
            by_client.setdefault(client, []).append(i)
        staged = {c: self.streams[c].prepare([reqs[i][1] for i in at]) for c, at in by_client.items()}
        boxes = {}
        for c, (messages, client_boxes) in staged.items():
            self.streams[c].push(messages)
            boxes.update(zip(by_client[c], client_boxes))
        return [(client, req, exp, boxes[i], action) for i, ((client, req), exp) in enumerate(zip(reqs, exps))]

    def proxied_idle(self) -> list[int]:
        return [c for c in self.proxied if c not in self.pending and c not in self.parked]

    def cut(self, action: str = "") -> bool:
        """The network resets the proxied clients' connections (RST both ways), and they
        reconnect (a cut channel is not reused). False (nothing done) while one of them waits."""
        if not self.proxied or len(self.proxied_idle()) < len(self.proxied):
            return False
        count = self.nemesis.strike(Fault("cut"), self.proxy)
        for c in self.proxied:
            self.streams[c].close_channel()
            self.streams[c] = StreamClient(self.proxy.url)
        self.struck("cut")
        self.record(client=None, action=action or f"the network cuts the proxied clients' {count} connection(s)",
                    kind=Kind.FAULT, fault=Fault("cut"))
        return True

    def server_fault(self, fault: Fault, action: str) -> bool:
        """Restarts the server or reloads the model with every client disconnected (an open
        stream keeps an unloaded model's old copy alive); afterwards the model holds no sequence
        and the statistics start again from the next request."""
        self.collect()
        if self.pending or self.parked:
            event(f"skipped: {fault.name}: a client waits on the backlog or holds a request back")
            return False
        began = time.monotonic()
        try:
            self._strike_disconnected(fault)
        except Exception as err:  # noqa: BLE001 - a server that does not come back is a finding
            self.fail(verdicts.fault_not_survived(action, err),
                       self.record(client=None, action=action, kind=Kind.FAULT, fault=fault,
                                   got=f"{type(err).__name__}: {err}"))
        finally:
            self.stats.fault_s[fault.name] = self.stats.fault_s.get(fault.name, 0.0) + time.monotonic() - began
        self.struck(fault.name)
        self.record(client=None, action=action, kind=Kind.FAULT, fault=fault)
        return True

    def full_batch(self, starts: list, into_backlog: list) -> bool:
        """The full_batch fault: the server restarts with TRITONSERVER_DELAY_SCHEDULER = the
        model's capacity (and BACKLOG_DELAY_SCHEDULER = how many more STARTs go to the backlog),
        so that the (client, START) pairs of `starts` run as one full batch per instance, each with
        its own sum; `into_backlog`'s STARTs are let in as the batch's sequences idle out. Then
        it restarts without the hooks (a reload would arm them again). False: not struck."""
        hook = {nemesis.DELAY_SCHEDULER: str(self.spec.capacity)}
        if into_backlog:
            hook[nemesis.BACKLOG_DELAY_SCHEDULER] = str(len(into_backlog))
        said = " ".join(f"{k}={v}" for k, v in hook.items())
        if not self.server_fault(Fault("full_batch", env=tuple(sorted(hook.items()))),
                                 f"the server restarts with {said}"):
            return False
        before = self.server.execution_count(self.spec.batcher)
        # Until then no held sequence can have idled out and let a backlog START run after them.
        quiet_until = time.monotonic() + self.spec.idle_s - self.margin
        held = self.send_held(starts, "start (held for a full batch)")
        # The backlog STARTs go on other connections: sent at once, one could overtake a held
        # START (seen in CI: it took a slot and pushed that START into a second batch).
        time.sleep(self.settings.wire_s)
        for client, req in into_backlog:
            self.send(client, req, "stream", "start (into the held backlog)", park=False)
        self.check_held(held)
        after, read_at = self._executions_since(before, quiet_until)
        ran_in = None if before is None or after is None else after - before
        not_full = verdicts.batch_not_full(self.spec.capacity, nemesis.DELAY_SCHEDULER, ran_in, self.spec.instances,
                                           read_early=read_at < quiet_until)
        if not_full is not None:
            self.fail(not_full, self.log[-1])
        while self.pending:  # the backlog gets in as slots idle out; each pass lets one in
            self.go_silent_past_idle()
        self.server_fault(Fault("full_batch"), "the server restarts without the hooks")
        return True

    def _executions_since(self, before: int | None, quiet_until: float) -> tuple:
        """(the batcher's execution count once the held batches have been counted, when it was
        read). The server counts an execution after it has sent its answers (a decoupled model
        answers from inside it), so a count read as the answers come can miss them (seen: a
        decoupled model's full batch read as 0 executions). Read until it shows one per instance
        or the prompt bound has passed, then once more a moment later (one too many shows too),
        unless that would pass `quiet_until`, after which a backlog START may run."""
        deadline = time.monotonic() + self.settings.prompt_s
        after = self.server.execution_count(self.spec.batcher)
        while before is not None and after is not None and after - before < self.spec.instances \
                and time.monotonic() < deadline:
            time.sleep(0.01)
            after = self.server.execution_count(self.spec.batcher)
        if time.monotonic() + 0.1 < quiet_until:
            time.sleep(0.05)
            after = self.server.execution_count(self.spec.batcher)
        return after, time.monotonic()

    def stall(self, client: int, req: Request, since: float, arrival: float, action: str) -> None:
        """The stall fault: `req` goes through the fault proxy, which holds its bytes until
        `arrival`; what the server answers is checked against what the model says for a request
        arriving then (the rule keeps `arrival` out of the idle-timeout window)."""
        self.going_out(req)
        exp = self.expect(req, arrival)
        box = self.nemesis.hold(self.proxy, self.streams[client], req, arrival)
        self.struck("stall")
        self.check(client, req, exp, StreamClient.wait(box, self.answer_bound()), "stream", action,
                   wait_s=arrival - since)

    def close_stream(self, client: int) -> None:
        """The client closes its stream and goes away; its sequences stay live until they time out."""
        self.streams[client].close(cancel_requests=False, timeout_s=self.settings.prompt_s)
        self.record(client=client, action="close its stream", kind=Kind.CLOSE_STREAM)

    def hurry(self, fault: Fault, action: str) -> bool:
        """The deadlines and give_up faults: a START+END on each of the fault's ids, several at
        once, each given up by its client (at its deadline, or cancelled) but the spared ones
        (Fault.spared); deadlines over unary gRPC, give_up on streams of their own. An answer that
        came must be right, and a spared call must be answered; a call given up may or may not
        have run, and whole, so the model only learns the ids were used. Not while a START waits
        in the backlog or fewer slots are free than calls in flight: a call given up in the
        backlog would hold a slot later, unseen. A decoupled model takes no unary call: each goes
        on a stream of its own, cancelled with it (an iterative model's whole sequence is a START
        without END, which iterates until its last release)."""
        self.collect()
        self.model.settle(time.monotonic())
        if self.pending or self.parked or self.model.free_slots() < fault.at_once:
            event(f"skipped: {fault.name}: too few free slots for the calls in flight together")
            return False
        reqs = [self.spec.request(i, self.as_value(1), start=True, end=not self.spec.iterations) for i in fault.ids]
        expected = []
        for req in reqs:
            self.going_out(req, whole=True)  # hundreds of ids, each ended by its own request
            expected.append(self.expect(req, time.monotonic()))
        if not all(isinstance(e, Answer) for e in expected):
            raise ValueError(f"generator error: a whole sequence of the {fault.name} fault expects {expected!r}")
        streams = self.spec.decoupled or fault.name == "give_up"
        got = self.nemesis.hurry(fault, reqs, streams=streams, spared_s=self.answer_bound())
        # what was given up in flight finishes on the server meanwhile: give_up's streams were each
        # waited for, so what runs on is an execution or two of the model's (a fixed 50 ms each time
        # cost give_up_beside a tenth of a campaign's rate)
        time.sleep(self.settings.wire_s if fault.name == "deadlines"
                   else min(self.settings.wire_s, max(0.005, 3 * self.stats.lag.typical())))
        self.struck(fault.name)
        spared_ones = [fault.spared(i) for i in range(len(got))]
        given_up = [o.status in GIVEN_UP and not keep for o, keep in zip(got, spared_ones)]
        timed_out = sum(given_up)
        self.model.given_up(timed_out)
        if streams:
            self.server.streams_given_up += timed_out
            # an iterative START given up may have run any of its executions
            self.tally.cancel(timed_out * max(0, self.spec.iterations - 1))
        else:
            self.server.calls_given_up += timed_out
        spared = sum(spared_ones)
        rec = self.record(client=None, action=action, kind=Kind.FAULT, fault=fault,
                          expected="each answered with its value, or given up; the server lives on"
                                   + (f"; the {spared} spared answered" if spared else ""),
                          got=f"{len(got) - timed_out} answered, {timed_out} given up")
        self._check_given_up(rec, reqs, expected, got, given_up, "stream" if streams else "grpc")
        if fault.name == "give_up":
            self.stats.coverage.gave_up(fault.deadline_us, timed_out, len(got) - spared)
            if ran_beside_given_up(got, spared_ones, fault.at_once):
                self.stats.coverage.situation(CANCELLED_BESIDE)
        if fault.name == "deadlines":  # unary calls given up once stopped unary gRPC's serving (PR 7325)
            self._unary_witness(rec, self._unused_id(fault.ids))
        return True

    def _check_given_up(self, rec: StepRecord, reqs, expected, got, given_up, via: str) -> None:
        """The given-up calls' answers: a death first (the answers it cut off are its symptoms:
        issue 7368's crash, on 2.39-2.51), then each answer that came, and each spared call's
        whatever came (a spared call cancelled is a cancel that reached it), against its
        expectation."""
        for o in got:  # first: a death's detail says how the answers it came after sent their final flags
            self.heard(o)
        died = self.death(DEATH_GRACE_S if any(o.status in LOST_CONNECTION for o in got) else 0.0)
        if died is not None:
            self.fail(died, rec)
        for req, exp, o, gave_up in zip(reqs, expected, got, given_up):
            self.saw(o)
            if gave_up:
                continue
            check = check_prompt(req, exp, o, via)
            if check.violation:  # what came, beside the calls given up (a known crash's signature)
                self.fail(check.violation, attrs.evolve(rec, request=req, via=via, expected=check.expected,
                                                        got=f"{check.got} (of the calls: {rec.got})"))

    def _unused_id(self, ids) -> int:
        """An id next to `ids` that no request of the example went to: none of theirs, whose calls
        given up may still be ending on the server (an iterative START given up iterates on, and a
        request to its id queued behind it is swept up with it: on a decoupled model's stream, with
        its error lost, swept-request-error-lost-on-stream)."""
        candidate = max(ids)
        while True:
            candidate = candidate % (2**self.spec.id_bits - 1) + 1
            if candidate not in ids and candidate not in self.touched and not self.model.is_live(key_of(candidate)):
                return candidate

    def _unary_witness(self, rec: StepRecord, seq_id) -> None:
        """After the deadlines fault (`rec`), a whole sequence on unary gRPC with no deadline: it must
        still be served (2.46 once stopped answering unary calls while HTTP and streams went on). A
        crash that comes just after the calls shows here, and is the fault's."""
        witness = self.spec.request(seq_id, self.as_value(1), start=True, end=True)
        self.going_out(witness, whole=True)
        exp = self.expect(witness, time.monotonic())
        bound = self.answer_bound()
        got = self.grpc.infer(witness, timeout_s=bound)
        action = "after the calls given up, a whole sequence on unary gRPC"
        died = self.death(DEATH_GRACE_S) if got.status in LOST_CONNECTION else None
        if died is not None:
            self.fail(died, rec)
        if got.status == "CLIENT_TIMEOUT":  # the fault's doing: the violation is its step's
            self.record(client=self.teardown_client, action=action, request=witness, via="grpc",
                        expected=describe_expectation(exp), got=got.describe(), expect=exp, outcome=got)
            self.fail(verdicts.unary_hung_after_given_up(bound), rec)
        self.check(self.teardown_client, witness, exp, got, "grpc", action)

    def _strike_disconnected(self, fault: Fault) -> None:
        """Strikes a server fault with every client disconnected (an open stream keeps an
        unloaded model's old copy alive), then reconnects: the model holds no sequence, the
        statistics start again, and `hooked` says whether the scheduler hooks are armed."""
        self._disconnect()
        try:
            self.nemesis.strike(fault)
        finally:
            self.connect()
        self.model.forget_all()
        self.silenced.clear()
        self.stats_before, self.tally = None, self._new_tally()
        if fault.name != "reload":
            self.hooked = bool(fault.env)  # the server now runs with (or without) the scheduler hooks

    def _end_maybe_ran(self, key) -> None:
        """Ends a START that may have run (its cancel came after a slot freed) once the cancel has
        surely come, instead of waiting out its idle window (the ends of examples spent seconds
        so): it ran, and the END answers its sum; or it did not (or its cancel or its idle
        timeout ended it), and the END is refused for want of START. Anything else breaks a promise."""
        self._end_told_apart(
            key, "end (teardown) a START that may have run",
            "its cancelled START ran", "the START-flag error or CANCELLED (it did not, or its cancel ended it)",
            self.cancels.refused_with_it, lambda key, ran, sent: self.model.end_maybe_ran(key, sent))

    def _end_at_its_window(self, key) -> None:
        """Ends a sequence the example left inside its idle window now, instead of waiting the
        window out (the ends of examples spent seconds so): still there, the END answers its sum;
        reaped, it is refused for want of START. Whether it was reaped is not judged: inside the
        window the server may do either."""
        self._end_told_apart(
            key, "end (teardown) a sequence at its idle timeout",
            "it was still there", "the START-flag error (its idle timeout ended it)",
            lambda got, req: refused_for_start(self.spec, got, req.seq_id), self.model.ended_at_its_window)

    def _told_apart_at_its_window(self, key) -> bool:
        """Whether the teardown ends `key` inside its idle window: not one left to expire on
        purpose, nor where a refusal is never answered, nor on a split ensemble (the reaper may
        act between the chunks of one END: answered in part, then refused)."""
        return (self.model.at_its_window(key, time.monotonic()) and key not in self.silenced
                and not self.refusals_lost and not self.spec.chunks)

    def end_told_apart(self, key) -> None:
        """A replay's TOLD_APART step: the END goes as the teardown sent it, where the model is
        as it was then (a cancelled START that may have run, once its cancel has surely come; a
        live sequence as the teardown ends one: told apart inside its idle window)."""
        until = self.model.maybe_ran_until(key)
        if until is not None:
            go_silent(max(0.0, until - time.monotonic()))
            self._end_maybe_ran(key)
        else:
            self._end_at_teardown(key)

    def _end_at_teardown(self, key, action: str = "end (teardown)") -> None:
        """The teardown's END of a live sequence: told apart inside its idle window, else a plain
        END (which parks the teardown client where its answer depends on a window)."""
        if self._told_apart_at_its_window(key):
            self._end_at_its_window(key)
        else:
            self.send(self.teardown_client, self.spec.request(key[1], self.as_value(0), end=True), "grpc", action)

    def end_aging(self, keep=None) -> None:
        """Between the steps of a clean round, and between the answered chunks of a long one
        (`keep`: the sequence it goes on with): every other live sequence a client may send on
        whose idle window opens within AGING_SHARE of the idle timeout is ended now, on the
        teardown client as the teardown ends one, so that none idles out."""
        if not self.stats.in_clean_round or self.failed:
            return
        now = time.monotonic()
        for key in [k for k in self.live()
                    if k != keep and self.model.expiry_of(k).lo - now < AGING_SHARE * self.spec.idle_s]:
            if self.teardown_client in self.parked:
                break
            if self.model.is_live(key):
                self._end_at_teardown(key, "end it before it idles out (a clean round)")

    def _end_told_apart(self, key, action: str, ran_means: str, refused_means: str, refused_ok, settle) -> None:
        """Sends the teardown END of `key`, whose state only its answer tells: answered with its
        sum (`ran_means`), or refused (`refused_ok(got, req)`: as `refused_means` says), and
        `settle(key, answered, Window(sent, back))` tells the model which. The slot is free either way."""
        req = self.spec.request(key[1], self.as_value(0), end=True)
        # An answer that came before this END is the model's to see first (as in dispatch): a
        # backlogged START let in by an expiry, answered, must not be let in by this END instead.
        self._collect_answers(before=time.monotonic())
        if not self.model.is_live(key):  # that answer's schedule had the reaper free its slot for it
            return
        total = self.model.then(self.model.total(key), req.value)  # the initial sum's, where no state is carried
        self.going_out(req)
        sent = time.monotonic()
        waited = sent - self.last_step_at  # the silence before it, which a replay keeps
        got = self.grpc.infer(req, timeout_s=self.answer_bound())
        settle(key, got.ok, Window(sent, time.monotonic()))
        rec = self.record(client=self.teardown_client, action=action, kind=Kind.TOLD_APART, request=req, via="grpc",
                          wait_s=waited,
                          expected=f"OUTPUT={total!r} ({ran_means}), or {refused_means}", got=got.describe(),
                          expect=EndedOr((total,)), outcome=got)
        self.saw(got)
        violation = verdicts.told_apart(got, total, req, ran_means, refused_means, refused_ok)
        if violation is not None:
            self.fail(violation, rec, lost=got.status in LOST_CONNECTION)

    def _drain(self):
        """Sends what is parked, ends every live sequence (which lets the backlog in) once no
        request is held on it, checks every answer, and checks the server's statistics
        against the successful requests."""
        if self.sharing.shared is not None:  # a shortened program sent requests at once and not their answers' step
            self.sharing.check("answer to the requests sent at once")
        self.draining = True
        window = self.spec.idle_s + self.margin + self.late
        kept = sum(1 for p in self.parked.values() if p.then is not None)  # each goes on for KEPT_WINDOWS more
        deadline = time.monotonic() + self.answer_bound() + (len(self.pending) + len(self.parked) + 2
                                                                + kept * KEPT_WINDOWS) * window + kept * LONG_LIFE_S
        waiting_since = time.monotonic() if self.parked else None
        while time.monotonic() < deadline:
            self.collect()
            if waiting_since is not None and not self.parked:
                self.stats.wait_s += time.monotonic() - waiting_since
                waiting_since = None
            self.model.settle(time.monotonic())
            # Every live sequence is ended: the example is over, and waiting out idle windows
            # would idle the machine. Not one a parked request goes to, and not those left to
            # expire while any request is parked: it waits for their windows anyway, and a START
            # after timeout must find the slot an expiry freed, not an END. The teardown client
            # sends the ENDs, on unary gRPC: every stream client may be waiting on the backlog
            # behind these very sequences. One at a time: it may have to park. One the example
            # left inside its idle window goes at once, its answer telling whether it was reaped;
            # not one left to expire on purpose, whose END after the window checks that it was.
            held = self.parked_keys() | (self.silenced if self.parked else set())
            for key in [k for k in self.model.live_keys() if k not in held]:
                if self.teardown_client in self.parked:
                    break
                self._end_at_teardown(key)
            # (not where the step's refusal is never answered: such a START is left to its idle
            # window; parked STARTs that wait only for a slot are what these ENDs free one for)
            if not (self.pending or self.refusals_lost or any(not p.early for p in self.parked.values())):
                for key in self.model.settled_maybe_ran(time.monotonic()):
                    self._end_maybe_ran(key)
            if not (self.model.keys() or self.pending or self.parked):
                break
            next_parked = min((p.until for p in self.parked.values()), default=float("inf"))
            time.sleep(max(0.0, min(0.01, next_parked - time.monotonic())))
        self.collect()
        if self.pending or self.parked:
            what = next(iter(self.pending.values()), None)
            self.fail(verdicts.never_answered(len(self.pending), what.step if what else None, len(self.parked)))
        if self.stats_before is None or self.stats_before[1] is None:
            return
        # The server updates its statistics just after it answers: give it a moment.
        deadline = time.monotonic() + 2.0
        while True:
            after = self.statistics()
            problem = None if after is None else self._stats_problem(after, time.monotonic())
            if problem is None or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if problem is not None:
            rises = after.rise_since(self.stats_before[1]).describe()
            self.fail(verdicts.stats_disagree(problem, self.tally.describe(), rises))

    def _stats_problem(self, after: Snapshot, now: float) -> str | None:
        began, before = self.stats_before
        return judge(after.rise_since(before), self.tally, now - began, self.spec.max_batch_size, self.setup.lenience)

    def _cleanup(self):
        """Leaves the server as it found it, whatever happened: cancel what waits, end every id
        this example touched, close everything."""
        if self.proxy is not None:
            self.proxy.resume()  # a failure inside a stall must not leave the proxy holding bytes
        for s in self.streams:
            try:
                s.close(cancel_requests=bool(self.failed or self.pending), timeout_s=self.settings.prompt_s)
            except Exception:
                pass
        if self.hooked and not server_module.stopping():
            # An example that failed inside a full_batch left the scheduler hooks armed: every
            # later request would wait for a full batch. A restart without them also ends every
            # sequence, so nothing is left to end.
            self._strike_disconnected(Fault("full_batch"))
            self.touched.clear()
        if self.failed and not server_module.stopping():  # a stopped server needs no clean-up
            # not an id a cancelled START holds: its END would wait behind its dead backlog place
            unanswered = self._end_each([i for i in self.touched if not self.model.lingering(key_of(i))])
            if self.model.has_backlog() or self.pending or unanswered:
                # Let what was queued run or idle out: the next example may send to the same
                # boundary ids (sent unsalted), and must find none of them live.
                time.sleep(self.spec.idle_s + self.margin + self.late)
        elif not server_module.stopping():
            # The sequences the model let expire at the late edge of their windows (ghosts) may
            # still be held where the reaper runs later than that (a loaded machine). The next
            # example, a shrink's replay above all, sends to the same ids: a request without
            # START to one must be refused there. An END frees whichever is still held; one left
            # unanswered may still be queued, to end the next example's sequence: let it run first.
            if self._end_each([key[1] for key in self.model.ghost_keys()]):
                time.sleep(self.spec.idle_s + self.margin + self.late)
        self._disconnect()

    def _end_each(self, seq_ids) -> bool:
        """A clean-up END (unary, unrecorded) to each of `seq_ids` a request may go to; whether
        one came back unsettled (it may still be queued on the server). Where a refusal would never
        be answered (ensemble-step-refusal-unanswered), a START+END: it ends a live sequence and
        starts and ends one where none lives, and is refused nowhere."""
        unanswered = False
        for seq_id in seq_ids:
            if seq_id not in (0, "") and not too_long(seq_id):
                req = self.spec.request(seq_id, 0, start=self.refusals_lost, end=True)
                unanswered |= self.grpc.infer(req, timeout_s=2).status in UNSETTLED
        return unanswered
