"""Throughput: the fuzzer's requests/s against a raw tritonclient loop (the ceiling), the stress
campaign's, and Hypothesis's own cost per step. All on one server in one run; the fuzzer and its
raw loop on MODEL, the stress campaign and its raw loop on the stress campaign's own model.

    python -m benchmarks.throughput [--seconds 30]

The fuzzer sleeps on purpose (pauses, idle-timeout waits, waits out expiry windows, 50 ms after
a queued START): that time is measured by timing fuzz.harness.engine.go_silent and the wire sleep, and
"active" rates leave it out. Hypothesis's overhead is a machine with the same rule shapes and
draws as the fuzzer's, whose rules do nothing, run under the same settings.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from contextlib import contextmanager

import attrs
import hypothesis.strategies as st
import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from fuzz import profiles  # noqa: F401  (registers dev)
from fuzz.campaign import fuzz_model
from fuzz.harness.engine import FuzzSettings
from fuzz.generator.machine import id_strategy
from fuzz.harness.server import EmbeddedTriton
from fuzz.harness.client import NP_DTYPE
from fuzz.spec import ModelSpec
from fuzz.stress import DEFAULT_MODEL as STRESS_MODEL
from fuzz.stress import StressSettings, run_stress

MODEL = "py_slot_direct_s4_i1_int32_cserc_u64"  # many slots, a long idle timeout: a model for sums
# The `dev` profile (what `pytest fuzz/` runs at a terminal), without an example database.
FUZZ_SETTINGS = settings(settings.get_profile("dev"), database=None, derandomize=False)
# The same program mix as the benchmark's earlier runs: on this 2 s model a campaign also waits out
# a few idle windows (at most a tenth of its time, machine.WAIT_SHARE); the rate measured here is
# that of the requests, so those waits are left out, as they were before they were taken.
OPTIONS = FuzzSettings(longest_wait_s=FuzzSettings().max_wait_s)


@attrs.frozen
class Throughput:
    model: str
    raw_requests_per_s: float
    fuzz_requests_per_s: float
    fuzz_active_requests_per_s: float  # with the fuzzer's deliberate sleeps left out
    fuzz_sleep_fraction: float
    fuzz_steps: int
    fuzz_s_per_step: float
    hypothesis_s_per_step: float  # the no-op machine: generation, shrinking bookkeeping, rule dispatch
    stress_requests_per_s: float
    stress_concurrency: int
    stress_model: str = ""  # the stress campaign's own model (a short idle timeout, for its no-end patterns)
    stress_raw_requests_per_s: float = 0.0  # the raw loop on that model
    depth: str = ""  # the fuzzer's sequence lengths and reuse cycles (DepthSummary.line)

    @property
    def ratio(self) -> float:
        return self.fuzz_requests_per_s / self.raw_requests_per_s

    @property
    def active_ratio(self) -> float:
        return self.fuzz_active_requests_per_s / self.raw_requests_per_s

    @property
    def stress_ratio(self) -> float:
        return self.stress_requests_per_s / (self.stress_raw_requests_per_s or self.raw_requests_per_s)

    @property
    def hypothesis_share(self) -> float:
        return self.hypothesis_s_per_step / self.fuzz_s_per_step

    def lines(self) -> list[str]:
        return [
            f"model {self.model}",
            f"raw tritonclient loop (sequential START/continue/END, unary gRPC): {self.raw_requests_per_s:8.0f} requests/s",
            f"state-machine fuzzer (fuzz_model, several seeds):               {self.fuzz_requests_per_s:8.0f} requests/s"
            f"  ratio {self.ratio:.3f}",
            f"  ... without its deliberate sleeps ({self.fuzz_sleep_fraction:.0%} of its time):        "
            f"{self.fuzz_active_requests_per_s:8.0f} requests/s  ratio {self.active_ratio:.3f}",
            f"stress campaign ({self.stress_concurrency} threads) on {self.stress_model}: "
            f"{self.stress_requests_per_s:.0f} requests/s against a raw loop's {self.stress_raw_requests_per_s:.0f} "
            f"there, ratio {self.stress_ratio:.3f}",
            f"per step: fuzzer {self.fuzz_s_per_step * 1000:.2f} ms, Hypothesis alone (no-op rules) "
            f"{self.hypothesis_s_per_step * 1000:.3f} ms = {self.hypothesis_share:.1%} of a fuzzer step",
            f"fuzzer {self.depth}",
        ]


def raw_loop(server, model: str, seconds: float, length: int = 16) -> float:
    """Sequences of `length` requests through tritonclient.grpc, one after another: no checks,
    no model, no Hypothesis. Returns requests/s."""
    import tritonclient.grpc as grpcclient

    spec = ModelSpec.fetch(server, model)
    dtype = NP_DTYPE[spec.dtype]
    client = grpcclient.InferenceServerClient(server.grpc_url)
    inp = grpcclient.InferInput("INPUT", [1, 1], spec.dtype)
    inp.set_data_from_numpy(np.ones((1, 1), dtype=dtype))
    started, requests, seq = time.monotonic(), 0, 0
    while time.monotonic() - started < seconds:
        seq += 1
        for i in range(length):
            client.infer(model, [inp], sequence_id=seq, sequence_start=i == 0, sequence_end=i == length - 1)
            requests += 1
    wall = time.monotonic() - started
    client.close()
    return requests / wall


@contextmanager
def timed_sleeps():
    """Totals the seconds the fuzzer sleeps on purpose (engine.go_silent, and time.sleep in the
    machine and engine modules: the wire wait, waits for parked requests). Timing only: nothing
    the fuzzer does changes."""
    import fuzz.harness.engine as engine_module
    import fuzz.generator.machine as machine_module

    total = [0.0]
    real_silent, real_time = engine_module.go_silent, machine_module.time

    def go_silent(seconds):
        waited = real_silent(seconds)
        total[0] += waited
        return waited

    class _Time:
        def __getattr__(self, name):
            return getattr(real_time, name)

        @staticmethod
        def sleep(seconds):
            t = real_time.monotonic()
            real_time.sleep(seconds)
            total[0] += real_time.monotonic() - t

    engine_module.go_silent, machine_module.time, engine_module.time = go_silent, _Time(), _Time()
    try:
        yield total
    finally:
        engine_module.go_silent, machine_module.time, engine_module.time = real_silent, real_time, real_time


def hypothesis_per_step(spec: ModelSpec, examples: int = 200, steps: int = 40) -> float:
    """Seconds per step of a machine with the fuzzer's rule shapes and draws and no-op bodies."""
    ids = id_strategy(spec, None)
    value = st.one_of(st.integers(-100, 100), st.integers(-(2**31), 2**31 - 1))
    count = [0]

    class NoOp(RuleBasedStateMachine):
        def _draw(self, data, n_ints):
            data.draw(st.integers(0, 5))
            data.draw(ids)
            data.draw(st.booleans())
            for _ in range(n_ints):
                data.draw(st.integers(0, 15))
            data.draw(value)
            data.draw(st.sampled_from(["stream", "grpc", "http"]))
            count[0] += 1

        @rule(data=st.data())
        def start(self, data):
            self._draw(data, 1)

        @rule(data=st.data())
        def continue_(self, data):
            self._draw(data, 1)

        @rule(data=st.data())
        def end(self, data):
            self._draw(data, 1)

        @rule(data=st.data())
        def misuse(self, data):
            self._draw(data, 2)

        @rule(fraction=st.sampled_from([0.05, 0.2]))
        def pause(self, fraction):
            count[0] += 1

    started = time.monotonic()
    run_state_machine_as_test(NoOp, settings=settings(max_examples=examples, stateful_step_count=steps,
                                                      deadline=None, database=None,
                                                      suppress_health_check=list(HealthCheck)))
    return (time.monotonic() - started) / max(1, count[0])


