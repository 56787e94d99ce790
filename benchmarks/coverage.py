"""Coverage per default model: one default `dev` campaign on each model of the default repository,
and for each goal (fuzz/generator/coverage.py) whether it was reached, and after how many seconds.

    python -m benchmarks.coverage [--model NAME ...] [--out benchmarks/results]

A goal a model can reach that its campaign did not reach is a gap of the fuzzer. Campaigns that
meet a known divergence of the build stop there, so their gaps say how little they fuzzed.
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from fuzz.campaign import fuzz_model
from fuzz.harness.server import EmbeddedTriton, explicit_control

from .throughput import FUZZ_SETTINGS

RESULTS = Path(__file__).parent / "results"


def measure(models=None) -> tuple[str, list]:
    """(Triton version, [ModelResult]) of one dev campaign per model (an ensemble's step through its
    ensemble), all on one embedded server of the default repository, as `pytest fuzz/` runs them."""
    from modelgen import default_variants, write_repository

    variants = [v for v in default_variants() if not models or v.name in models]
    repo = tempfile.mkdtemp(prefix="seqfuzz-bench-coverage-")
    write_repository(variants, repo)
    server = EmbeddedTriton(repo, **explicit_control(repo)).start()
    try:
        results = []
        for name in [v.name for v in variants]:
            result, _ = fuzz_model(server, name, FUZZ_SETTINGS)
            results.append(result)
            print(f"{name}: {result.verdict}, {result.coverage.line()}", flush=True)
            for f in result.failures:  # a finding on a default model is news: said whole, not only counted
                if f.expected_divergence is None:
                    print("  " + f.whole(indent="    "), flush=True)
        return server.version, results
    finally:
        server.stop()


def table(results) -> str:
    """Models as rows: goals reached of reachable, the seconds to the last one reached, the gaps."""
    lines = ["| model | verdict | requests | goals reached | last goal reached after (s) | most live rows "
             "| gaps of the fuzzer |", "|---|---|---|---|---|---|---|"]
    for r in results:
        c = r.coverage
        reached = [g.reached_s for g in c.goals if g.reached]
        lines.append(f"| `{r.model}` | {r.verdict} | {r.requests} | {len(reached)}/{len(c.goals)} | "
                     f"{max(reached, default=0):.2f} | {c.most_live_rows} | {_gaps(c)} |")
    return "\n".join(lines)


def _gaps(c) -> str:
    if c.stopped_at and c.unreached:
        return f"none tried past the known divergence {c.stopped_at} ({len(c.unreached)} goals not reached)"
    guarded = "; ".join(f"left out by a guard: {goal} ({divergence})" for goal, divergence in c.guarded)
    return "; ".join(x for x in (", ".join(c.gaps), guarded) if x) or "-"


def goal_table(results) -> str:
    """Goals as rows: on how many models each was reached, and the median seconds until it was."""
    names: list = []
    for r in results:
        names += [g.name for g in r.coverage.goals if g.name not in names]
    lines = ["| goal | reached on | median seconds to reach |", "|---|---|---|"]
    for name in names:
        times = sorted(g.reached_s for r in results for g in r.coverage.goals if g.name == name and g.reached)
        # a campaign stopped at a known divergence tried only what it reached, and a guard's rule
        # tried nothing
        can = sum(1 for r in results for g in r.coverage.goals
                  if g.name == name and (g.reached or not (r.coverage.stopped_at
                                                           or name in dict(r.coverage.guarded))))
        median = f"{times[len(times) // 2]:.2f}" if times else "-"
        lines.append(f"| {name} | {len(times)}/{can} | {median} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.coverage")
    p.add_argument("--model", action="append", help="a model of the default repository (repeatable); default: all")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    version, results = measure(args.model)
    text = "\n".join([
        "# Coverage of one `dev` campaign per default model", "",
        f"Written by `python -m benchmarks.coverage` against Triton {version}: each model of the default "
        "repository gets one `dev` campaign (10 examples x 100 steps, randomized), and each goal the model "
        "can reach (fuzz/generator/coverage.py, README's \"Coverage\") is reached or a gap of the fuzzer. A campaign "
        "that meets a known divergence of this build fuzzes on past it where the reference can take it as "
        "built (python-backend-drops-implicit-state), and stops there where it cannot "
        "(string-corrid-control-rejected: every request that runs fails): what it had not reached by then "
        "was never tried, and is not counted as a gap of the fuzzer.", "",
        table(results), "", "## By goal", "", goal_table(results), ""])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "coverage.md").write_text(text)
    (args.out / "coverage.json").write_text(json.dumps(
        {"triton_version": version, "models": [{"model": r.model, "verdict": r.verdict, "requests": r.requests,
                                                "wall_s": r.wall_s, **r.coverage.to_json()} for r in results]},
        indent=2))
    print(text)
    print(f"wrote {args.out}/coverage.md and coverage.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
