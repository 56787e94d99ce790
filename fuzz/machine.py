"""The generator: a Hypothesis RuleBasedStateMachine of clients using one model's sequences.

Data flows one way: a rule draws a Request, the reference model (model.py) says what must happen,
the client (client.py) sends it, the checker (invariants.py) compares, and the step is logged.
Each client owns a gRPC stream; some steps go over unary gRPC or HTTP instead. A client whose
START waits in the backlog is blocked (its box fills when the server lets it in), so a full
server never blocks the machine.
"""
from __future__ import annotations

import random
import string
import time

import attrs
import hypothesis.strategies as st
from hypothesis import assume
from hypothesis import event as _hypothesis_event
from hypothesis.errors import InvalidArgument
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from . import nemesis
from .client import GrpcClient, HttpClient, Request, StreamClient
from .divergences import known_for
from .invariants import InvariantViolation, check_prompt, check_served, describe_expectation
from .model import MAX_STRING_ID, Ambiguous, Answer, BatcherModel, Queued, idle_margins, key_of
from .spec import ModelSpec


@attrs.frozen
class FuzzSettings:
    prompt_s: float = 5.0  # a request that must be answered at once gets this long
    margin_s: float | None = None  # how early a sequence may be reaped; default max(0.1 s, 30 % of the timeout)
    late_s: float | None = None  # how late; default max(0.3 s, 60 % of the timeout): the reaper runs at nice 10
    max_clients: int = 6
    wire_s: float = 0.05  # time for a queued START to reach the server before the next step
    shrink_budget_s: float = 30.0  # after the first failure, how long shrinking may replay live programs
    check_stats: bool = True
    # Faults the machine may draw (fuzz/nemesis.py NEMESES); none by default.
    nemesis: frozenset = attrs.field(default=frozenset(), converter=frozenset)
    proxied_clients: int = 2  # how many clients reach the server through the fault proxy (cut, stall)
    # A request whose answer depends on an idle-timeout window is parked on its client until the
    # window has passed, while the other clients go on (fuzzing). False: the whole machine waits
    # (corpus replay, which re-sends a recorded program in its recorded order).
    park: bool = True


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


@attrs.define
class Pending:
    request: Request
    expectation: Queued
    box: object
    sent_at: float
    step: int


@attrs.frozen
class Parked:
    """A request a client holds back until `until` (monotonic): its answer would depend on which
    side of an idle-timeout window the server is, or it is a START that must not overtake a START
    still on its way to the backlog. Only this client waits; the model is asked again at send time."""
    request: Request
    via: str
    action: str
    context: str
    until: float
    since: float


@attrs.define
class RunStats:
    """Counters shared by every example of one model's test."""
    examples: int = 0
    steps: int = 0
    requests: int = 0
    ambiguous_waits: int = 0
    started: float = attrs.Factory(time.monotonic)
    first_failure_s: float | None = None
    shortest: dict = attrs.Factory(dict)  # invariant -> the violation with the shortest program seen
    shrink_stopped: bool = False  # the shrink budget ran out
    faults: dict = attrs.Factory(dict)  # nemesis rule -> how many times it struck
    lengths: list = attrs.Factory(list)  # requests per sequence, over every example (fuzz/depth.py)
    reuse_cycles: int = 0  # expiry -> slot-reuse cycles, over every example


ID_ALPHABET = string.ascii_letters + string.digits + "-_.:/"
SPECIAL_IDS = (1, 2, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1)
# Requests in one `run`: mostly around L0_sequence_stress's normal(16, 8), with a tail past 100.
# Hypothesis shrinks it toward 1.
RUN_LENGTHS = st.one_of(st.integers(1, 32), st.integers(33, 250))
RUN_CHUNK = 32  # requests of a run in flight at once


def event(value: str) -> None:
    """hypothesis.event, and nothing outside a Hypothesis run (a corpus replay drives the machine)."""
    try:
        _hypothesis_event(value)
    except InvalidArgument:
        pass


def id_strategy(spec: ModelSpec, version: str | None):
    """Ids small and large, around every integer boundary, colliding modulo powers of two, and
    strings; uint64 and string ids are distinct sequences, so both come up."""
    colliding = st.builds(lambda base, k, p: (base + k * 2**p) % 2**64 or 1,
                          st.integers(1, 8), st.integers(1, 3), st.sampled_from([8, 16, 32, 63]))
    ints = st.one_of(st.integers(1, 12), st.sampled_from(SPECIAL_IDS), colliding, st.integers(1, 2**64 - 1))
    if not string_ids_allowed(spec, version):
        return ints
    strings = st.text(ID_ALPHABET, min_size=1, max_size=MAX_STRING_ID)
    return st.one_of(ints, ints, strings)


def string_ids_allowed(spec: ModelSpec, version: str | None) -> bool:
    return not any(d.no_string_ids for d in known_for(spec, version))


def only_if(enabled: bool):
    """Defines a rule only when `enabled` (a fault the campaign asked for). A rule whose
    precondition is always false would still take part in Hypothesis's rule choice: the
    shrinker's simplest choice (rule 0) is then refused and redrawn, so steps take draws of
    varying length and deleting one misaligns the rest of the program, which stops shrinking."""
    return (lambda f: f) if enabled else (lambda f: None)


