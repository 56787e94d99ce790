"""The values every part of the fuzzer shares, and nothing else: a request, what came back, what
the reference model expects of it, and a step of a program (its kind, the fault a nemesis step
struck, its expectation and outcome). The reference model, the client, the engine, the corpus
and the reproducer renderer all import these; this module imports nothing of the fuzzer's own.
"""
from __future__ import annotations

import enum
from typing import Union

import attrs

SeqId = Union[int, str]


def _number(value):
    """A plain int or float: a drawn value may come as a subclass that carries what the generator
    meant by it (edges.SumTarget), which stays with the generator."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return int(value) if isinstance(value, int) else float(value)


@attrs.frozen
class Request:
    """One inference request of the accumulator contract: INPUT of shape [batch, 1], or [batch]
    for a model without a batch dimension (max_batch_size 0), where a batch of 2 is a shape error."""

    model: str
    seq_id: SeqId
    value: float = attrs.field(default=0, converter=_number)
    start: bool = False
    end: bool = False
    dtype: str = "INT32"  # what is sent; a model's own dtype unless a rule sends the wrong one
    batch: int = 1
    timeout_us: int | None = None
    batch_dim: bool = True

    @property
    def shape(self) -> tuple[int, ...]:
        """INPUT's shape on the wire."""
        return (self.batch, 1) if self.batch_dim else (self.batch,)

    def describe(self) -> str:
        flags = "".join(f for f, on in (("S", self.start), ("E", self.end)) if on) or "-"
        extra = f" batch={self.batch}" if self.batch != 1 else ""
        extra += f" dtype={self.dtype}" if self.dtype not in ("INT32", "FP32", "INT64") else ""
        extra += f" timeout={self.timeout_us}us" if self.timeout_us is not None else ""
        return f"{self.model} id={self.seq_id!r} value={self.value!r} flags={flags}{extra}"


