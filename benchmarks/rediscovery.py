"""Rediscovery: the fuzzer measured on real bugs instead of planted ones.

    python -m benchmarks.rediscovery [--release 0.7.0 ...] [--key KEY ...] [--out benchmarks/results]

Every known divergence (fuzz/checker/divergences.py) x every build that has it (of those given; default:
the release matrix's), fuzzed from scratch with its guard off (FuzzSettings.find_known; the others'
guards stay, so that another divergence does not hide it) and no hint but the fault it needs: one default `dev` campaign
on each of up to three models the divergence affects (models_for: the default ones with the fewest
slots and the most, and a slow one), on a server of its own (a crash kills it).
Each row: found or not (a failure the campaign names as that divergence), seconds to the first
failure, shrunk steps, and what else the campaign reported. A miss is a row, never a dropped one.
A divergence no default model shows (none affected, or none this build loads) says so.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import attrs

from fuzz.campaign import fuzz_model
from fuzz.checker.divergences import KNOWN
from fuzz.harness.engine import FuzzSettings
from fuzz.harness.releases import MATRIX_RELEASES, TRITON_VERSION, install_release
from fuzz.harness.server import EmbeddedTriton, explicit_control

from .throughput import FUZZ_SETTINGS

RESULTS = Path(__file__).parent / "results"


@attrs.frozen
class Row:
    divergence: str
    triton: str
    model: str
    found: bool
    first_failure_s: float | None = None
    shrunk_steps: int | None = None
    other: str = ""  # what else the campaign reported (another finding, or why it could not run)


def _version(release: str) -> tuple:
    return tuple(int(x) for x in TRITON_VERSION[release].split(".")[:2])


def models_for(divergence, release: str) -> list:
    """The variants the divergence affects that this build loads, with the fewest other known
    divergences of the build in the way (one the campaign meets first can hide it): of the default
    ones, the one with the fewest slots and the one with the most (calls or rows at once), and of
    the slow ones (modelgen's slow_variants: 100 ms an execution), one. A bug of the backlog shows
    where a slot is scarce, one of load where many calls run at once, one of a queue (a cancel
    while a request waits behind another) where executions take time; which a divergence is, the
    benchmark is not told. Empty when none loads."""
    from modelgen import default_variants, slow_variants

    version = TRITON_VERSION[release]

    def fewest_others(variants):
        fits = [v for v in variants if divergence.affects(v) and v.min_triton <= _version(release)]
        # the campaign strikes only this divergence's fault: one needing another is not in the way
        others = {v.name: sum(d.applies(v, version) for d in KNOWN if d is not divergence
                              and d.needs_fault in ("", divergence.needs_fault)) for v in fits}
        return [v for v in fits if others[v.name] == min(others.values())]

    fast, slow = fewest_others(default_variants()), fewest_others(slow_variants())
    picks = [min(fast, key=lambda v: v.total_slots), max(fast, key=lambda v: v.total_slots)] if fast else []
    picks += [max(slow, key=lambda v: v.total_slots)] if slow else []
    return list({v.name: v for v in picks}.values())


def measure_one(divergence, release: str, installed: str, variant) -> Row:
    version = TRITON_VERSION[release]
    from modelgen import write_repository

    repo = tempfile.mkdtemp(prefix="seqfuzz-rediscovery-")
    write_repository([variant], repo)
    install = {} if release == installed else {"install": install_release(release)}
    settings = FuzzSettings(find_known={divergence.key}, nemesis={divergence.needs_fault} if divergence.needs_fault else ())
    try:
        with EmbeddedTriton(repo, **install, **explicit_control(repo)) as server:
            result, _ = fuzz_model(server, variant.name, FUZZ_SETTINGS, fuzz_settings=settings)
    except Exception as err:  # noqa: BLE001 - a build that cannot serve the model is a row too
        return Row(divergence.key, version, variant.name, False, other=f"{type(err).__name__}: {err}".splitlines()[0])
    ours = [f for f in result.failures if f.expected_divergence == divergence.key]
    others = "; ".join(f"{f.expected_divergence or 'unknown'}: [{f.invariant}]" for f in result.failures
                       if f not in ours)
    if not ours:
        return Row(divergence.key, version, variant.name, False, other=others or f"clean: {result.verdict}")
    f = ours[0]
    return Row(divergence.key, version, variant.name, True, f.seconds_to_first_failure, f.shrunk_steps, others)


def table(rows) -> str:
    lines = ["| divergence | Triton | model | found | first failure (s) | shrunk steps | also |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.divergence} | {r.triton} | `{r.model}` | {'yes' if r.found else 'no'} | "
                     f"{'' if r.first_failure_s is None else r.first_failure_s} | "
                     f"{'' if r.shrunk_steps is None else r.shrunk_steps} | {r.other} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    from fuzz.matrix.builds import installed_version

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--release", action="append", default=[], help="nvidia-pytriton release (default: the matrix's)")
    p.add_argument("--key", action="append", default=[], help="known divergence key (default: all)")
    p.add_argument("--until-found", action="store_true",
                   help="stop fuzzing a divergence at the first build it is found on (builds in the order given)")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    releases = args.release or list(MATRIX_RELEASES)
    unknown = [k for k in args.key if k not in {d.key for d in KNOWN}]
    if unknown:
        p.error(f"unknown divergence {unknown}; known: {', '.join(d.key for d in KNOWN)}")
    installed = installed_version()
    rows = []
    for d in KNOWN:
        if args.key and d.key not in args.key:
            continue
        for release in releases:
            if TRITON_VERSION[release] not in d.versions:
                continue
            if args.until_found and any(r.found for r in rows if r.divergence == d.key):
                break
            variants = models_for(d, release)
            if not variants:
                rows.append(Row(d.key, TRITON_VERSION[release], "", False,
                                other="no default model it affects loads on this build"))
            for variant in variants:
                rows.append(measure_one(d, release, installed, variant))
                print(table(rows[-1:]).splitlines()[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "rediscovery.json").write_text(json.dumps([attrs.asdict(r) for r in rows], indent=1) + "\n")
    tried = sorted({r.divergence for r in rows})
    found = sorted({r.divergence for r in rows if r.found})
    (args.out / "rediscovery.md").write_text(
        "# Rediscovery: known divergences fuzzed from scratch, each with its guard off\n\n"
        f"`python -m benchmarks.rediscovery {' '.join(argv if argv is not None else sys.argv[1:])}` "
        f"({', '.join(releases)}): one default `dev` campaign per row.\n\n"
        + table(rows) + "\n\n"
        f"Found unaided on at least one build: {len(found)} of {len(tried)}"
        + (f"; never found: {', '.join(k for k in tried if k not in found)}" if len(found) < len(tried) else "")
        + ".\n")
    print(f"wrote {args.out / 'rediscovery.md'} and rediscovery.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
