"""Oracle power: does each checker catch each deliberately broken accumulator, and how fast?

    python -m benchmarks.oracle_power

For every bug in tests/broken_models.py (ALL_BUGS: those test_broken_models holds the fuzzer to, and
HARD_BUGS), on one embedded Triton serving all of them:
- the state-machine fuzzer (fuzz_model) with a fixed budget (BUDGET: the randomized `dev` profile,
  so rows vary from run to run): caught or not, seconds to the campaign's first failure (of any
  promise), the shrunk step count;
- the stress campaign (run_stress) with a fixed budget (STRESS): caught or not, seconds to the
  first violation, and how many sequences and requests it took.
Every bug here only corrupts OUTPUT, so a catch is a `sums_match` violation (as
tests/test_broken_models.py asserts); a campaign that found one beside another failure shows the
wrong sum, and one that found only others shows what they were, not as a catch.
A miss is a row that says "missed", never a dropped row.
"""
from __future__ import annotations

import argparse
import tempfile
from contextlib import contextmanager

import attrs

from benchmarks.throughput import FUZZ_SETTINGS
from fuzz.campaign import fuzz_model
from fuzz.harness.engine import FuzzSettings
from fuzz.harness.server import EmbeddedTriton, explicit_control
from fuzz.spec import ContractError
from fuzz.stress import StressSettings, run_stress
from tests.broken_models import ALL_BUGS, model_name, write_broken_repository

SHRINK_CAP_S = 60  # Hypothesis's own cap is 300 s of shrinking per failure; too long for 7 bugs
# A `dev` campaign, what `pytest fuzz/` runs at a terminal (randomized; no example database).
BUDGET = FUZZ_SETTINGS
STRESS = StressSettings(concurrency=4, iterations=50, seed=0)


@attrs.frozen
class Row:
    bug: str
    summary: str
    fuzz_caught: bool
    fuzz_invariant: str
    fuzz_flaky: bool  # Hypothesis could not replay it: steps are the shortest seen, not shrunk
    fuzz_fresh: bool  # shrunk from a freshly loaded model (fuzz/corpus/isolate.py): its first step is the reload
    fuzz_first_failure_s: float | None
    fuzz_shrunk_steps: int | None
    minimal_steps: int  # the shortest program that shows the bug, derived by hand (Bug.minimal)
    fuzz_examples: int
    fuzz_wall_s: float  # including shrinking
    stress_caught: bool
    stress_invariant: str
    stress_first_failure_s: float | None
    stress_sequences: int  # until the first violation, or all of them when missed
    stress_requests: int
    stress_wall_s: float
    stress_applies: bool = True  # not for an iterative model, whose sequences are one START each


@contextmanager
def shrink_cap(seconds: float):
    """Caps Hypothesis's shrinking time (engine.MAX_SHRINKING_SECONDS): a shrink replays the
    program against the live server, idle waits included, so the default 300 s per failure
    would dominate the run. The step count is then the shortest found within the cap."""
    from hypothesis.internal.conjecture import engine

    before = engine.MAX_SHRINKING_SECONDS
    engine.MAX_SHRINKING_SECONDS = seconds
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = before


# A bug is caught where a promise its symptom breaks broke (Bug.breaks): for most, wrong sums (a
# plain answer shows them as sums_match, the answers of one sequence sent from several clients at
# once as order_kept); for one that answers an error where an answer is due, valid_is_accepted.
# Any other promise broken is a miss: the bug was not what the fuzzer saw.


def measure_bug(server, bug) -> Row:
    name = model_name(bug)
    with shrink_cap(SHRINK_CAP_S):
        result, error = fuzz_model(server, name, BUDGET)
    # The wrong sum where the campaign found one beside another failure (a broken model may also
    # crash on an input its bug was not about: fp32_sum_rounded_to_half on an infinity)
    # (not a known divergence met on the way and fuzzed on past: start-overtakes-its-ids-end, a race)
    found = [f for f in result.failures if f.expected_divergence is None]
    failure = next((f for f in found if f.invariant in bug.breaks), found[0] if found else None)
    if failure is not None:  # the row's shrunk program, to judge its length by
        print(f"{bug.name}: " + failure.whole(indent="  "), flush=True)
    try:
        stress = run_stress(server, name, STRESS)
    except ContractError:  # its patterns need sequences of many requests
        stress = None
    first = stress.violations[0] if stress and stress.violations else None
    if first is not None and first.invariant not in bug.breaks:  # not the bug's promise: what it was, to trace later
        print(f"{bug.name}: the stress campaign broke {first.invariant} after {first.seconds:.2f} s, not "
              f"{' or '.join(bug.breaks)}:\n  {first.detail}", flush=True)
    return Row(
        bug=bug.name, summary=bug.summary,
        fuzz_caught=failure is not None and failure.invariant in bug.breaks,
        fuzz_invariant=failure.invariant if failure else "",
        fuzz_flaky=bool(failure and failure.flaky),
        fuzz_fresh=bool(failure and failure.records and failure.records[0].fault is not None
                        and failure.records[0].fault.name == "reload"),
        fuzz_first_failure_s=failure.seconds_to_first_failure if failure else None,
        fuzz_shrunk_steps=failure.shrunk_steps if failure else None, minimal_steps=bug.minimal,
        fuzz_examples=result.examples, fuzz_wall_s=result.wall_s,
        stress_caught=first is not None and first.invariant in bug.breaks,
        stress_invariant=first.invariant if first else "",
        stress_first_failure_s=first.seconds if first else None,
        stress_sequences=first.sequences if first else sum(n for _, n in stress.sequences) if stress else 0,
        stress_requests=first.requests if first else stress.requests if stress else 0,
        stress_wall_s=stress.wall_s if stress else 0.0, stress_applies=stress is not None)


