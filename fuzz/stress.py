"""Stress campaign: many clients running whole sequences at once, after Triton's
qa/L0_sequence_stress. `python -m fuzz.stress --help`; `run_stress(server, model, settings)`.

Each client runs `iterations` patterns, picked with L0_sequence_stress's weights: valid (START ..
END), valid-valid (two on one id), valid-no-end, no-end (left for the idle timeout to reap, so
its slot must be reused) and no-start (a request on an id with no live sequence). Lengths are
normal(16, 8), at least 1. Every response is checked, running sums included.

One harness. The stress campaign is a driver of fuzz/harness/engine.py, as the state machine and
corpus replay are: one Engine with `concurrency` stream clients, one BatcherModel, the same
send / park / collect / check and the same teardown (backlog drained, what is left ENDed, the
server's statistics against what the clients saw: stats_agree). Its clients are not threads: each
round hands every idle client's next request to the engine (see _Driver), so many requests are in
flight at once while the reference model sees them in one order it can trust. Every client owns
a disjoint block of ids (contexts, as in L0), so each id's requests keep their order.

The first violation stops the run: after it the model's view can no longer be trusted. It is
reported with the run's last 40 steps.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import attrs
import numpy as np

from .harness.client import Request
from .generator.depth import DepthSummary
from .harness.engine import Engine, FuzzSettings, Setup
from .checker import verdicts
from .checker.invariants import InvariantViolation
from .checker.model import Refusal, key_of
from .progress import Progress, Snapshot
from .spec import ContractError, ModelSpec

PATTERNS = ("valid", "valid-valid", "valid-no-end", "no-end", "no-start")
# Four slots and a short idle timeout: the no-end patterns leave sequences for the reaper, and a
# long timeout would hold every slot for its length.
DEFAULT_MODEL = "py_slot_direct_s2_i2_fp32_cser"
ID_BLOCK = 1000  # ids of client t are ID_BLOCK * (t + 1) + context


@attrs.frozen
class StressSettings:
    concurrency: int = 8
    iterations: int = 200
    seed: int = 0
    len_mean: float = 16.0
    len_sd: float = 8.0
    common_contexts: int = 2  # L0: 2 common + 8 rare contexts (ids) per client
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
    thread: int  # the client (a thread before the stress campaign ran on the engine)
    seconds: float  # since the run began
    sequences: int  # sequences begun before it, over all clients
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
    depth: DepthSummary = DepthSummary()  # sequence lengths and expiry -> reuse cycles

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.wall_s if self.wall_s else 0.0

    @property
    def ok(self) -> bool:
        return not self.violations and not self.errors

    def summary(self) -> str:
        seqs = ", ".join(f"{p} {n}" for p, n in self.sequences)
        lines = [f"stress {self.model} on Triton {self.triton_version}: {self.settings.concurrency} clients x "
                 f"{self.settings.iterations} iterations, seed {self.settings.seed}",
                 f"  {self.spec}",
                 f"  sequences: {sum(n for _, n in self.sequences)} ({seqs})",
                 f"  requests: {self.requests} in {self.wall_s:.1f} s ({self.requests_per_s:.0f} requests/s); "
                 f"{self.backlogged} STARTs waited in the backlog; {self.ambiguous_waits} idle-window waits",
                 "  expected refusals: " + (", ".join(f"{k} {n}" for k, n in self.refusals) or "none"),
                 f"  {self.depth.line()}"]
        kinds = Counter(v.invariant for v in self.violations)
        lines.append("  violations: " + (", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none"))
        for v in self.violations:
            lines.append(f"  [{v.invariant}] client {v.thread}, after {v.seconds:.2f} s, {v.sequences} sequences, "
                         f"{v.requests} requests:\n    " + v.detail.replace("\n", "\n    "))
        for e in self.errors:
            lines.append(f"  ERROR in the stress code: {e}")
        lines.append("  verdict: " + ("pass" if self.ok else "FAIL"))
        return "\n".join(lines)


_PARTS = {"valid": (True,), "valid-valid": (True, True), "valid-no-end": (True, False), "no-end": (False,)}


class _Driver:
    """The patterns of `concurrency` clients, driven through one Engine from one thread: every
    round hands each idle client's next request to the engine, so many requests are in flight.
    Requests that neither take nor free a slot go together, unanswered (send_nowait), and are
    checked together (check_sent); of those that do (a START of a new sequence, an END), one a
    round goes, answered before the next (dispatch): their order decides who gets a slot, and
    only the server's order of them is known. A START that must wait in the backlog is pending on
    its client, a request inside an idle window parked on it; the other clients go on."""

    def __init__(self, server, spec: ModelSpec, settings: StressSettings):
        self.spec, self.settings = spec, settings
        fuzz = FuzzSettings(prompt_s=settings.prompt_s, margin_s=settings.margin_s, late_s=settings.late_s,
                            wire_s=settings.wire_s, check_stats=settings.check_stats)
        self.engine = Engine(Setup.of(server, spec, fuzz, n_clients=settings.concurrency), salt=0)
        self.sequences: Counter = Counter()
        self.refusals: Counter = Counter()
        self.violations: list[Violation] = []
        self.errors: list[str] = []
        self.started = time.monotonic()
        self.hi_sum = spec.value_range[1]
        # an eighth of the range at most: INT8 and FP16 sums reach it in a few requests too
        self.max_value = max(1, min(2**16 if spec.is_float else 2**20, self.hi_sum // 8))
        self.as_value = float if spec.is_float else int
        self.plans = {c: self._plan(c) for c in range(settings.concurrency)}
        self.next: dict = {}  # client -> (action, request) it sends next
        for c in self.plans:
            self._advance(c)

    # -- what each client sends: L0_sequence_stress's patterns ------------------------------------
    def _plan(self, client: int):
        s = self.settings
        rng = np.random.RandomState(s.seed * 7919 + client)
        ids = [ID_BLOCK * (client + 1) + c + 1 for c in range(s.common_contexts + s.rare_contexts)]
        last = ["" for _ in ids]
        for _ in range(s.iterations):
            ctx, pattern = self._choose(rng, last)
            last[ctx] = pattern
            self.sequences[pattern] += 1
            if pattern == "no-start":
                # Refused with the START-flag error, unless the id is still live (the model knows).
                # (0: if its id is live the model adds it, and the sum may stand at the dtype's edge)
                rng.randint(0, self.max_value)  # drawn still: the plans after it stay as they were
                yield pattern, self.spec.request(ids[ctx], self.as_value(0))
                continue
            for end in _PARTS[pattern]:
                n, total = self._length(rng), 0
                for i in range(n):
                    value = self.as_value(min(int(rng.randint(0, self.max_value)), self.hi_sum - total))
                    total += value
                    yield f"{pattern} {i + 1}/{n}", self.spec.request(ids[ctx], value, start=i == 0,
                                                                       end=end and i == n - 1)

    def _length(self, rng) -> int:
        return max(1, int(rng.normal(self.settings.len_mean, self.settings.len_sd)))

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

    def _advance(self, client: int) -> None:
        step = next(self.plans[client], None)
        if step is None:
            self.next.pop(client, None)
        else:
            self.next[client] = step

    # -- the run ----------------------------------------------------------------------------------
    def _takes_or_frees_a_slot(self, req: Request) -> bool:
        return req.end or (req.start and not self.engine.model.is_live(key_of(req.seq_id)))

    def _round(self) -> bool:
        """One request from every idle client that has one; False when there is nothing left."""
        engine = self.engine
        engine.collect()
        ready = [c for c in engine.idle_clients() if c in self.next]
        if not ready:
            if not (self.next or engine.pending or engine.parked):
                return False
            time.sleep(0.001)  # every client waits: on the backlog, or parked on an idle window
            return True
        sent, slot_event = [], None
        for c in ready:
            action, req = self.next[c]
            if self._takes_or_frees_a_slot(req):
                if slot_event is not None:
                    continue  # next round
                slot_event = (c, action, req)
            else:
                item = engine.send_nowait(c, req, action)
                if item is not None:
                    sent.append(item)
            self._advance(c)
        if slot_event is not None:
            c, action, req = slot_event
            exp = engine.send(c, req, "stream", action)
            self._count(exp)
        engine.check_sent(sent)
        for item in sent:
            self._count(item[2])
        return True

    def _count(self, exp) -> None:
        if isinstance(exp, Refusal):
            self.refusals[exp.invariant] += 1

    def run(self) -> None:
        engine = self.engine
        snapshot = lambda: Snapshot(sum(self.sequences.values()), engine.stats.requests,  # noqa: E731
                                    engine.stats.requests, len(self.violations))
        with Progress("stress", snapshot, unit="sequences"):
            try:
                while self._round():
                    pass
                engine.finish()  # drains: backlog answers, ENDs what is left, the server's statistics
            except InvariantViolation as v:
                self._violate(v)
            except Exception as err:  # a bug in this code, not a finding
                self.errors.append(f"{type(err).__name__}: {err}")
            finally:
                engine.failed = engine.failed or bool(self.violations or self.errors)
                engine.finish()  # clean-up only, once
        if not self.violations:
            try:
                engine.server.check_alive()
            except Exception as err:
                self._violate(verdicts.server_gone(str(err)))

    def _violate(self, v: InvariantViolation) -> None:
        """Keeps the violation with the last 40 steps of the run (the whole log is the run)."""
        steps = getattr(v, "program", None) or self.engine.log
        last = steps[-1] if steps else None
        detail = v.detail + (f": {last.describe()}" if last is not None and last.request is not None else "")
        detail += "\nlast steps:\n" + "\n".join(r.describe() for r in steps[-40:])
        self.violations.append(Violation(v.invariant, detail, last.client if last is not None else -1,
                                         round(time.monotonic() - self.started, 3),
                                         sum(self.sequences.values()), self.engine.stats.requests))


def run_stress(server, model: str, settings: StressSettings = StressSettings()) -> StressResult:
    spec = ModelSpec.fetch(server, model)
    if spec.iterations:
        raise ContractError(f"model {model!r} is an iterative sequence: each of its sequences is one START, and the "
                            f"stress patterns run sequences of many requests (fuzz it with pytest fuzz/ instead)")
    run = _Driver(server, spec, settings)
    run.run()
    stats = run.engine.stats
    return StressResult(
        model=model, spec=spec.describe(), triton_version=getattr(server, "version", None) or "?",
        settings=settings, sequences=tuple((p, run.sequences[p]) for p in PATTERNS), requests=stats.requests,
        wall_s=round(time.monotonic() - run.started, 3), refusals=tuple(sorted(run.refusals.items())),
        ambiguous_waits=stats.ambiguous_waits, backlogged=stats.backlogged,
        violations=tuple(run.violations), errors=tuple(run.errors),
        depth=DepthSummary.of(run.engine.model.depth.lengths, run.engine.model.depth.reuse_cycles,
                              time.monotonic() - run.started))


# -- command line ---------------------------------------------------------------------------------

def _server(args):
    from .harness.server import EmbeddedTriton, ExternalTriton

    if args.triton_url:
        return ExternalTriton(args.triton_url)
    models_dir = args.models_dir
    if models_dir is None:
        from modelgen import native_variants, python_variants, split_variants, write_model

        known = python_variants() + native_variants() + split_variants()
        variant = next((v for v in known if v.name == args.model), None)
        if variant is None:
            raise SystemExit(f"--model {args.model} is not a modelgen variant; give --models-dir or "
                             f"--triton-url (variants: {', '.join(v.name for v in known)})")
        models_dir = Path(tempfile.mkdtemp(prefix="seqfuzz-stress-models-"))
        write_model(variant, models_dir)
    return EmbeddedTriton(models_dir).start()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fuzz.stress", description=__doc__.split("\n\n")[0])
    p.add_argument("--concurrency", "-t", type=int, default=8, help="clients (default 8)")
    p.add_argument("--iterations", "-i", type=int, default=200, help="sequence patterns per client (default 200)")
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
    except ContractError as err:
        print(f"python -m fuzz.stress: {err}", file=sys.stderr)
        return 2
    finally:
        server.stop()
    print(result.summary())
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
