"""Rediscovery: the fuzzer measured on real bugs instead of planted ones.

    python -m benchmarks.rediscovery [--release 0.7.0 ...] [--key KEY ...] [--out benchmarks/results]

Every known divergence (fuzz/divergences.py) x every build that has it (of those given; default:
the release matrix's), fuzzed from scratch with its guard off (FuzzSettings.find_known; the others'
guards stay, so that another divergence does not hide it) and no hint but the fault it needs: one default `dev` campaign
on a default model the divergence affects (model_for), on a server of its own (a crash kills it).
Each row: found or not (a failure the campaign names as that divergence), seconds to the first
failure, shrunk steps, and what else the campaign reported. A miss is a row, never a dropped one.
A divergence no default model shows (none affected, or none this build loads) says so.
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import attrs

from fuzz.campaign import fuzz_model
from fuzz.divergences import KNOWN
from fuzz.engine import FuzzSettings
from fuzz.releases import MATRIX_RELEASES, TRITON_VERSION, install_release
from fuzz.server import EmbeddedTriton, explicit_control

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


def model_for(divergence, release: str):
    """The default variant the divergence affects that this build loads, with the fewest other known
    divergences of the build in the way (one the campaign meets first can hide it), then the most
    slots (calls or rows at once); None when there is none."""
    from modelgen import default_variants

    version = TRITON_VERSION[release]
    fits = [v for v in default_variants() if divergence.affects(v) and v.min_triton <= _version(release)]
    others = {v.name: sum(d.applies(v, version) for d in KNOWN if d is not divergence) for v in fits}
    return min(fits, key=lambda v: (others[v.name], -v.total_slots), default=None)


def measure_one(divergence, release: str, installed: str) -> Row:
    version = TRITON_VERSION[release]
    variant = model_for(divergence, release)
    if variant is None:
        return Row(divergence.key, version, "", False, other="no default model it affects loads on this build")
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
            if TRITON_VERSION[release] in d.versions:
                rows.append(measure_one(d, release, installed))
                print(table(rows[-1:]).splitlines()[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "rediscovery.json").write_text(json.dumps([attrs.asdict(r) for r in rows], indent=1) + "\n")
    (args.out / "rediscovery.md").write_text(
        "# Rediscovery: known divergences fuzzed from scratch, every guard off\n\n"
        f"`python -m benchmarks.rediscovery` ({', '.join(releases)}): one default `dev` campaign per row.\n\n"
        + table(rows) + "\n")
    print(f"wrote {args.out / 'rediscovery.md'} and rediscovery.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
