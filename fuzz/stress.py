"""Stress campaign: many client threads running whole sequences at once, after Triton's
qa/L0_sequence_stress. `python -m fuzz.stress --help`; `run_stress(server, model, settings)`.

Each thread runs `iterations` patterns, picked with L0_sequence_stress's weights: valid (START ..
END), valid-valid (two on one id), valid-no-end, no-end (left for the idle timeout to reap, so
its slot must be reused) and no-start (a request on an id with no live sequence). Lengths are
normal(16, 8), at least 1. Every response is checked, running sums included.

One oracle. The checks are the state machine's own: one BatcherModel (fuzz/model.py) for the
whole run, Request/StreamClient from fuzz/client.py and check_prompt/check_served from
fuzz/invariants.py. The model is single-threaded, so the design keeps its view a legal
serialization of what the server saw:

- one lock guards the model; a thread calls expect() and hands its request to its stream while
  holding it, so the model's order of events is the order requests left the client, and `now`
  is the send time the idle windows are measured from;
- every thread owns a disjoint block of ids (contexts, as in L0) and has at most one request in
  flight, so expect() never sees an id with a pending request, and per-id order is fixed;
- the only events whose cross-thread order the server can see differently are those that take a
  slot: a START of a new sequence. Such a START that must be answered at once is waited for under
  the lock; one that must wait in the backlog (Queued) is given `wire_s` under the lock to reach
  the server first, as the state machine does;
- backlogged STARTs are collected like the machine's _collect: whoever holds the lock checks
  every answered box in order of arrival through served()/check_served;
- an Ambiguous answer (an idle window is open) makes the thread sleep it out without the lock.

The first violation stops every thread: after it the model's view can no longer be trusted.

Open question: with one slot and 6 threads (a backlog that never empties), about one run in four
reports `capacity_respected`: two backlogged STARTs answered within a millisecond of one END,
where the model, in its send order, holds the second behind the first's idle deadline. Either a
START sat in the client's gRPC sender for more than `wire_s` (the backlog's order is then not the
send order: a false alarm) or Triton let two sequences through one slot. Not yet told apart; a
violation prints the model's last 40 events for that. Runs with 4 slots have not shown it since
backlog answers are timed from after send().
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter, deque
from pathlib import Path

import attrs
import numpy as np

from .client import Outcome, Request, StreamClient
from .invariants import InvariantViolation, check_prompt, check_served, describe_expectation
from .model import Ambiguous, Answer, BatcherModel, Queued, Refusal, idle_margins, key_of
from .progress import Progress, Snapshot
from .spec import ModelSpec

PATTERNS = ("valid", "valid-valid", "valid-no-end", "no-end", "no-start")
# Four slots and a short idle timeout: the no-end patterns leave sequences for the reaper, and a
# long timeout would hold every slot for its length.
DEFAULT_MODEL = "py_slot_direct_s2_i2_fp32_cser"
ID_BLOCK = 1000  # ids of thread t are ID_BLOCK * (t + 1) + context


@attrs.frozen
class StressSettings:
    concurrency: int = 8
    iterations: int = 200
    seed: int = 0
    len_mean: float = 16.0
    len_sd: float = 8.0
    common_contexts: int = 2  # L0: 2 common + 8 rare contexts (ids) per thread
    rare_contexts: int = 8
    prompt_s: float = 5.0
    wire_s: float = 0.05
    max_wait_s: float = 60.0  # bound on any one wait: an Ambiguous window or the backlog
    margin_s: float | None = None  # as FuzzSettings: default max(0.1 s, 30 %) early, max(0.3 s, 60 %) late
    late_s: float | None = None
    check_stats: bool = True


@attrs.frozen
class Violation:
    invariant: str
    detail: str
    thread: int
    seconds: float  # since the run began
    sequences: int  # sequences begun before it, over all threads
    requests: int


@attrs.frozen
class StressResult:
    model: str
    spec: str
    triton_version: str
    settings: StressSettings
    sequences: tuple  # (pattern, count) pairs
    requests: int
    wall_s: float
    refusals: tuple  # (invariant, count): expected refusals, e.g. start_is_required
    ambiguous_waits: int
    backlogged: int  # STARTs that waited in the backlog
    violations: tuple
    errors: tuple = ()  # crashes of the stress code itself (not findings)

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.wall_s if self.wall_s else 0.0

    @property
    def ok(self) -> bool:
        return not self.violations and not self.errors

    def summary(self) -> str:
        seqs = ", ".join(f"{p} {n}" for p, n in self.sequences)
        lines = [f"stress {self.model} on Triton {self.triton_version}: {self.settings.concurrency} threads x "
                 f"{self.settings.iterations} iterations, seed {self.settings.seed}",
                 f"  {self.spec}",
                 f"  sequences: {sum(n for _, n in self.sequences)} ({seqs})",
                 f"  requests: {self.requests} in {self.wall_s:.1f} s ({self.requests_per_s:.0f} requests/s); "
                 f"{self.backlogged} STARTs waited in the backlog; {self.ambiguous_waits} idle-window waits",
                 "  expected refusals: " + (", ".join(f"{k} {n}" for k, n in self.refusals) or "none")]
        kinds = Counter(v.invariant for v in self.violations)
        lines.append("  violations: " + (", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none"))
        for v in self.violations:
            lines.append(f"  [{v.invariant}] thread {v.thread}, after {v.seconds:.2f} s, {v.sequences} sequences, "
                         f"{v.requests} requests:\n    " + v.detail.replace("\n", "\n    "))
        for e in self.errors:
            lines.append(f"  ERROR in the stress code: {e}")
        lines.append("  verdict: " + ("pass" if self.ok else "FAIL"))
        return "\n".join(lines)


@attrs.define
class _Waiter:
    """A START waiting in the backlog; whoever holds the lock resolves it."""
    request: Request
    expectation: Queued
    box: object
    sent_at: float
    check: object = None  # the Check once answered
    overdue: bool = False


class _Run:
    def __init__(self, server, spec: ModelSpec, settings: StressSettings):
        self.server, self.spec, self.settings = server, spec, settings
        margin, late = idle_margins(spec.idle_s, settings.margin_s, settings.late_s)
        self.model = BatcherModel(spec, margin_s=margin, prompt_s=settings.prompt_s, late_s=late)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.waiters: dict = {}  # key -> _Waiter
        self.sequences: Counter = Counter()
        self.refusals: Counter = Counter()
        self.requests = self.successes = self.ambiguous_waits = self.backlogged = 0
        self.violations: list[Violation] = []
        self.errors: list[str] = []
        self.started = time.monotonic()
        self.trace: deque = deque(maxlen=40)  # the model's last events, for a violation's report
        lo, hi = spec.value_range
        self.hi_sum = hi
        self.max_value = 2**20 if spec.dtype == "INT32" else 2**16
        self.as_value = int if spec.dtype == "INT32" else float

    # -- checking ---------------------------------------------------------------------------------
    def _violate(self, thread: int, violation: InvariantViolation, req: Request, expected: str, got: str) -> None:
        detail = f"{violation.detail}: sent {req.describe()}\nexpected {expected}\ngot      {got}"
        with self.lock:
            detail += "\nlast events (t since start, thread):\n" + "\n".join(self.trace)
            self.violations.append(Violation(violation.invariant, detail, thread,
                                             round(time.monotonic() - self.started, 3),
                                             sum(self.sequences.values()), self.requests))
        self.stop.set()

    def _collect(self) -> None:
        """Under the lock: checks every answered backlogged START, in order of arrival."""
        answered = []
        for key, w in list(self.waiters.items()):
            try:
                got = w.box.get_nowait()
            except Exception:
                due = self.model.due(key)
                if due is not None and time.monotonic() > due:
                    w.overdue = True
                    del self.waiters[key]
                continue
            answered.append((w.sent_at + got.latency_s, key, w, got))
            del self.waiters[key]
        for at, key, w, got in sorted(answered, key=lambda a: a[0]):
            problem = self.model.served(key, at) if got.ok else None
            self._note(f"answer to the queued START of {key[1]!r} at {at - self.started:.3f}: {got.describe()}")
            w.check = check_served(w.request, w.expectation, got, problem)

    def _note(self, event: str) -> None:
        self.trace.append("  " + event)

    # -- one request ------------------------------------------------------------------------------
    def request(self, thread: int, stream: StreamClient, req: Request) -> Outcome | None:
        """Sends `req`, checks the answer; None when the run must stop."""
        deadline = time.monotonic() + self.settings.max_wait_s
        while True:
            with self.lock:
                self._collect()
                if self.stop.is_set():
                    return None
                key = key_of(req.seq_id)
                was_live = self.model.is_live(key)
                now = time.monotonic()
                exp = self.model.expect(req, now)
                self._note(f"{now - self.started:.3f} thread {thread}: {req.describe()} -> "
                           f"{describe_expectation(exp)}")
                if not isinstance(exp, Ambiguous):
                    self.requests += 1
                    box = stream.send(req)
                    if isinstance(exp, Queued):
                        self.backlogged += 1
                        # The answer's latency runs from inside send(): measured from after it,
                        # the arrival time is never earlier than the truth, even if this thread
                        # was descheduled between `now` and send() (seen on a loaded box).
                        waiter = _Waiter(req, exp, box, time.monotonic())
                        self.waiters[key] = waiter
                        time.sleep(self.settings.wire_s)  # let it reach the backlog before anyone else
                    elif req.start and not was_live and isinstance(exp, Answer):
                        # It takes a slot: nobody else may take one until the server has answered.
                        return self._check_prompt(thread, req, exp, box, locked=True)
                    break
                self.ambiguous_waits += 1
            if time.monotonic() > deadline:
                self.errors.append(f"thread {thread}: {req.describe()} stayed ambiguous for "
                                   f"{self.settings.max_wait_s} s ({exp.reason})")
                self.stop.set()
                return None
            time.sleep(min(max(0.0, exp.until - time.monotonic()) + 0.005, 1.0))
        if isinstance(exp, Queued):
            return self._await_backlog(thread, key, waiter)
        return self._check_prompt(thread, req, exp, box, locked=False)

    def _check_prompt(self, thread: int, req: Request, exp, box, *, locked: bool) -> Outcome | None:
        try:
            got = box.get(timeout=self.settings.prompt_s)
        except Exception:
            got = Outcome(status="CLIENT_TIMEOUT", message=f"no response within {self.settings.prompt_s} s")
        check = check_prompt(req, exp, got, "stream")
        if not locked:
            self.lock.acquire()
        try:
            if got.ok:
                self.successes += 1
                self.model.answered(key_of(req.seq_id), time.monotonic())
            elif isinstance(exp, Refusal) and check.violation is None:
                self.refusals[exp.invariant] += 1
        finally:
            if not locked:
                self.lock.release()
        if check.violation is not None:
            if locked:  # _violate takes the lock itself
                self.lock.release()
                try:
                    self._violate(thread, check.violation, req, check.expected, check.got)
                finally:
                    self.lock.acquire()
            else:
                self._violate(thread, check.violation, req, check.expected, check.got)
            return None
        return got

    def _await_backlog(self, thread: int, key, waiter: _Waiter) -> Outcome | None:
        deadline = time.monotonic() + self.settings.max_wait_s
        while waiter.check is None and not waiter.overdue:
            if self.stop.is_set():
                return None
            if time.monotonic() > deadline:
                waiter.overdue = True
                break
            time.sleep(0.005)
            with self.lock:
                self._collect()
        if waiter.overdue:
            self._violate(thread, InvariantViolation("no_hangs", "a START queued in the backlog was not answered "
                                                                 "in time"),
                          waiter.request, describe_expectation(waiter.expectation), "no answer")
            return None
        check = waiter.check
        if check.violation is not None:
            self._violate(thread, check.violation, waiter.request, check.expected, check.got)
            return None
        with self.lock:
            self.successes += 1
        return Outcome(value=waiter.expectation.value)

    # -- patterns ---------------------------------------------------------------------------------
    def _lengths(self, rng) -> int:
        return max(1, int(rng.normal(self.settings.len_mean, self.settings.len_sd)))

    def _sequence(self, thread, stream, rng, seq_id, *, end: bool, start: bool = True) -> bool:
        total = 0
        n = self._lengths(rng)
        for i in range(n):
            value = self.as_value(min(int(rng.randint(0, self.max_value)), self.hi_sum - total))
            req = Request(self.spec.name, seq_id, value, start=start and i == 0, end=end and i == n - 1,
                          dtype=self.spec.dtype)
            if self.request(thread, stream, req) is None:
                return False
            total += value
        return True

    def _pattern(self, thread, stream, rng, pattern, seq_id) -> bool:
        with self.lock:
            self.sequences[pattern] += 1
        if pattern == "valid":
            return self._sequence(thread, stream, rng, seq_id, end=True)
        if pattern == "valid-valid":
            return (self._sequence(thread, stream, rng, seq_id, end=True)
                    and self._sequence(thread, stream, rng, seq_id, end=True))
        if pattern == "valid-no-end":
            return (self._sequence(thread, stream, rng, seq_id, end=True)
                    and self._sequence(thread, stream, rng, seq_id, end=False))
        if pattern == "no-end":
            return self._sequence(thread, stream, rng, seq_id, end=False)
        value = self.as_value(rng.randint(0, self.max_value))
        # no-start: refused with the START-flag error, unless the id is still live (the model knows).
        return self.request(thread, stream, Request(self.spec.name, seq_id, value, dtype=self.spec.dtype)) is not None

    def worker(self, thread: int) -> None:
        s = self.settings
        rng = np.random.RandomState(s.seed * 7919 + thread)
        ids = [ID_BLOCK * (thread + 1) + c + 1 for c in range(s.common_contexts + s.rare_contexts)]
        last = ["" for _ in ids]
        stream = StreamClient(self.server.grpc_url)
        try:
            for _ in range(s.iterations):
                if self.stop.is_set():
                    return
                ctx, pattern = self._choose(rng, last)
                last[ctx] = pattern
                if not self._pattern(thread, stream, rng, pattern, ids[ctx]):
                    return
        except Exception as err:  # a bug in this code, not a finding: report it and stop everyone
            self.errors.append(f"thread {thread}: {type(err).__name__}: {err}")
            self.stop.set()
        finally:
            stream.close(cancel_requests=self.stop.is_set(), timeout_s=s.prompt_s)

    def _choose(self, rng, last) -> tuple[int, str]:
        """L0_sequence_stress's weights: 10 % go to a rare context (no-end / valid-no-end /
        valid-valid), the rest to a common one (no-start 1 %, no-end 4 %, valid-no-end 5 %,
        valid-valid 5 %, valid 85 %)."""
        s = self.settings
        if s.rare_contexts and rng.rand() < 0.1:
            ctx = s.common_contexts + rng.randint(0, s.rare_contexts)
            choice = rng.rand()
            return ctx, "no-end" if choice < 0.33 else "valid-no-end" if choice < 0.66 else "valid-valid"
        ctx = rng.randint(0, s.common_contexts)
        choice = rng.rand()
        if last[ctx] != "no-end" and choice < 0.01:
            return ctx, "no-start"
        if choice < 0.05:
            return ctx, "no-end"
        if choice < 0.10:
            return ctx, "valid-no-end"
        if choice < 0.15:
            return ctx, "valid-valid"
        return ctx, "valid"

    # -- the whole run ----------------------------------------------------------------------------
    def _inference_count(self) -> int | None:
        return self.server.inference_count(self.spec.name) if self.settings.check_stats else None

    def run(self) -> None:
        before = self._inference_count()
        threads = [threading.Thread(target=self.worker, args=(t,), daemon=True, name=f"stress-{t}")
                   for t in range(self.settings.concurrency)]
        snapshot = lambda: Snapshot(sum(self.sequences.values()), self.requests, self.requests,  # noqa: E731
                                    len(self.violations))
        with Progress("stress", snapshot, unit="sequences"):
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        try:
            self.server.check_alive()
        except Exception as err:
            self.violations.append(Violation("server_alive", str(err), -1, time.monotonic() - self.started,
                                             sum(self.sequences.values()), self.requests))
        after = self._inference_count()
        if self.violations or self.errors or before is None or after is None:
            return
        if after - before != self.successes:
            self.violations.append(Violation(
                "stats_agree", f"inference_count rose by {after - before}, but {self.successes} request(s) "
                               "succeeded", -1, time.monotonic() - self.started, sum(self.sequences.values()),
                self.requests))


def run_stress(server, model: str, settings: StressSettings = StressSettings()) -> StressResult:
    spec = ModelSpec.fetch(server, model)
    run = _Run(server, spec, settings)
    run.run()
    return StressResult(
        model=model, spec=spec.describe(), triton_version=getattr(server, "version", None) or "?",
        settings=settings, sequences=tuple((p, run.sequences[p]) for p in PATTERNS), requests=run.requests,
        wall_s=round(time.monotonic() - run.started, 3), refusals=tuple(sorted(run.refusals.items())),
        ambiguous_waits=run.ambiguous_waits, backlogged=run.backlogged, violations=tuple(run.violations),
        errors=tuple(run.errors))


# -- command line ---------------------------------------------------------------------------------

def _server(args):
    from .server import EmbeddedTriton, ExternalTriton

    if args.triton_url:
        return ExternalTriton(args.triton_url)
    models_dir = args.models_dir
    if models_dir is None:
        from modelgen import python_variants, write_model

        variant = next((v for v in python_variants() if v.name == args.model), None)
        if variant is None:
            raise SystemExit(f"--model {args.model} is not a modelgen Python variant; give --models-dir or "
                             f"--triton-url (variants: {', '.join(v.name for v in python_variants())})")
        models_dir = Path(tempfile.mkdtemp(prefix="seqfuzz-stress-models-"))
        write_model(variant, models_dir)
    return EmbeddedTriton(models_dir).start()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fuzz.stress", description=__doc__.split("\n\n")[0])
    p.add_argument("--concurrency", "-t", type=int, default=8, help="client threads (default 8)")
    p.add_argument("--iterations", "-i", type=int, default=200, help="sequence patterns per thread (default 200)")
    p.add_argument("--seed", "-r", type=int, default=0)
    p.add_argument("--model", default=DEFAULT_MODEL, help=f"model to stress (default {DEFAULT_MODEL})")
    p.add_argument("--triton-url", metavar="HOST:PORT", help="gRPC address of an external Triton")
    p.add_argument("--models-dir", metavar="DIR", help="model repository for the embedded Triton "
                                                       "(default: a fresh modelgen one with --model)")
    args = p.parse_args(argv)
    if args.concurrency < 1 or args.iterations < 1:
        p.error("--concurrency and --iterations must be at least 1")
    server = _server(args)
    try:
        result = run_stress(server, args.model, StressSettings(args.concurrency, args.iterations, args.seed))
    finally:
        server.stop()
    print(result.summary())
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