def measure(server, model: str = MODEL, seconds: float = 30.0, stress_concurrency: int = 8,
            seeds: int = 4) -> Throughput:
    """`seconds` for the raw loop, and as much for the fuzzer, split over campaigns of `seeds`
    fixed seeds: one campaign's rate depends on its program mix (one 20 s campaign made 1,840
    requests, another on the same code 9,529), so a single one compares badly across commits."""
    spec = ModelSpec.fetch(server, model)
    raw = raw_loop(server, model, seconds)
    results = []
    with timed_sleeps() as slept:
        for seed in range(seeds):
            result, error = fuzz_model(server, model, FUZZ_SETTINGS, budget_s=seconds / seeds, fuzz_settings=OPTIONS,
                                       seed=seed)
            if error is not None:
                raise RuntimeError(f"the fuzzer failed on a correct model, so its rate means nothing: {error}")
            results.append(result)
    requests, steps = sum(r.requests for r in results), sum(r.steps for r in results)
    wall = sum(r.wall_s for r in results)
    active_s = max(1e-9, wall - slept[0])
    stress_raw = raw_loop(server, STRESS_MODEL, seconds / 2)
    stress = run_stress(server, STRESS_MODEL, StressSettings(concurrency=stress_concurrency, iterations=40, seed=0))
    if not stress.ok:
        raise RuntimeError(f"the stress campaign failed on a correct model:\n{stress.summary()}")
    return Throughput(model=model, raw_requests_per_s=round(raw, 1),
                      fuzz_requests_per_s=round(requests / wall, 1),
                      fuzz_active_requests_per_s=round(requests / active_s, 1),
                      fuzz_sleep_fraction=round(slept[0] / wall, 3), fuzz_steps=steps,
                      fuzz_s_per_step=wall / max(1, steps),
                      hypothesis_s_per_step=hypothesis_per_step(spec),
                      stress_requests_per_s=round(stress.requests_per_s, 1), stress_concurrency=stress_concurrency,
                      stress_model=STRESS_MODEL, stress_raw_requests_per_s=round(stress_raw, 1),
                      depth=f"(seed 0) {results[0].depth.line()}")


def start_server(*models: str) -> EmbeddedTriton:
    """The embedded Triton serving `models` (default: the fuzzer's and the stress campaign's)."""
    from modelgen import python_variants, write_model

    repo = tempfile.mkdtemp(prefix="seqfuzz-bench-models-")
    for model in models or (MODEL, STRESS_MODEL):
        write_model(next(v for v in python_variants() if v.name == model), repo)
    return EmbeddedTriton(repo).start()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.throughput")
    p.add_argument("--seconds", type=float, default=30.0, help="for the raw loop and for the fuzzer, each")
    args = p.parse_args(argv)
    server = start_server()
    try:
        t = measure(server, seconds=args.seconds)
    finally:
        server.stop()
    print(f"Triton {server.version}")
    print("\n".join(t.lines()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
