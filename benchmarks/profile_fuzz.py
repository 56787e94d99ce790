"""Where a fuzzer step's time goes: cProfile over a one-model campaign on the embedded Triton.

    python -m benchmarks.profile_fuzz [--seconds 20] [--model NAME] [--top 25]

Prints the wall time, the share spent in deliberate sleeps (time.sleep, queue waits for
answers) and the functions with the most time of their own, sleeps excluded, so the per-step
cost outside sleeps is visible (issue: "profile before you optimise").
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats

from benchmarks.throughput import FUZZ_SETTINGS, MODEL, start_server
from fuzz.campaign import fuzz_model

_WAITS = ("sleep", "acquire", "wait", "get")  # blocking primitives: time spent waiting, not working


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.profile_fuzz")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--model", default=MODEL)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args(argv)
    server = start_server(args.model)
    try:
        prof = cProfile.Profile()
        prof.enable()
        result, error = fuzz_model(server, args.model, FUZZ_SETTINGS, budget_s=args.seconds)
        prof.disable()
    finally:
        server.stop()
    stats = pstats.Stats(prof)
    waiting = sum(tt for (file, _, name), (_, _, tt, _, _) in stats.stats.items()
                  if "~" in file and any(w in name for w in _WAITS))
    print(f"{args.model}: {result.requests} requests, {result.steps} steps, {result.examples} examples in "
          f"{result.wall_s:.1f} s = {result.requests_per_s:.0f} requests/s; error: {error!r}")
    print(f"blocked in sleeps and waits: {waiting:.1f} s ({waiting / result.wall_s:.0%}); "
          f"the rest per step: {(result.wall_s - waiting) / max(1, result.steps) * 1000:.2f} ms")
    # Where the waits are: the fuzzer's own functions by cumulative time (waits included).
    ours = sorted(((ct, f"{file.rsplit('/', 1)[-1]}:{name}") for (file, _, name), (_, _, _, ct, _)
                   in stats.stats.items() if "/fuzz/" in file), reverse=True)[:8]
    print("fuzzer functions by cumulative time: " + ", ".join(f"{n} {ct:.1f} s" for ct, n in ours))
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.top)
    print(out.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
