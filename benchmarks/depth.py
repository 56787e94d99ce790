"""How deep a `dev` campaign goes on one model: sequence lengths and expiry -> slot-reuse cycles.

    python -m benchmarks.depth [--seconds 60] [--model NAME]

The default model has one slot, so every sequence left to expire frees the slot the next START
takes: the cycle rate is the number of cancel-or-abandon -> idle-expiry -> slot-reuse cycles a
minute (issue: at least 50). Prints the campaign's DepthSummary line.
"""
from __future__ import annotations

import argparse

from fuzz.campaign import fuzz_model
from fuzz.generator.depth import DepthSummary

from .throughput import FUZZ_SETTINGS, start_server

ONE_SLOT = "py_slot_direct_s1_i1_int32_csr"


def measure(model: str = ONE_SLOT, seconds: float = 60.0) -> tuple[DepthSummary, float, int]:
    """The campaign's depth, its wall time and its requests, on a server of its own."""
    server = start_server(model)
    try:
        result, error = fuzz_model(server, model, FUZZ_SETTINGS, budget_s=seconds)
    finally:
        server.stop()
    if error is not None:
        raise RuntimeError(f"the depth campaign on {model} failed: {error}")
    return result.depth, result.wall_s, result.requests


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.depth")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--model", default=ONE_SLOT)
    args = p.parse_args(argv)
    depth, wall, requests = measure(args.model, args.seconds)
    print(f"{args.model}: {requests} requests in {wall:.1f} s; {depth.line()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
