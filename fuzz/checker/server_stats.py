"""The statistics extension held to what happened: the checker of `stats_agree`.

Pure: a `Snapshot` is the server's statistics of one model read at once, a `Tally` is what the
clients saw over the same stretch, and `judge` says which promise the rise between two
snapshots breaks. What the promises allow for was measured on the builds (see README):
- requests the sequence batcher refuses (no START, END on an unknown id) count nowhere;
- a request cancelled at once may count as a success or a failure, or not at all;
- each answer of an iterative START is an execution (inference_count), the START one request.
"""
from __future__ import annotations

import attrs

from ..values import UNSEEN, Outcome

NS = 1e-9


@attrs.frozen
class Duration:
    """One of the statistics extension's (count, ns) pairs."""
    count: int = 0
    ns: int = 0

    def __sub__(self, other: "Duration") -> "Duration":
        return Duration(self.count - other.count, self.ns - other.ns)

    def __add__(self, other: "Duration") -> "Duration":
        return Duration(self.count + other.count, self.ns + other.ns)


TIMES = ("success", "fail", "queue", "compute_input", "compute_infer", "compute_output")


@attrs.frozen
class Snapshot:
    """A model's statistics, summed over its versions. `batches`: (batch size, executions) pairs."""
    inference_count: int = 0
    execution_count: int = 0
    success: Duration = Duration()
    fail: Duration = Duration()
    queue: Duration = Duration()
    compute_input: Duration = Duration()
    compute_infer: Duration = Duration()
    compute_output: Duration = Duration()
    batches: tuple = ()

    @classmethod
    def of(cls, model_stats) -> "Snapshot":
        """From the statistics extension's `model_stats` (the gRPC messages) of one model."""
        total, batches = cls(), {}
        for m in model_stats:
            s = m.inference_stats
            total = cls(total.inference_count + m.inference_count, total.execution_count + m.execution_count,
                        *(getattr(total, f) + Duration(getattr(s, f).count, getattr(s, f).ns) for f in TIMES))
            for b in m.batch_stats:
                batches[b.batch_size] = batches.get(b.batch_size, 0) + b.compute_infer.count
        return attrs.evolve(total, batches=tuple(sorted(batches.items())))

    def rise_since(self, before: "Snapshot") -> "Snapshot":
        """Each field's rise from `before` (a field that fell has a negative rise)."""
        sizes = dict(before.batches)
        mine = dict(self.batches)
        return Snapshot(self.inference_count - before.inference_count,
                        self.execution_count - before.execution_count,
                        *(getattr(self, f) - getattr(before, f) for f in TIMES),
                        batches=tuple((size, mine.get(size, 0) - sizes.get(size, 0))
                                      for size in sorted(set(mine) | set(sizes))))

    def describe(self) -> str:
        times = ", ".join(f"{f} {getattr(self, f).count} ({getattr(self, f).ns * NS * 1e3:.3f} ms)" for f in TIMES)
        return (f"inference_count {self.inference_count}, execution_count {self.execution_count}, {times}, "
                f"batch_stats {dict(self.batches)}")


@attrs.define
class Tally:
    """What the clients saw since the baseline snapshot: answers, errors and cancels."""
    runs: int = 0  # executions the answers show: one per answer, an iterative START's partials too
    answered: int = 0  # requests answered OK
    errors: int = 0  # requests the server answered with an error
    cancelled: int = 0  # requests cancelled or cut off before an answer: the server may have run them
    # A split ensemble answers each request once per chunk, where its statistics count one inference
    # per request (ModelSpec.chunks): that many answers show one run.
    answers_per_run: int = 1

    def saw(self, got: Outcome) -> None:
        """One request's outcome."""
        self.runs += -(-got.runs // self.answers_per_run)
        if got.ok:
            self.answered += 1
        elif got.status in UNSEEN:
            self.cancelled += 1
        else:
            self.errors += 1

    def cancel(self, n: int = 1) -> None:
        self.cancelled += n

    def describe(self) -> str:
        return (f"{self.answered} request(s) answered ({self.runs} execution(s) shown), {self.errors} answered "
                f"with an error, {self.cancelled} cancelled unseen")


@attrs.frozen
class Lenience:
    """What a build's known divergences let the fail count do (their guards)."""
    fails_per_error: int = 1  # failures one failed or cancelled request may count
    fails_per_answer: int = 0  # failures, of any duration, one request answered in full may count too


def judge(rise: Snapshot, tally: Tally, elapsed_s: float, max_batch_size: int,
          lenience: Lenience = Lenience()) -> str | None:
    """The first promise the statistics' `rise` over `elapsed_s` seconds breaks, given what the
    clients saw (None: they hold)."""
    window_ns = elapsed_s / NS
    # A build that counts failures of any duration (fails_per_answer) wraps the fail time's sum
    # round 2**64 now and then: it may seem to fall
    timed = TIMES if not lenience.fails_per_answer else tuple(f for f in TIMES if f != "fail")
    for f in TIMES:
        d = getattr(rise, f)
        if d.count < 0 or (d.ns < 0 and f in timed):
            return f"{f} fell (count {d.count:+d}, {d.ns * NS * 1e3:+.3f} ms): cumulative statistics only grow"
    if not tally.runs <= rise.inference_count <= tally.runs + tally.cancelled:
        return (f"inference_count rose by {rise.inference_count}, but the answers show {tally.runs} "
                f"execution(s)" + (f" (+ up to {tally.cancelled} cancelled request(s) the server may have "
                                   f"run first)" if tally.cancelled else ""))
    # Every build counts a rescheduled request's executions as successes, each one
    if not tally.answered <= rise.success.count <= tally.runs + tally.cancelled:
        return (f"success count rose by {rise.success.count}, but {tally.answered} request(s) were answered "
                f"({tally.runs} execution(s) shown)" + (f", + up to {tally.cancelled} cancelled" if tally.cancelled else ""))
    failures = lenience.fails_per_error * (tally.errors + tally.cancelled)
    if rise.fail.count > failures + lenience.fails_per_answer * tally.answered:
        return (f"fail count rose by {rise.fail.count}, but only {tally.errors} request(s) were answered with an "
                f"error and {tally.cancelled} cancelled" + (f" (each may count {lenience.fails_per_error})"
                                                             if lenience.fails_per_error > 1 else ""))
    for f in [f for f in ("success", "fail") if f in timed]:
        d = getattr(rise, f)
        if d.ns > d.count * window_ns:
            return (f"{f} duration rose by {d.ns * NS:.6g} s over {d.count} request(s), though the "
                    f"statistics were read {elapsed_s:.3f} s apart")
    served_ns = rise.success.ns + (rise.fail.ns if "fail" in timed else max(0, rise.fail.ns))
    for f in ("queue", "compute_input", "compute_infer", "compute_output"):
        if getattr(rise, f).ns > served_ns:
            return (f"{f} duration rose by {getattr(rise, f).ns * NS * 1e3:.3f} ms, more than the "
                    f"{served_ns * NS * 1e3:.3f} ms of the requests it is part of")
    biggest = max(1, max_batch_size)
    if not -(-rise.inference_count // biggest) <= rise.execution_count <= rise.inference_count:
        return (f"execution_count rose by {rise.execution_count} for {rise.inference_count} inference(s) "
                f"of at most {biggest} a batch")
    return None