@attrs.frozen
class Outcome:
    """What came back: a value (OUTPUT[0]) or an error with its gRPC / HTTP status and message."""

    value: float | None = None
    status: str = "OK"
    message: str = ""
    latency_s: float = 0.0
    # The answers a request sent before its final one (an iterative sequence's request answers
    # once per execution), in order; empty for a request answered once.
    partials: tuple = attrs.field(default=(), converter=tuple)
    # The live (READY) rows of the execution that answered, where the model says so (modelgen's
    # Python and native models answer modelgen.variants.LIVE_ROWS_OUTPUT beside OUTPUT); None where it does not.
    # Coverage only: no verdict reads it.
    live_rows: int | None = None
    row: int | None = None  # and the request's row in it (modelgen.variants.ROW_OUTPUT); coverage only too
    # and the execution's serial (modelgen.variants.EXECUTION_OUTPUT): answers with one serial ran
    # together. A reading of the run, as sent_at is: coverage only, not kept in a corpus entry.
    execution: int | None = attrs.field(default=None, eq=False, repr=False)
    # When its request was sent (time.monotonic(), taken just before the send): a step's history
    # interval starts there (fuzz/checker/history.py). None where no client timed it.
    sent_at: float | None = attrs.field(default=None, eq=False, repr=False)
    # OUTPUT's shape as it came back: the final answer's, or, where that is its INPUT's, the first
    # answer before it shaped otherwise (one wrong shape among several shows). None where unread.
    shape: tuple | None = attrs.field(default=None, converter=lambda s: None if s is None else tuple(int(d) for d in s))
    datatype: str | None = None  # and its datatype (INT32, FP32, ...), alike
    # A decoupled model's final flag came in a response of its own, after the answer (the common
    # send(response); send(flags=FINAL)). A reading of how the model answers, as sent_at is: no
    # verdict reads it, and a corpus entry does not keep it (final-alone-cancel-crash's guard reads it).
    final_alone: bool = attrs.field(default=False, eq=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "OK"

    @property
    def runs(self) -> int:
        """Executions its answers show (the server's inference_count counts each): one per answer."""
        return len(self.partials) + self.ok

    def describe(self) -> str:
        if not self.ok:
            return f"{self.status}: {self.message}"
        return f"OUTPUT={self.value!r}" + (f" after {list(self.partials)!r}" if self.partials else "")


# Answers that mean the connection went, not that the server answered.
LOST_CONNECTION = frozenset({"UNAVAILABLE", "STREAM_CLOSED"})
# A clean-up END that came back so may still be queued: the server is not settled yet.
UNSETTLED = LOST_CONNECTION | {"CLIENT_TIMEOUT"}
# How long a control call (metadata, statistics, a config) may take: a wedged server must not hang the fuzzer.
CONTROL_TIMEOUT_S = 10.0
# Answers that do not say whether the server ran the request (it may have, or not).
UNSEEN = UNSETTLED | {"CANCELLED"}


# -- what must happen: the reference model's expectations ----------------------------------------

@attrs.frozen
class Answer:
    """A prompt response with this OUTPUT. `at_risk_from`: for a request of a running sequence,
    when the server may have reaped the sequence before the request got there."""
    value: float
    at_risk_from: float = attrs.field(default=float("inf"), eq=False)
    # The answers before the final one, in order (an iterative sequence's START: one per execution).
    partials: tuple = attrs.field(default=(), converter=tuple, kw_only=True)


@attrs.frozen
class Refusal:
    """A prompt error. `invariant` names the promise the refusal keeps."""
    status: str
    message: str
    invariant: str


@attrs.frozen
class Queued:
    """Every slot is held: the request waits in the backlog; answered with `value` once admitted
    (after `partials`, as an Answer's)."""
    value: float
    partials: tuple = attrs.field(default=(), converter=tuple, kw_only=True)


@attrs.frozen
class Cancelled:
    """A START cancelled while it waited in the backlog: it must not run (its answer, if any, is
    an error), and its whole sequence ends."""


@attrs.frozen
class EndedOr:
    """The next request of a sequence one of whose queued requests was cancelled
    (cancel_pipelined): the sequence ended with it, so it is refused (the START-flag error, or
    CANCELLED when it was swept up with it); or, where the server's timing leaves it possible
    that the cancelled request was not queued before, answered with one of `values`."""
    values: tuple = attrs.field(default=(), converter=tuple)


@attrs.frozen
class AnyOrder:
    """One of several requests of a sequence sent at once from different connections
    (share_sequence): answered with one of `values`, its running sum in some arrival order (the
    engine checks them together: one order for all)."""
    values: tuple = attrs.field(converter=tuple)


@attrs.frozen
class Ambiguous:
    """The answer depends on which side of an expiry window the server is; ask again after `until`
    (`or_a_slot`: or as soon as a slot is free, where a slot that may free is all it waits for)."""
    until: float
    reason: str
    or_a_slot: bool = False


Expectation = Union[Answer, Refusal, Queued, Cancelled, EndedOr, AnyOrder, Ambiguous]


# -- a program's steps ----------------------------------------------------------------------------

@attrs.frozen
class Traits:
    """What the history checker, the shrinker and the isolator need to know of a kind of step,
    declared with the kind (their tables are read off these)."""
    sent: bool = False  # a request sent after the step's recorded silence, on its client's connection
    later: bool = False  # its request's answer is a step of its own, later in the program
    answers: str = ""  # the kind (its value) of the `later` step whose answer it records
    own_stream: bool = False  # on the client's own stream where its via is "stream"
    new_stream: bool = False  # the client's stream closes: its next requests go on another
    waits: bool = False  # waits out an idle timeout or a recorded silence (a second or more)
    group: str = ""  # the kinds of one group go out and are answered as one unit (shrink)
    ends_group: bool = False  # one of a group's last steps: a send after it begins another group
    rebases: bool = False  # its request leaves its sequence's sum open (no single answer follows)
    in_runs: bool = False  # sent back to back in runs of alike steps: shown as one line, shrunk by halves
    sequential: bool = False  # a program of such steps alone replays one step at a time, at any pace


class Kind(str, enum.Enum):
    """What a step did, and its traits. Replay and the standalone reproducer act on it (each kind
    registers both once, where its family sends it: fuzz/steps.py); `action` is its text."""

    def __new__(cls, value: str, traits: Traits = Traits()):
        kind = str.__new__(cls, value)
        kind._value_ = value
        kind.traits = traits
        return kind

    # a request a rule sent, answered at once (the action names the rule)
    REQUEST = "request", Traits(sent=True, own_stream=True, sequential=True)
    # an END the teardown sends where only its answer tells the sequence's state (inside its idle
    # window, or a cancelled START that may have run): its sum, or the START-flag error
    TOLD_APART = "told_apart", Traits(sent=True, sequential=True)
    # a fresh START after an idle timeout: its refusal breaks slots_reused
    REFILL = "refill", Traits(sent=True, own_stream=True, sequential=True)
    # a START that waits in the backlog; its ANSWER step checks it
    QUEUED = "queued", Traits(sent=True, later=True, own_stream=True, sequential=True)
    ANSWER = "answer", Traits(answers="queued", sequential=True)  # a backlogged START's answer came
    # a backlogged START's answer was due and did not come
    STILL_WAITING = "still_waiting", Traits(answers="queued", sequential=True)
    # the client cancels its START waiting in the backlog
    CANCEL_QUEUED = "cancel_queued", Traits(answers="queued", new_stream=True)
    # every client is silent until every running sequence timed out
    GO_SILENT = "go_silent", Traits(waits=True, sequential=True)
    # no client sends on these sequences any more
    LEAVE_TO_EXPIRE = "leave_to_expire", Traits(waits=True, sequential=True)
    PAUSE = "pause", Traits(waits=True, sequential=True)  # a recorded silence (format 1 programs)
    CLOSE_STREAM = "close_stream", Traits(new_stream=True, sequential=True)  # the client closes its gRPC stream
    # sent with others at once, not waited for (burst; full_batch: a batch held until full)
    HELD = "held", Traits(later=True, own_stream=True, group="held")
    # its answer, checked once all of them went
    HELD_ANSWER = "held_answer", Traits(answers="held", group="held", ends_group=True)
    FAULT = "fault"  # a nemesis fault (cut, restart, reload, full batch)
    # cancel_pipelined (fuzz/harness/cancelling.py), in this order: the next request of a running
    # sequence on unary gRPC, not waited for (ASIDE); one behind it on the client's stream
    # (BEHIND); a witness behind that on unary gRPC or a stream of its own (ASIDE, its `via`);
    # the stream cancelled; the two answers (ASIDE_ANSWER); the sequence's next request
    # (AFTER_CANCEL, EndedOr). A late group has no witness: its CANCEL_STREAM waited (wait_s) that
    # long after the first's answer came and the one behind went, and the first's ASIDE_ANSWER follows it.
    ASIDE = "aside", Traits(later=True, group="cancel", rebases=True)
    BEHIND = "behind", Traits(later=True, own_stream=True, group="cancel", rebases=True, in_runs=True)
    CANCEL_STREAM = "cancel_stream", Traits(new_stream=True, group="cancel")
    ASIDE_ANSWER = "aside_answer", Traits(answers="aside", group="cancel", ends_group=True, rebases=True)
    AFTER_CANCEL = "after_cancel", Traits(group="cancel", ends_group=True, rebases=True)
    # half_close (fuzz/harness/closing.py): a client's requests sent back to back on its stream
    # (HELD), its side of the stream closed before they are answered, then their answers
    HALF_CLOSE = "half_close", Traits(new_stream=True, group="held")
    # share_sequence (fuzz/harness/sharing.py): requests of one sequence sent at once from several
    # clients' streams (SHARED), then their answers, checked together (SHARED_ANSWER, AnyOrder).
    SHARED = "shared", Traits(later=True, own_stream=True, group="shared", rebases=True)
    SHARED_ANSWER = "shared_answer", Traits(answers="shared", group="shared", ends_group=True, rebases=True)


@attrs.frozen
class Fault:
    """A nemesis fault as a program records it, so that a replay can strike it again."""
    name: str  # one of nemesis.NEMESES
    graceful: bool = False  # restart: SIGTERM (a clean stop), else SIGKILL (a crash)
    env: tuple = ()  # (name, value) pairs the restarted server gets (full_batch's scheduler hooks)
    # deadlines: unary gRPC calls, each a whole sequence (START+END) on one of `ids`, `at_once` of
    # them in flight together, each given up by its client after `deadline_us`
    ids: tuple = attrs.field(default=(), converter=tuple)
    at_once: int = 0
    deadline_us: int = 0
    # deadlines and give_up: every spare_every-th call (the k-th, 2k-th, ...) is spared: sent with
    # no deadline beside the calls given up, it must be answered right (a cancel must not reach a
    # request nobody cancelled, in its execution or anywhere); 0: none spared.
    # give_up: the same calls on streams of their own, each stream cancelled at the deadline.
    spare_every: int = 0

    def spared(self, i: int) -> bool:
        """Whether the fault's i-th call is spared."""
        return self.spare_every > 0 and i % self.spare_every == self.spare_every - 1


@attrs.frozen
class StepRecord:
    """One line of a program: who did what, what was expected, what came back."""
    index: int
    client: int | None
    action: str
    request: Request | None = None
    via: str = ""
    wait_s: float = 0.0
    expected: str = ""
    got: str = ""
    kind: Kind = attrs.field(default=Kind.REQUEST, kw_only=True, converter=Kind)
    fault: Fault | None = attrs.field(default=None, kw_only=True)  # what a FAULT step struck
    # What the reference model required, and what came back, as values: `expected` and `got`
    # are their text for people. None where the step checked nothing (or its check was
    # indeterminate) and where nothing came back.
    expect: Answer | Refusal | Queued | Cancelled | EndedOr | AnyOrder | None = attrs.field(default=None, kw_only=True)
    outcome: Outcome | None = attrs.field(default=None, kw_only=True)
    # A cancel's (CANCEL_STREAM): what each request behind on the cancelled stream had answered
    # when the cancel went, in the order sent (an Outcome, or None where nothing had come).
    answers_behind: tuple = attrs.field(default=(), kw_only=True, converter=tuple)
    # When its request went out (its client's clock, where an answer came) and when the step was
    # recorded (time.monotonic()), where known: shrinking keeps a request as far from the kept
    # step before it as it was, since a bug can need the gap (fuzz/corpus/shrink.py), and a history is
    # judged by them (fuzz/checker/history.py). A saved program keeps them as seconds from its first step
    # (a replay still keeps its silences, not these times).
    sent_at: float | None = attrs.field(default=None, kw_only=True, eq=False, repr=False)
    done_at: float | None = attrs.field(default=None, kw_only=True, eq=False, repr=False)

    def describe(self) -> str:
        who = f"client {self.client}" if self.client is not None else "all clients"
        line = f"{self.index:3d}. {who}: {self.action}"
        if self.wait_s:
            line += f" (waited {self.wait_s:.3f} s)"
        if self.request is not None:
            line += f" {self.request.describe()} via {self.via}"
        if self.expected or self.got:
            line += f"\n       expected {self.expected}\n       got      {self.got}"
        return line


def program_lines(steps) -> list[str]:
    """Each step's text (StepRecord.describe), but a run of more than two alike requests sent back
    to back (cancel_pipelined's queue behind its first: hundreds on a fast model) as its first
    step's text and a count: the steps are all kept, the text says what they were."""
    lines, i = [], 0
    while i < len(steps):
        j = i + 1
        while j < len(steps) and _sent_alike(steps[i], steps[j]):
            j += 1
        if j - i > 2:
            lines.append(f"{steps[i].describe()}\n       ... and {j - i - 1} more alike, sent back to back "
                         f"(steps {steps[i + 1].index}-{steps[j - 1].index})")
        else:
            lines.extend(s.describe() for s in steps[i:j])
        i = j
    return lines


def _sent_alike(a: StepRecord, b: StepRecord) -> bool:
    return a.kind is b.kind and a.kind.traits.in_runs and (a.client, a.action, a.request, a.via) == (b.client, b.action, b.request, b.via)