def make_machine(server, spec: ModelSpec, settings: FuzzSettings = FuzzSettings(), stats: RunStats | None = None):
    """A RuleBasedStateMachine class bound to one model on one server."""
    stats = stats if stats is not None else RunStats()
    margin, late = idle_margins(spec.idle_s, settings.margin_s, settings.late_s)
    n_clients = max(3, min(settings.max_clients, spec.capacity + 2))
    version = getattr(server, "version", None)
    ids = id_strategy(spec, version)
    strings_ok = string_ids_allowed(spec, version)
    lingering_guard = any(d.key == "cancelled-backlog-id-lingers" for d in known_for(spec, version))
    vias = ["stream", "stream", "grpc"] + (["http"] if server.http_url else [])
    lo_sum, hi_sum = spec.value_range
    as_value = float if spec.dtype == "FP32" else int
    faults = settings.nemesis
    why_not = nemesis.unsupported(faults, server)
    if why_not:
        raise ValueError(why_not)
    proxied = range(min(settings.proxied_clients, n_clients - 1)) if faults & {"cut", "stall"} else range(0)
    # The DELAY_SCHEDULER hook holds the direct strategy's batcher threads (the oldest strategy
    # batches through its own dynamic batcher); every client must be free to send a full batch.
    full_batch_ok = "full_batch" in faults and spec.strategy == "direct" and n_clients >= spec.capacity

    class SequenceBatcherMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            if stats.first_failure_s is not None and \
                    time.monotonic() - stats.started - stats.first_failure_s > settings.shrink_budget_s:
                # A failure that depends on the server's history can keep Hypothesis shrinking for
                # minutes of live replays. Past the budget every attempt is rejected at once; the
                # campaign then reports the shortest program it saw, flagged as not shrunk reliably.
                event("shrink budget spent")
                stats.shrink_stopped = True
                assume(False)
            stats.examples += 1
            self.salt = stats.examples  # fresh ids differ per example: no state leaks between them
            self.model = BatcherModel(spec, margin_s=margin, prompt_s=settings.prompt_s, late_s=late)
            self.proxy = None
            self._connect()
            self.pending: dict[int, Pending] = {}
            self.parked: dict[int, Parked] = {}
            self.silenced: set = set()  # sequences left to expire: no client sends on them
            self.backlog_settled_at = 0.0  # a new START waits until the last queued START is there
            self.used_ids: list = []
            self.touched: set = set()  # every id sent, to clean up after a failure
            self.log: list[StepRecord] = []
            self.last_step_at = time.monotonic()
            self.successes = 0
            self.stats_before = None  # taken at the first request: the last example's stragglers are not ours
            self.failed = False

        # -- plumbing ---------------------------------------------------------------------------
        def _connect(self):
            """Clients for the server as it is now (a restart may move its ports); the first
            `proxied` clients go through a fresh fault proxy."""
            if proxied:
                self.proxy = nemesis.open_proxy(server.grpc_url)
            self.streams = [StreamClient(self.proxy.url if c in proxied else server.grpc_url)
                            for c in range(n_clients)]
            self.grpc = GrpcClient(server.grpc_url)
            self.http = HttpClient(server.http_url) if server.http_url else None

        def _disconnect(self):
            for s in self.streams:
                try:
                    s.close_channel()
                except Exception:
                    pass
            self.grpc.close()
            if self.http:
                self.http.close()
            if self.proxy is not None:
                self.proxy.stop()
                self.proxy = None

        def _struck(self, fault: str):
            stats.faults[fault] = stats.faults.get(fault, 0) + 1
            event(f"nemesis: {fault}")

        def _inference_count(self) -> int | None:
            return server.inference_count(spec.name) if settings.check_stats else None

        def _record(self, **kw) -> StepRecord:
            rec = StepRecord(index=len(self.log) + 1, **kw)
            self.log.append(rec)
            self.last_step_at = time.monotonic()
            stats.steps += 1
            return rec

        def _fail(self, violation: InvariantViolation, rec: StepRecord | None = None):
            self.failed = True
            if stats.first_failure_s is None:
                stats.first_failure_s = time.monotonic() - stats.started
            program = "\n".join(r.describe() for r in self.log)
            where = f" at step {rec.index}" if rec else ""
            violation.program = list(self.log)
            violation.got = rec.got if rec else ""
            best = stats.shortest.get(violation.invariant)
            if best is None or len(violation.program) < len(best.program):
                stats.shortest[violation.invariant] = violation
            violation.args = (f"[{violation.invariant}] {violation.detail}{where}\n"
                              f"model {spec.describe()}\nTriton {getattr(server, 'version', '?')} at "
                              f"{server.grpc_url}\nprogram:\n{program}",)
            raise violation

        def _idle_clients(self) -> list[int]:
            return [c for c in range(n_clients) if c not in self.pending and c not in self.parked]

        def _value(self, data):
            """Drawn from a fixed range (see the rules' note); _fit keeps the running sum in range."""
            return as_value(data.draw(st.one_of(st.integers(-100, 100), st.integers(lo_sum, hi_sum)), label="value"))

        def _fit(self, value, total):
            """The value clamped so that total + value stays where the model's dtype is exact."""
            return as_value(min(max(value, lo_sum - total), hi_sum - total))

        def _remember(self, seq_id):
            if seq_id not in self.used_ids:
                self.used_ids.append(seq_id)
            self.touched.add(seq_id)

        def _hold_until(self, req: Request, now: float):
            """Until when `req` must wait before it may be sent (None: send it now)."""
            if req.start and not self.model.is_live(key_of(req.seq_id)) and now < self.backlog_settled_at:
                # A START queued in the backlog a moment ago may still be on its way; a new START
                # sent now on another connection could overtake it and take its backlog place.
                return self.backlog_settled_at
            return None

        def _send(self, client: int, req: Request, via: str, action: str, context: str = "", park: bool = True):
            """Sends one request the generator chose; checks a prompt answer, parks a queued one,
            or parks the request itself on its client while its answer depends on a window
            (park=False: waits, as a replay does, for a step that must go now)."""
            self._collect()
            return self._dispatch(client, req, via, action, context, since=time.monotonic(), park=park)

        def _dispatch(self, client: int, req: Request, via: str, action: str, context: str, since: float,
                      park: bool = True):
            while True:
                now = time.monotonic()
                hold = self._hold_until(req, now)
                exp = None
                if hold is None:
                    exp = self.model.expect(req, now)
                    if isinstance(exp, Ambiguous):
                        stats.ambiguous_waits += 1
                        event(f"waited out an idle-timeout window ({exp.reason.split(' ', 1)[0]})")
                        hold = exp.until + 0.005
                if hold is None:
                    break
                if park and settings.park:
                    self.parked[client] = Parked(req, via, action, context, hold, since)
                    return exp or Ambiguous(hold, "held behind a START on its way to the backlog")
                nemesis.go_silent(max(0.0, hold - time.monotonic()))
                self._collect()
            # Recorded as the silence before this send (since the later of when it was drawn and
            # the last step), so a replay, which runs the steps in order, sleeps just that gap.
            waited = now - max(since, self.last_step_at)
            if self.stats_before is None:
                self.stats_before = self._inference_count()
            self._remember(req.seq_id)
            event(f"{action} -> {type(exp).__name__}")
            stats.requests += 1
            if isinstance(exp, Queued):
                box = self.streams[client].send(req)
                self.pending[client] = Pending(req, exp, box, now, len(self.log) + 1)
                # send() hands the request to gRPC's sender thread; two STARTs "sent" a moment
                # apart on different streams can reach the server in either order (seen live),
                # and the backlog's order is the server's. A new START waits until this one is
                # there (_hold_until); nothing else has to.
                self.backlog_settled_at = now + settings.wire_s
                self._record(client=client, action=action, request=req, via="stream", wait_s=waited,
                             expected=describe_expectation(exp), got="(waiting)")
                return exp
            if via == "stream":
                got = self.streams[client].infer(req, timeout_s=settings.prompt_s)
            elif via == "http":
                got = self.http.infer(req, timeout_s=settings.prompt_s)
            else:
                got = self.grpc.infer(req, timeout_s=settings.prompt_s)
            self._check(client, req, exp, got, via, action, wait_s=waited, context=context)
            return exp

        def _release_parked(self) -> None:
            """Sends every parked request whose time has come, the earliest first."""
            while self.parked:
                client, p = min(self.parked.items(), key=lambda cp: cp[1].until)
                if p.until > time.monotonic():
                    return
                del self.parked[client]
                self._dispatch(client, p.request, p.via, p.action, p.context, since=p.since)

        def _check(self, client, req, exp, got, via, action, *, wait_s=0.0, context=""):
            """Checks a prompt answer against the model's expectation and logs the step."""
            check = check_prompt(req, exp, got, via, context=context)
            rec = self._record(client=client, action=action, request=req, via=via, wait_s=wait_s,
                               expected=check.expected, got=check.got)
            if got.ok:
                self.successes += 1
            if check.violation:
                self._fail(check.violation, rec)

        def _collect(self):
            """Checks what has come back, then sends the parked requests whose time has come."""
            self._collect_answers()
            self._release_parked()

        def _collect_answers(self):
            """Checks answered backlogged STARTs, in the order they arrived. A START the model has
            let in is waited for here (until it is due), so that a program notices its answer at
            the same step on every replay, and one that never comes is a hang."""
            while True:
                answered = []
                for client, p in list(self.pending.items()):
                    due = self.model.due(key_of(p.request.seq_id))
                    got = nemesis.outcome_of(p.box, max(0.0, due - time.monotonic()) if due is not None else 0)
                    if got is not None:
                        answered.append((p.sent_at + got.latency_s, client, p, got))
                        del self.pending[client]
                    elif due is not None:
                        del self.pending[client]
                        rec = self._record(client=client, action="still waiting", request=p.request, via="stream",
                                           expected=describe_expectation(p.expectation), got="no answer")
                        self._fail(InvariantViolation(
                            "no_hangs", f"the START queued at step {p.step} was let in when a slot freed but "
                                        f"not answered within {settings.prompt_s} s"), rec)
                if not answered:
                    return
                for at, client, p, got in sorted(answered, key=lambda a: a[0]):
                    problem = self.model.served(key_of(p.request.seq_id), at) if got.ok else None
                    check = check_served(p.request, p.expectation, got, problem)
                    if got.ok:
                        self.successes += 1
                    rec = self._record(client=client, action=f"answer to step {p.step}", request=p.request,
                                       via="stream", expected=check.expected, got=check.got)
                    event("backlogged START answered")
                    if check.violation:
                        self._fail(check.violation, rec)

        # -- rules: what clients do -------------------------------------------------------------
        # Which sequences are live, and which clients wait on the backlog, depends on timing. So
        # every rule draws the same shape of data whatever the state (indexes and values from
        # fixed ranges) and maps it onto the state at run time, doing nothing when nothing fits.
        # Hypothesis then replays and shrinks a program without its draws drifting.

        def _client(self, data) -> int | None:
            idle = self._idle_clients()
            pick = data.draw(st.integers(0, n_clients - 1), label="client")
            return idle[pick % len(idle)] if idle else None

        def _pick(self, data, items, label):
            i = data.draw(st.integers(0, 15), label=label)
            return items[i % len(items)] if items else None

        def _fresh(self, seq_id):
            """The id made unique to this example, keeping its low bits (collisions modulo powers
            of two survive) and leaving the large boundary ids alone."""
            if isinstance(seq_id, str):
                return f"{self.salt}.{seq_id}"[:MAX_STRING_ID]
            return seq_id + self.salt * 2**40 if seq_id < 2**40 else seq_id

        def _id(self, data, among=None):
            """A fresh id, or one from `among` (default: every id used so far)."""
            fresh = self._fresh(data.draw(ids, label="id"))
            reuse = data.draw(st.booleans(), label="reuse id")
            pool = self.used_ids if among is None else among
            reused = self._pick(data, pool, "which id")
            return reused if reuse and reused is not None else fresh

        def _via(self, data) -> str:
            return data.draw(st.sampled_from(vias), label="via")

        def _parked_keys(self) -> set:
            return {key_of(p.request.seq_id) for p in self.parked.values()}

        def _blocked(self, seq_id) -> bool:
            key = key_of(seq_id)
            if self.model.is_backlogged(key) or key in self.model.awaiting or key in self._parked_keys():
                return True
            if key in self.silenced and self.model.is_live(key):
                return True
            return lingering_guard and self.model.lingering(key)

        def _skip(self, why: str):
            event(f"skipped: {why}")

        def _live(self):
            """Running sequences a client may send on: not waiting for an answer, not left to
            expire, no request parked on them."""
            self.silenced &= set(self.model.seqs)
            held = self._parked_keys()
            return [k for k in self.model.live_keys() if k not in self.silenced and k not in held]

        @rule(data=st.data())
        def start(self, data):
            """A client starts a sequence (sometimes start-and-end in one request)."""
            client, seq_id = self._client(data), self._id(data)
            end = data.draw(st.sampled_from([False] * 9 + [True]), label="start-and-end")
            value, via = self._value(data), self._via(data)
            if client is None or self._blocked(seq_id):
                return self._skip("start: no idle client or id busy")
            req = Request(spec.name, seq_id, value, start=True, end=end, dtype=spec.dtype)
            self._send(client, req, via, "start")

        @rule(data=st.data())
        def continue_(self, data):
            """A client sends the next request of a live sequence."""
            self._next_of_live(data, end=False, start=False, action="continue")

        @rule(data=st.data())
        def end(self, data):
            """A client ends a live sequence."""
            self._next_of_live(data, end=True, start=False, action="end")

        @rule(data=st.data())
        def restart(self, data):
            """A client sends START on an id that is still live: state restarts, slot kept."""
            self._next_of_live(data, end=False, start=True, action="restart")

        @rule(data=st.data())
        def run(self, data):
            """A client runs one sequence for k requests back to back on its stream: a fresh START
            and k - 1 more, or k more of a live sequence; the last one sometimes ENDs it. Deep
            sequences are where state corruption that builds up over many requests shows."""
            client = self._client(data)
            fresh = data.draw(st.booleans(), label="fresh sequence")
            key = self._pick(data, self._live(), "sequence")
            seq_id = self._fresh(data.draw(ids, label="id"))
            k = data.draw(RUN_LENGTHS, label="requests")
            seed = data.draw(st.integers(0, 2**32 - 1), label="values seed")
            scale = data.draw(st.sampled_from([100, 2**20]), label="value scale")
            end = data.draw(st.sampled_from([False, False, True]), label="end at the last")
            if client is None:
                return self._skip("run: no idle client")
            if fresh or key is None:
                if self._blocked(seq_id):
                    return self._skip("run: id busy")
                total, start = 0, True
            else:
                seq_id, total, start = key[1], self.model.total(key), False
            values = random.Random(seed)

            def nth(i, total):
                value = self._fit(values.randint(-scale, scale), 0 if start and i == 0 else total)
                return Request(spec.name, seq_id, value, start=start and i == 0, end=end and i == k - 1,
                               dtype=spec.dtype)

            began = time.monotonic()
            exp = self._send(client, nth(0, total), "stream", f"run 1/{k}")
            if not isinstance(exp, Answer):
                return  # queued in the backlog, parked, or refused: the run stops here
            # The rest is pipelined on the client's stream, a chunk at a time: the stream keeps
            # their order, and requests already queued run even if the sequence idles out
            # meanwhile (TRITON_NOTES), so every answer is the model's. A chunk is kept to a
            # fraction of the idle timeout at the latency the first request saw (a slow model
            # gets one request at a time).
            latency = max(time.monotonic() - began, 1e-4)
            chunk = max(1, min(RUN_CHUNK, int(0.2 * spec.idle_s / latency)))
            i, total = 1, exp.value
            while i < k:
                self._collect()
                now, sent = time.monotonic(), []
                for j in range(i, min(k, i + chunk)):
                    req = nth(j, total)
                    exp = self.model.expect(req, now)
                    if not isinstance(exp, Answer):
                        # A slow chunk brought the sequence to its idle window (an Ambiguous
                        # leaves the model as it was): this request goes the ordinary way.
                        self._check_all(client, sent, k)
                        self._dispatch(client, req, "stream", f"run {j + 1}/{k}", "", since=now)
                        return
                    self._remember(req.seq_id)
                    stats.requests += 1
                    total = exp.value
                    sent.append((req, exp, self.streams[client].send(req), j))
                self._check_all(client, sent, k, latency)
                i += len(sent)
            event(f"run of {k} requests")

        def _check_all(self, client, sent, k, latency=0.0):
            wait_s = settings.prompt_s + len(sent) * latency
            for req, exp, box, j in sent:
                self._check(client, req, exp, StreamClient.wait(box, wait_s), "stream", f"run {j + 1}/{k}")

        def _next_of_live(self, data, *, end, start, action):
            client = self._client(data)
            key = self._pick(data, self._live(), "sequence")
            value, via = self._value(data), self._via(data)
            if client is None or key is None:
                return self._skip(f"{action}: no idle client or no live sequence")
            total = 0 if start else self.model.total(key)
            req = Request(spec.name, key[1], self._fit(value, total), start=start, end=end, dtype=spec.dtype)
            self._send(client, req, via, action)

        @rule(data=st.data())
        def send_without_start(self, data):
            """A client continues an id with no live sequence: never seen, ended, expired, cancelled."""
            client = self._client(data)
            dead = [i for i in self.used_ids if not self.model.is_live(key_of(i))]
            seq_id = self._id(data, among=dead)
            end = data.draw(st.booleans(), label="end")
            value, via = self._value(data), self._via(data)
            if client is None or self.model.is_live(key_of(seq_id)) or self._blocked(seq_id):
                return self._skip("send without START: no idle client or id live")
            req = Request(spec.name, seq_id, value, end=end, dtype=spec.dtype)
            self._send(client, req, via, "send without START")

        @rule(data=st.data())
        def misuse(self, data):
            """A malformed request: id 0 or "", wrong dtype, batch > 1, over-long string id. It
            must be refused without disturbing the live sequence it names."""
            client = self._client(data)
            live_ids = [k[1] for k in self._live()]
            target = self._id(data, among=live_ids)
            kind = data.draw(st.sampled_from(["zero id", "empty id", "wrong dtype", "batch 2", "long id"]),
                             label="misuse")
            start = data.draw(st.booleans(), label="start")
            length = data.draw(st.integers(MAX_STRING_ID + 1, 300), label="long id length")
            value, via = self._value(data), self._via(data)
            fields = dict(seq_id=target, start=start, dtype=spec.dtype)
            if kind == "zero id":
                fields["seq_id"] = 0
            elif kind == "empty id":
                fields["seq_id"] = ""
            elif kind == "wrong dtype":
                fields["dtype"] = "FP32" if spec.dtype == "INT32" else "INT32"
            elif kind == "batch 2":
                fields["batch"] = 2
            else:
                fields["seq_id"] = "L" * length
            if client is None or self._blocked(fields["seq_id"]):
                return self._skip("misuse: no idle client or id busy")
            req = Request(spec.name, value=value, **fields)
            self._send(client, req, via, f"misuse ({kind})")

        @rule(data=st.data())
        def same_id_other_type(self, data):
            """START with an id's twin of the other type (5 and "5"): a different sequence."""
            client = self._client(data)
            seq_id = self._id(data)
            value, via = self._value(data), self._via(data)
            if isinstance(seq_id, int):
                if not strings_ok:
                    return self._skip("other-typed twin: no string ids on this model")
                twin = str(seq_id)
            elif seq_id.isdigit() and 0 < int(seq_id) < 2**64:
                twin = int(seq_id)
            else:
                return self._skip("other-typed twin: id has none")
            if client is None or self._blocked(twin):
                return self._skip("other-typed twin: no idle client or id busy")
            req = Request(spec.name, twin, value, start=True, dtype=spec.dtype)
            self._send(client, req, via, "start the other-typed twin")

        @rule(data=st.data())
        def abandon_stream(self, data):
            """A client closes its stream and goes away; its sequences stay live until they time out."""
            client = self._client(data)
            if client is None:
                return self._skip("abandon: no idle client")
            nemesis.drop_stream(self.streams[client], settings.prompt_s)
            self._record(client=client, action="close its stream")

        @rule(data=st.data())
        def cancel(self, data):
            """A client whose START waits in the backlog cancels it (stop_stream(cancel_requests=True))."""
            now = time.monotonic()
            choices = sorted(c for c, p in self.pending.items()
                             if self.model.surely_backlogged_until(key_of(p.request.seq_id)) > now + 0.2
                             and now > p.sent_at + settings.wire_s)  # it has reached the backlog
            client = self._pick(data, choices, "client")
            if client is None:
                return self._skip("cancel: nothing surely in the backlog")
            self._cancel(client)

        def _cancel(self, client: int):
            p = self.pending.pop(client)
            nemesis.cancel_in_flight(self.streams[client], settings.prompt_s)
            got = nemesis.outcome_of(p.box, settings.prompt_s)
            self.model.cancelled(key_of(p.request.seq_id))
            rec = self._record(client=client, action=f"cancel its queued START (step {p.step})", request=p.request,
                               via="stream", expected="CANCELLED, sequence ended",
                               got=got.describe() if got else "nothing")
            if got is not None and got.ok:
                self._fail(InvariantViolation("cancel_ends_sequence",
                                              "the cancelled START was answered as if it ran"), rec)

        def _go_silent_past_idle(self):
            """Every client goes silent until every running sequence has certainly timed out (a
            wait for the whole machine: the nemesis's full batch, and replays of old programs)."""
            now = time.monotonic()
            ends = [s.expiry.hi for s in self.model.running if s.key not in self.model.awaiting]
            seconds = max([e - now for e in ends] + [0]) + 0.01
            waited = nemesis.go_silent(seconds)
            self._record(client=None, action="go silent past the idle timeout", wait_s=waited)
            self._collect()

        def _park(self, client: int, req: Request, action: str, until: float, context: str = ""):
            self.parked[client] = Parked(req, "stream", action, context, until, time.monotonic())

        def _leave_to_expire(self, keys) -> None:
            """No client sends on these sequences any more: they are left to the idle timeout."""
            if keys:
                self.silenced.update(keys)
                self._record(client=None, action=f"leave {len(keys)} sequence(s) to expire: "
                                                 + ", ".join(repr(k[1]) for k in keys))

        @rule(data=st.data())
        def let_expire(self, data):
            """Clients stop sending on a running sequence (or on every one) and leave it to the idle
            timeout; one client comes back to it once its window has passed and must get the
            START-flag error. Only that client waits: the others go on."""
            everyone = data.draw(st.booleans(), label="every sequence")
            key = self._pick(data, self._live(), "sequence")
            client = self._client(data)
            end = data.draw(st.booleans(), label="end")
            value = self._value(data)
            if key is None:
                return self._skip("let expire: no live sequence")
            self._leave_to_expire(self._live() if everyone else [key])
            if client is not None:
                req = Request(spec.name, key[1], value, end=end, dtype=spec.dtype)
                self._park(client, req, "send after its idle timeout", self.model.seqs[key].expiry.hi + 0.005)

        @rule(data=st.data(), fraction=st.sampled_from([0.05, 0.2]))
        def pause(self, data, fraction):
            """A client pauses on its sequence for a while, well inside the idle timeout, then goes
            on: the sum must go on too. Only that client waits."""
            client = self._client(data)
            key = self._pick(data, self._live(), "sequence")
            end = data.draw(st.booleans(), label="end")
            value = self._value(data)
            if client is None or key is None:
                return self._skip("pause: no idle client or no live sequence")
            until = time.monotonic() + fraction * spec.idle_s
            if until >= self.model.seqs[key].expiry.lo:
                return self._skip("pause: the sequence is near its idle timeout")
            # The value is fitted to the sum when the request is drawn; nothing else touches
            # this sequence while it is parked, so the sum is the same when it goes.
            req = Request(spec.name, key[1], self._fit(value, self.model.total(key)), end=end, dtype=spec.dtype)
            self._park(client, req, "continue after a pause", until)

        @rule(data=st.data())
        def refill_after_timeout(self, data):
            """After every running sequence times out, as many new sequences as there are slots
            must get in promptly: a leaked slot shows up here. Those clients wait; the others go on."""
            fresh = [self._fresh(data.draw(ids, label="id")) for _ in range(spec.capacity)]
            values = [self._value(data) for _ in range(spec.capacity)]
            self._collect()
            idle = self._idle_clients()
            if len(idle) < spec.capacity:
                return self._skip("refill: fewer idle clients than slots")
            keys = self._live()
            self._leave_to_expire(keys)
            until = max([self.model.seqs[k].expiry.hi for k in keys] + [time.monotonic()]) + 0.005
            for client, seq_id, value in zip(idle, fresh, values):
                if self.model.is_live(key_of(seq_id)) or self._blocked(seq_id):
                    continue  # refill wants fresh sequences
                req = Request(spec.name, seq_id, value, start=True, dtype=spec.dtype)
                self._park(client, req, "start after timeout", until, context="refill")

        @rule(data=st.data())
        def burst(self, data):
            """Several clients send the next request of distinct live sequences at the same moment:
            they queue together and share batches (a slow model makes sure they do)."""
            size = data.draw(st.integers(2, n_clients), label="burst size")
            ends = data.draw(st.lists(st.booleans(), min_size=n_clients, max_size=n_clients), label="ends")
            values = [self._value(data) for _ in range(n_clients)]
            self._collect()
            now = time.monotonic()
            # Sequences well inside their idle timeout only: nothing in a burst may be ambiguous.
            keys = [k for k in self._live() if self.model.seqs[k].expiry.lo > now + settings.wire_s]
            sends = list(zip(self._idle_clients(), keys, ends, values))[:size]
            if len(sends) < 2:
                return self._skip("burst: fewer than two idle clients with live sequences")
            reqs = [(client, Request(spec.name, key[1], self._fit(value, self.model.total(key)), end=end,
                                     dtype=spec.dtype)) for client, key, end, value in sends]
            self._send_together(reqs, "burst")

        def _send_together(self, reqs, action: str):
            """Sends every (client, request) at once on the clients' streams; each must be answered
            promptly (the model must expect an Answer or a Refusal for each)."""
            self._check_together(self._send_all(reqs), action)

        def _send_all(self, reqs) -> list:
            if self.stats_before is None:
                self.stats_before = self._inference_count()
            now = time.monotonic()
            sent = []
            for client, req in reqs:
                self._remember(req.seq_id)
                exp = self.model.expect(req, now)
                stats.requests += 1
                sent.append((client, req, exp, self.streams[client].send(req)))
            return sent

        def _check_together(self, sent, action: str):
            for client, req, exp, box in sent:
                self._check(client, req, exp, StreamClient.wait(box, settings.prompt_s), "stream", action)

        # -- nemesis rules: faults, drawn only when FuzzSettings.nemesis names them ------------
        def _proxied_idle(self) -> list[int]:
            return [c for c in proxied if c not in self.pending and c not in self.parked]

        @only_if("cut" in faults and bool(proxied))
        @rule()
        def cut_connection(self):
            """The network drops the proxied clients' connections (RST both ways) mid-sequence.
            Their sequences are the server's, not the connection's: they stay live until they idle
            out, and any client may go on with them before that."""
            if len(self._proxied_idle()) < len(proxied):
                return self._skip("cut: a proxied client waits on the backlog")
            count = nemesis.cut_connections(self.proxy)
            for c in proxied:  # a cut channel is not reused: the client reconnects
                self.streams[c].close_channel()
                self.streams[c] = StreamClient(self.proxy.url)
            self._struck("cut")
            self._record(client=None, action=f"the network cuts the proxied clients' {count} connection(s)")

        @only_if("stall" in faults and bool(proxied))
        @rule(data=st.data())
        def stall_connection(self, data):
            """The network holds a proxied client's bytes while it sends the next request of a live
            sequence: the request reaches the server late, either well before the sequence's idle
            timeout (the sum goes on) or after it (the START-flag error)."""
            client = self._pick(data, self._proxied_idle(), "client")
            key = self._pick(data, self._live(), "sequence")
            end = data.draw(st.booleans(), label="end")
            hold = data.draw(st.sampled_from([0.2, 0.5, 1.5, 2.5]), label="hold (x idle timeout)")
            value = self._value(data)
            self._collect()
            if client is None or key is None or key not in self._live() or len(self._proxied_idle()) < len(proxied):
                return self._skip("stall: no idle proxied client or no live sequence")
            now = time.monotonic()
            arrival = now + hold * spec.idle_s
            window = self.model.seqs[key].expiry
            if window.lo - settings.wire_s <= arrival <= window.hi + settings.wire_s:
                arrival = window.hi + settings.wire_s  # never inside the idle-timeout window
            req = Request(spec.name, key[1], self._fit(value, self.model.total(key)), end=end, dtype=spec.dtype)
            if self.stats_before is None:
                self.stats_before = self._inference_count()
            self._remember(req.seq_id)
            exp = self.model.expect(req, arrival)  # what the server must do when it arrives
            stats.requests += 1
            box = nemesis.held_send(self.proxy, self.streams[client], req, arrival)
            self._struck("stall")
            self._check(client, req, exp, StreamClient.wait(box, settings.prompt_s), "stream",
                        "send while the network stalls, held", wait_s=arrival - now)

        def _server_fault(self, fault: str, action: str, do) -> bool:
            """Runs a restart or reload with every client disconnected (an open stream keeps an
            unloaded model's old copy alive); afterwards the model holds no sequence and the
            statistics start again from the next request."""
            self._collect()
            if self.pending or self.parked:
                self._skip(f"{fault}: a client waits on the backlog or holds a request back")
                return False
            self._disconnect()
            try:
                do()
            except Exception as err:  # noqa: BLE001 - a server that does not come back is a finding
                self._fail(InvariantViolation("server_alive", f"{action}: it did not come back: {err}"),
                           self._record(client=None, action=action, got=f"{type(err).__name__}: {err}"))
            finally:
                self._connect()
            self.model.forget_all()
            self.silenced.clear()
            self.stats_before, self.successes = None, 0
            self._struck(fault)
            self._record(client=None, action=action)
            return True

        @only_if("restart" in faults)
        @rule(graceful=st.booleans())
        def restart_server(self, graceful):
            """The server restarts mid-campaign (SIGTERM, or SIGKILL: a crash): every live sequence
            is gone, so a request without START is refused and every slot is free."""
            self._server_fault("restart", f"the server restarts ({'SIGTERM' if graceful else 'SIGKILL'})",
                               lambda: nemesis.restart_server(server, graceful=graceful))

        @only_if("reload" in faults)
        @rule()
        def reload_model(self):
            """The model is reloaded through the repository API: its sequences are gone."""
            self._server_fault("reload", f"the model is reloaded", lambda: nemesis.reload_model(server, spec.name))

        @only_if(full_batch_ok)
        @rule(data=st.data())
        def full_batch(self, data):
            """The server restarts with TRITONSERVER_DELAY_SCHEDULER = the model's capacity, which
            holds its batchers until that many requests wait (and, with
            TRITONSERVER_BACKLOG_DELAY_SCHEDULER = b, until b more STARTs wait in the backlog): as
            many fresh STARTs, sent one after another, must then run as one full batch per
            instance, each with its own sum, and the backlog is let in as the batch's sequences
            idle out. Then it restarts without the hooks (a reload would arm them again)."""
            wanted = data.draw(st.integers(0, 2), label="backlog")
            fresh = [self._fresh(data.draw(ids, label="id")) for _ in range(spec.capacity + 2)]
            values = [self._value(data) for _ in range(spec.capacity + 2)]
            self._collect()
            if self.pending or self.parked:
                return self._skip("full batch: a client waits on the backlog or holds a request back")
            backlog = min(wanted, n_clients - spec.capacity)
            fresh = fresh[:spec.capacity + backlog]
            if len({key_of(i) for i in fresh}) < len(fresh):
                return self._skip("full batch: drawn ids collide")
            hook = {nemesis.DELAY_SCHEDULER: str(spec.capacity)}
            if backlog:
                hook[nemesis.BACKLOG_DELAY_SCHEDULER] = str(backlog)
            said = " ".join(f"{k}={v}" for k, v in hook.items())
            if not self._server_fault("full_batch", f"the server restarts with {said}",
                                      lambda: nemesis.restart_server(server, graceful=False, env=hook)):
                return
            before = server.execution_count(spec.name)
            reqs = [(c, Request(spec.name, i, v, start=True, dtype=spec.dtype))
                    for c, i, v in zip(self._idle_clients(), fresh, values)]
            held = self._send_all(reqs[:spec.capacity])
            # The backlog STARTs go on other connections: sent at once, one could overtake a held
            # START (seen in CI: it took a slot and pushed that START into a second batch).
            time.sleep(settings.wire_s)
            for client, req in reqs[spec.capacity:]:  # queued behind the held batch
                self._send(client, req, "stream", "start (into the held backlog)", park=False)
            self._check_together(held, "start (held for a full batch)")
            after = server.execution_count(spec.name)
            if before is not None and after is not None and after - before != spec.instances:
                self._fail(InvariantViolation(
                    "batches_fill", f"{spec.capacity} STARTs held by {nemesis.DELAY_SCHEDULER}={spec.capacity} ran "
                                    f"in {after - before} execution(s), not one full batch per instance "
                                    f"({spec.instances})"), self.log[-1])
            while self.pending:  # the backlog gets in as slots idle out; each pass lets one in
                self._go_silent_past_idle()
            self._server_fault("full_batch", "the server restarts without the hooks",
                               lambda: nemesis.restart_server(server, graceful=False))

        # -- invariants checked after every step ------------------------------------------------
        @invariant()
        def no_hangs(self):
            """Every backlogged START let in is answered by its due time; parked requests whose
            time has come are sent (and checked) between steps, whatever the next rule is."""
            self._collect()

        @invariant()
        def server_alive(self):
            try:
                server.check_alive()
            except Exception as err:
                self._fail(InvariantViolation("server_alive", str(err)), self.log[-1] if self.log else None)

        # -- teardown: drain and clean up -------------------------------------------------------
        def teardown(self):
            try:
                if not self.failed:
                    self._drain()
            finally:
                stats.lengths.extend(self.model.depth.lengths)
                stats.reuse_cycles += self.model.depth.reuse_cycles
                self._cleanup()

        def _drain(self):
            """Sends what is parked, ends every live sequence (which lets the backlog in) once no
            request is held on it, checks every answer, and checks the server's statistics
            against the successful requests."""
            window = spec.idle_s + margin + late
            deadline = time.monotonic() + settings.prompt_s + (len(self.pending) + len(self.parked) + 2) * window
            while time.monotonic() < deadline:
                self._collect()
                self.model.settle(time.monotonic())
                # Sequences left to expire are ended too, unless a parked request comes back to
                # them: the example is over, and waiting out their windows would idle the machine.
                held = self._parked_keys()
                for key in [k for k in self.model.live_keys() if k not in held]:
                    if self._idle_clients():
                        req = Request(spec.name, key[1], as_value(0), end=True, dtype=spec.dtype)
                        self._send(self._idle_clients()[0], req, "grpc", "end (teardown)")
                if not (self.model.seqs or self.pending or self.parked):
                    break
                next_parked = min((p.until for p in self.parked.values()), default=float("inf"))
                time.sleep(max(0.0, min(0.01, next_parked - time.monotonic())))
            self._collect()
            if self.pending or self.parked:
                what = next(iter(self.pending.values()), None)
                self._fail(InvariantViolation("no_hangs", f"{len(self.pending)} request(s) never answered"
                                              + (f", e.g. the START of step {what.step}" if what else "")
                                              + f"; {len(self.parked)} still held back at the end"))
            if self.stats_before is None:
                return
            # The server updates its statistics just after it answers: give it a moment.
            deadline = time.monotonic() + 2.0
            while True:
                after = self._inference_count()
                if after is None or after - self.stats_before == self.successes or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            if after is not None and after - self.stats_before != self.successes:
                self._fail(InvariantViolation(
                    "stats_agree", f"inference_count rose by {after - self.stats_before}, but "
                                   f"{self.successes} request(s) succeeded"))

        def _cleanup(self):
            """Leaves the server as it found it, whatever happened: cancel what waits, end every id
            this example touched, close everything."""
            if self.proxy is not None:
                self.proxy.resume()  # a failure inside a stall must not leave the proxy holding bytes
            for s in self.streams:
                try:
                    s.close(cancel_requests=bool(self.failed or self.pending), timeout_s=settings.prompt_s)
                except Exception:
                    pass
            if self.failed:
                for seq_id in self.touched:
                    if self.model.lingering(key_of(seq_id)):
                        continue  # it would wait behind its dead backlog place
                    if seq_id not in (0, "") and not (isinstance(seq_id, str) and len(seq_id) > MAX_STRING_ID):
                        self.grpc.infer(Request(spec.name, seq_id, 0, end=True, dtype=spec.dtype), timeout_s=2)
                if self.model.backlog or self.pending:
                    time.sleep(spec.idle_s + margin + late)  # let what was queued run or idle out
            self._disconnect()

    SequenceBatcherMachine.__name__ = f"Machine_{spec.name}"
    # Every model's machine has the same source, so Hypothesis would file all their examples under
    # one database key; this keeps each model's saved failures apart (a shared --fuzz-db).
    SequenceBatcherMachine._hypothesis_internal_add_digest = spec.name.encode()
    return SequenceBatcherMachine
