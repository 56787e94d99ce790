"""Memory: the fuzzer's resident memory over a `long` campaign on one model, beside the server's.

    python -m benchmarks.memory [--seconds 600] [--warmup 60] [--out benchmarks/results]

A campaign of hours must stay flat: every example opens streams and channels, and a campaign
counts what it did (sequence lengths, coverage). Samples every --every seconds: the pytest-like
process's RSS (after glibc's malloc_trim, so freed arenas do not count), its thread count, and the
server process's RSS, the baseline measured in the same run (it serves every request the fuzzer
sends). Growth: the lowest sample of the last quarter past the warm-up against the lowest of the
first quarter (an example's log and a round's Hypothesis state make a sawtooth of ~15 MB).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import threading
import time
from pathlib import Path

import attrs
from hypothesis import settings

from fuzz import profiles  # noqa: F401  (registers long)
from fuzz.campaign import fuzz_model

from .throughput import MODEL, start_server

RESULTS = Path(__file__).parent / "results"


@attrs.frozen
class Sample:
    t_s: float
    rss_mb: float
    threads: int
    server_rss_mb: float


@attrs.frozen
class MemoryRun:
    model: str
    seconds: float
    warmup_s: float
    requests: int
    examples: int
    samples: tuple

    def _windows(self) -> tuple:
        """The samples of the first and the last quarter past the warm-up. Each example's log
        and each round's Hypothesis state come and go (a sawtooth of ~15 MB): what stays is
        read off the troughs, the lowest sample of each window."""
        late = [s for s in self.samples if s.t_s >= self.warmup_s]
        q = max(1, len(late) // 4)
        return late[:q], late[-q:]

    @property
    def growth_mb(self) -> float:
        first, last = self._windows()
        return min(s.rss_mb for s in last) - min(s.rss_mb for s in first)

    @property
    def server_growth_mb(self) -> float:
        first, last = self._windows()
        return min(s.server_rss_mb for s in last) - min(s.server_rss_mb for s in first)

    @property
    def requests_between(self) -> float:
        """Requests between the two windows (the campaign's rate, taken as even)."""
        first, last = self._windows()
        return self.requests * (last[0].t_s - first[0].t_s) / self.seconds if self.seconds else 0.0

    def lines(self) -> list[str]:
        first, last = self._windows()
        span = lambda w: f"{w[0].t_s:.0f}-{w[-1].t_s:.0f} s"  # noqa: E731
        rate = self.requests / self.seconds if self.seconds else 0.0
        per_k = 1000 * 1024 * self.growth_mb / self.requests_between if self.requests_between else 0.0
        return [
            f"model {self.model}: `long` campaign of {self.seconds:.0f} s, {self.examples} examples, "
            f"{self.requests} requests ({rate:.0f}/s)",
            f"fuzzer RSS, lowest sample of {span(first)} {min(s.rss_mb for s in first):.1f} MB, of {span(last)} "
            f"{min(s.rss_mb for s in last):.1f} MB: growth {self.growth_mb:+.1f} MB ({per_k:+.2f} KB per 1000 "
            f"requests); peak {max(s.rss_mb for s in self.samples):.1f} MB; threads "
            f"{min(s.threads for s in self.samples)}-{max(s.threads for s in self.samples)}",
            f"server RSS (baseline, same run) {min(s.server_rss_mb for s in first):.1f} -> "
            f"{min(s.server_rss_mb for s in last):.1f} MB: growth {self.server_growth_mb:+.1f} MB",
        ]


def _rss_mb(pid: str | int = "self") -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS"))
    except (OSError, StopIteration):
        return 0.0


def measure(seconds: float, warmup_s: float, every_s: float, model: str = MODEL) -> MemoryRun:
    server = start_server(model)
    try:
        trim = getattr(ctypes.CDLL("libc.so.6"), "malloc_trim", None)
        samples, stop, t0 = [], threading.Event(), time.monotonic()

        def sample():
            while not stop.wait(every_s):
                if trim is not None:
                    trim(0)
                samples.append(Sample(round(time.monotonic() - t0, 1), round(_rss_mb(), 1),
                                      threading.active_count(), round(_rss_mb(server.process.pid), 1)))
        sampler = threading.Thread(target=sample, daemon=True, name="memory-sampler")
        sampler.start()
        long = settings(settings.get_profile("long"), database=None, derandomize=False)
        result, error = fuzz_model(server, model, long, budget_s=seconds)
        stop.set()
        sampler.join()
        if error is not None:
            raise RuntimeError(f"the fuzzer failed on a correct model, so its memory means nothing: {error}")
        if not any(s.t_s >= warmup_s for s in samples):
            raise RuntimeError(f"no sample past the warm-up of {warmup_s:g} s in a run of {seconds:g} s")
        return MemoryRun(model, round(result.wall_s, 1), warmup_s, result.requests, result.examples, tuple(samples))
    finally:
        server.stop()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.memory")
    p.add_argument("--seconds", type=float, default=600.0, help="the campaign's budget")
    p.add_argument("--warmup", type=float, default=120.0, help="growth is measured past this")
    p.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    p.add_argument("--out", type=Path, default=None, help="write memory.md and memory.json here")
    args = p.parse_args(argv)
    if not (0 < args.warmup < args.seconds):
        p.error("--warmup must be positive and shorter than --seconds")
    run = measure(args.seconds, args.warmup, args.every)
    for line in run.lines():
        print(line)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        table = ["| t (s) | fuzzer RSS (MB) | threads | server RSS (MB) |", "|---:|---:|---:|---:|"]
        table += [f"| {s.t_s:.0f} | {s.rss_mb:.1f} | {s.threads} | {s.server_rss_mb:.1f} |" for s in run.samples]
        (args.out / "memory.md").write_text(
            "# Memory over a `long` campaign\n\nWritten by `python -m benchmarks.memory`; one run.\n\n"
            + "\n".join(f"- {line}" for line in run.lines()) + "\n\n" + "\n".join(table) + "\n")
        (args.out / "memory.json").write_text(json.dumps(
            {**attrs.asdict(run), "growth_mb": round(run.growth_mb, 1), "lines": run.lines(),
             "server_growth_mb": round(run.server_growth_mb, 1)}, indent=1) + "\n")
        print(f"wrote {args.out}/memory.md, memory.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
