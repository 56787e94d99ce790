"""Throughput measured from outside, as a user meets it: a Triton started on its own, the fuzzer
run as `pytest fuzz/ --triton-url ... --triton-http-url ...` in a process of its own (the `dev`
profile, default settings), and the raw tritonclient loop in a third process. The in-process
benchmark (benchmarks/throughput.py) leaves idle expiry out of the fuzzer's program mix; here the
fuzzer waits out idle windows as a campaign does, and the rate without those waits is shown too.

    python -m benchmarks.outside [--seconds 20] [--rounds 3] [--out benchmarks/results]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import attrs

from benchmarks.throughput import MODEL, raw_loop, start_server

ROOT = Path(__file__).resolve().parents[1]


@attrs.frozen
class Round:
    raw_requests_per_s: float
    requests: int
    wall_s: float
    wait_s: float  # the fuzzer's waits for idle windows at the ends of examples (its report's wait_s)
    stuck_s: float = 0.0  # and every client's mid-example, for windows to free slots (its stuck_s)

    @property
    def ratio(self) -> float:
        return self.requests / self.wall_s / self.raw_requests_per_s

    @property
    def active_ratio(self) -> float:
        return self.requests / max(1e-9, self.wall_s - self.wait_s) / self.raw_requests_per_s

    def line(self) -> str:
        return (f"raw loop {self.raw_requests_per_s:6.0f} requests/s; fuzzer {self.requests / self.wall_s:6.0f} "
                f"requests/s, ratio {self.ratio:.3f}; without its idle-window waits ({self.wait_s / self.wall_s:.0%} "
                f"of its time) ratio {self.active_ratio:.3f}; every client waiting mid-example {self.stuck_s / self.wall_s:.0%}")


def raw_elsewhere(grpc_url: str, seconds: float) -> float:
    """The raw loop's requests/s, run in a process of its own."""
    out = subprocess.run([sys.executable, "-m", "benchmarks.outside", "--raw", grpc_url, str(seconds)],
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return float(out.split()[-1])


def fuzz_elsewhere(grpc_url: str, http_url: str, seconds: float, seed: int) -> dict:
    """One model's entry of the JSON report of a `pytest fuzz/` campaign against the server. The
    seed fixes its programs: one campaign's rate depends on its mix (a round of long pipelined
    runs is faster than one of crowds), so a comparison runs the same seeds."""
    with tempfile.TemporaryDirectory(prefix="seqfuzz-outside-") as tmp:
        report = Path(tmp) / "report.json"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "fuzz/", "-p", "no:cacheprovider", "-q", "--triton-url", grpc_url,
             "--triton-http-url", http_url, "--model", MODEL, "-k", "test_sequence_batcher",
             "--fuzz-budget", str(seconds), "--no-corpus-write", f"--hypothesis-seed={seed}", "--fuzz-report", str(report)],
            cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0 or not report.exists():
            raise RuntimeError(f"the campaign failed on a correct model, so its rate means nothing:\n{done.stdout[-3000:]}")
        (entry,) = json.loads(report.read_text())["models"]
        return entry


def measure(server, seconds: float, seed: int) -> Round:
    raw = raw_elsewhere(server.grpc_url, seconds)
    entry = fuzz_elsewhere(server.grpc_url, server.http_url, seconds, seed)
    return Round(raw_requests_per_s=raw, requests=entry["requests"], wall_s=entry["wall_s"], wait_s=entry["wait_s"],
                 stuck_s=entry.get("stuck_s", 0.0))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.outside")
    p.add_argument("--seconds", type=float, default=20.0, help="for the raw loop and for the fuzzer, each")
    p.add_argument("--rounds", type=int, default=3, help="raw loop then fuzzer (Hypothesis seed 0, 1, ...)")
    p.add_argument("--out", type=Path, default=None, help="write outside.md here")
    p.add_argument("--raw", nargs=2, metavar=("URL", "SECONDS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.raw:
        from fuzz.harness.server import ExternalTriton

        print(raw_loop(ExternalTriton(args.raw[0]), MODEL, float(args.raw[1])))
        return 0
    server = start_server(MODEL)
    try:
        rounds = [measure(server, args.seconds, seed) for seed in range(args.rounds)]
    finally:
        server.stop()
    total = Round(raw_requests_per_s=sum(r.raw_requests_per_s for r in rounds) / len(rounds),
                  requests=sum(r.requests for r in rounds), wall_s=sum(r.wall_s for r in rounds),
                  wait_s=sum(r.wait_s for r in rounds), stuck_s=sum(r.stuck_s for r in rounds))
    lines = [f"seed {seed}: {r.line()}" for seed, r in enumerate(rounds)] + [f"all:    {total.line()}"]
    head = f"Triton {server.version}, model {MODEL}, {args.seconds:g} s each, measured from outside"
    print(head + "\n" + "\n".join("  " + line for line in lines))
    if args.out is not None:
        from benchmarks.machine_info import machine_info

        args.out.mkdir(parents=True, exist_ok=True)
        info = "\n".join(f"- {k}: {v}" for k, v in machine_info(server.version).items())
        (args.out / "outside.md").write_text(
            "# Throughput from outside\n\nWritten by `python -m benchmarks.outside`: a Triton started on its own, "
            "the fuzzer as `pytest fuzz/ --triton-url`, the raw loop in a process of its own.\n\n"
            f"{info}\n\n{head}\n\n```\n" + "\n".join(lines) + "\n```\n")
        print(f"wrote {args.out}/outside.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