def start_server() -> EmbeddedTriton:
    repo = tempfile.mkdtemp(prefix="seqfuzz-bench-broken-")
    write_broken_repository(repo)
    # every broken model is loaded at start: over a hundred Python models take a minute and more
    return EmbeddedTriton(repo, startup_timeout=300, **explicit_control(repo)).start()


def measure(server, bugs=ALL_BUGS) -> list[Row]:
    return [measure_bug(server, bug) for bug in bugs]


def verdict(caught: bool, invariant: str) -> str:
    if caught:
        return "caught"
    return f"**missed** (failed {invariant} instead)" if invariant else "**missed**"


def table(rows: list[Row]) -> str:
    def secs(x):
        return "-" if x is None else f"{x:.2f}"

    out = ["| bug | fuzzer | first failure (s) | shrunk steps | minimal | invariant | fuzzer wall incl. shrinking (s) "
           "| stress | first violation (s) | sequences / requests until it | invariant |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(
            f"| `{r.bug}` | {verdict(r.fuzz_caught, r.fuzz_invariant)} | {secs(r.fuzz_first_failure_s)} | "
            f"{r.fuzz_shrunk_steps if r.fuzz_shrunk_steps is not None else '-'}{' (not replayable)' if r.fuzz_flaky else ''}"
            f"{' (from a fresh model)' if r.fuzz_fresh else ''}"
            f" | {r.minimal_steps} | {r.fuzz_invariant or '-'} | "
            f"{r.fuzz_wall_s:.0f} | " + (
                f"{verdict(r.stress_caught, r.stress_invariant)} | {secs(r.stress_first_failure_s)} | "
                + (f"{r.stress_sequences} / {r.stress_requests}" if r.stress_invariant
                   else f"none in {r.stress_sequences} / {r.stress_requests}")
                + f" | {r.stress_invariant or '-'} |" if r.stress_applies
                else "n/a (a sequence is one START) | - | - | - |"))
    return "\n".join(out)


def budgets() -> str:
    return (f"fuzzer budget: the dev profile, {BUDGET.max_examples} examples x {BUDGET.stateful_step_count} steps, "
            f"randomized; shrinking: Hypothesis's for {FuzzSettings().shrink_budget_s:g} s after the first failure "
            f"(capped at {SHRINK_CAP_S} s in all), then {FuzzSettings().shrink_budget_s:g} s more: a failure it "
            f"could not replay or finish shrinking is shrunk from a fresh model (its program's first step is the "
            f"reload, counted), one that replays is polished (fuzz/corpus/shrink.py; kept only if it also fails from a fresh "
            f"model, and with the reload as its first step unless it fails without); "
            f"stress budget: {STRESS.concurrency} threads x {STRESS.iterations} patterns, seed {STRESS.seed}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.oracle_power", description=__doc__.split("\n\n")[0])
    parser.add_argument("--bug", action="append", metavar="NAME",
                        help="only this bug of tests/broken_models.py (repeatable); default: every one")
    args = parser.parse_args(argv)
    names = {bug.name for bug in ALL_BUGS}
    unknown = sorted(set(args.bug or ()) - names)
    if unknown:
        parser.error(f"no broken model named {', '.join(unknown)}; known: {', '.join(sorted(names))}")
    bugs = [bug for bug in ALL_BUGS if not args.bug or bug.name in args.bug]
    server = start_server()
    try:
        rows = measure(server, bugs)
    finally:
        server.stop()
    print(f"Triton {server.version}; {budgets()}")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
