"""Runs every benchmark in one go and writes benchmarks/results/: README.md (tables, machine
info, Triton version), results.json and benchmarks.png.

    python -m benchmarks.run [--seconds 30]          # needs the `bench` extra (matplotlib)
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import attrs

from . import depth, oracle_power, throughput
from .machine_info import machine_info

RESULTS = Path(__file__).parent / "results"


def plot(rows, tp, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [3, 2]})
    names = [r.bug for r in rows]
    xs = range(len(rows))
    for offset, label, color, caught, secs in (
            (-0.2, "state-machine fuzzer", "tab:blue", [r.fuzz_caught for r in rows],
             [r.fuzz_first_failure_s for r in rows]),
            (0.2, "stress campaign", "tab:orange", [r.stress_caught for r in rows],
             [r.stress_first_failure_s for r in rows])):
        heights = [s if c and s is not None else 0 for c, s in zip(caught, secs)]
        left.bar([x + offset for x in xs], heights, width=0.4, label=label, color=color)
        for x, c, r in zip(xs, caught, rows):
            if not c:
                missed = "n/a" if offset > 0 and not r.stress_applies else "missed"
                left.text(x + offset, 0, missed, rotation=90, ha="center", va="bottom", color="red")
    left.set_xticks(list(xs), names, rotation=30, ha="right", fontsize=8)
    left.set_ylabel("seconds to first failure")
    left.set_title("oracle power: time to catch each broken model")
    left.legend()
    labels = ["raw tritonclient", "fuzzer", "fuzzer w/o sleeps", f"stress x{tp.stress_concurrency}"]
    values = [tp.raw_requests_per_s, tp.fuzz_requests_per_s, tp.fuzz_active_requests_per_s,
              tp.stress_requests_per_s]
    right.bar(labels, values, color=["gray", "tab:blue", "tab:cyan", "tab:orange"])
    for i, v in enumerate(values):
        right.text(i, v, f"{v:.0f}", ha="center", va="bottom")
    right.set_ylabel("requests/s")
    right.set_title(f"throughput on {tp.model}")
    right.tick_params(axis="x", labelsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def report(info: dict, tp, rows, one_slot: str = "") -> str:
    lines = ["# Benchmark results", "", "Written by `python -m benchmarks.run`; numbers from one run.", "",
             "## Machine", ""]
    lines += [f"- {k}: {v}" for k, v in info.items()]
    lines += ["", "## Throughput", "", "```", *tp.lines(), "```", "",
              "The raw loop is the ceiling: one unary gRPC call after another, nothing checked. The fuzzer "
              "runs the `dev` profile; its rate includes the time it waits for idle-timeout windows (parked "
              "requests sent at the end of an example, sequences left to expire), which the second line "
              "leaves out. Hypothesis's per-step cost is a machine with the fuzzer's rule shapes and draws and "
              "no-op rules. The last line is how deep the fuzzer's sequences went.", "",
              "## Depth on a one-slot model", "", "```", one_slot, "```", "",
              f"A `dev` campaign on `{depth.ONE_SLOT}` (`python -m benchmarks.depth`): with one slot, every "
              "sequence left to expire frees the slot that the next START takes (an expiry -> reuse cycle).", "",
              "## Oracle power", "", oracle_power.budgets(), "", oracle_power.table(rows), "",
              "Shrunk and minimal lengths count the lines of a program (requests, and steps such as "
              "\"leave a sequence to expire\"). How each minimal program was derived:", ""]
    lines += [f"- `{b.name}` ({b.minimal}): {b.minimal_how}" for b in oracle_power.ALL_BUGS]
    lines.append("")
    fuzz_missed = [r.bug for r in rows if not r.fuzz_caught]
    stress_missed = [r.bug for r in rows if r.stress_applies and not r.stress_caught]
    lines.append(f"The fuzzer missed: {', '.join(fuzz_missed) or 'none'}. "
                 f"The stress campaign missed: {', '.join(stress_missed) or 'none'}.")
    lines += ["", "![benchmarks](benchmarks.png)", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run")
    p.add_argument("--seconds", type=float, default=30.0, help="throughput: seconds for the raw loop and the fuzzer")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)

    server = throughput.start_server()
    info = machine_info(server.version)  # before the runs: the load average is the machine's, not ours
    try:
        tp = throughput.measure(server, seconds=args.seconds)
        version = server.version
    finally:
        server.stop()
    print(f"Triton {version}\n" + "\n".join(tp.lines()), flush=True)

    summary, wall, requests = depth.measure(seconds=args.seconds)
    one_slot = f"{depth.ONE_SLOT}: {requests} requests in {wall:.1f} s; {summary.line()}"
    print(one_slot, flush=True)

    server = oracle_power.start_server()
    try:
        rows = oracle_power.measure(server)
    finally:
        server.stop()
    print(oracle_power.budgets())
    print(oracle_power.table(rows), flush=True)

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(
        {"machine": info, "throughput": {**attrs.asdict(tp), "ratio": tp.ratio, "active_ratio": tp.active_ratio,
                                         "stress_ratio": tp.stress_ratio, "hypothesis_share": tp.hypothesis_share},
         "depth_one_slot": {"model": depth.ONE_SLOT, "wall_s": wall, "requests": requests,
                            **attrs.asdict(summary)},
         "oracle_power": {"budgets": oracle_power.budgets(), "rows": [attrs.asdict(r) for r in rows]}},
        indent=2))
    (args.out / "README.md").write_text(report(info, tp, rows, one_slot))
    plot(rows, tp, args.out / "benchmarks.png")
    print(f"wrote {args.out}/README.md, results.json, benchmarks.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
