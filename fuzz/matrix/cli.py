"""`python -m fuzz.matrix`: the release matrix. The same corpus, regression seeds and fuzz budget
against several Triton builds, and a table of build x model: pass, failures by invariant, new
corpus entries; then the failures that show on one build and not on another (divergences between
releases), each with its shrunk program and reproducers; and a JSON report of it all.

The command line (the paragraph above is its --help description): each build prepared and run
in the order given, then the table, the divergences and the JSON report.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from ..harness.releases import MATRIX_RELEASES, TRITON_VERSION
from .builds import PROJECT_CORPUS, Build, BuildUnavailable, installed_version, prepare
from .compare import compare, confirm, format_divergences
from .report import report_json
from .run import BuildRun, Options, run_build
from .table import cells, format_table

def _expand(given) -> list:
    """A --release, --installed (None) or --url build as itself; --all-releases as the matrix's
    releases, the installed one standing for its own version."""
    if given is None:
        return [Build("installed", installed_version())]
    if given == "all":
        mine = installed_version()
        return [Build("installed", r) if r == mine else Build("release", r) for r in MATRIX_RELEASES]
    return [given]


def _url_build(text: str) -> Build:
    grpc, _, http = text.partition(",")
    return Build("url", grpc, http or None)


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m fuzz.matrix", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    builds = p.add_argument_group("builds (in the order given; at least one)")
    builds.add_argument("--release", dest="builds", action="append", metavar="VERSION",
                        type=lambda v: Build("release", v),
                        help="an nvidia-pytriton release, installed side by side on first use "
                        "(fuzz/harness/releases.py)")
    builds.add_argument("--installed", dest="builds", action="append_const", const=None,
                        help="the nvidia-pytriton installed in this environment")
    builds.add_argument("--all-releases", dest="builds", action="append_const", const="all",
                        help=f"every release of the matrix: {', '.join(MATRIX_RELEASES)} (Triton "
                             f"{', '.join(TRITON_VERSION[r][:4] for r in MATRIX_RELEASES)}), the installed one "
                             f"standing for its own version")
    builds.add_argument("--url", dest="builds", action="append", metavar="HOST:PORT[,HTTPHOST:PORT]",
                        type=_url_build, help="an external Triton: its gRPC address, and its HTTP one if any")
    p.add_argument("--model", action="append", default=[], metavar="NAME",
                   help="fuzz this model (repeatable); default: every model of the repository")
    p.add_argument("--fuzz-budget", type=float, metavar="SECONDS", help="per model and build")
    p.add_argument("--hypothesis-profile", metavar="NAME", help="ci, dev or long (default: the plugin's)")
    p.add_argument("--corpus-dir", type=Path, metavar="DIR",
                   help=f"the corpus every build replays and starts from (default: {PROJECT_CORPUS})")
    p.add_argument("--models-dir", type=Path, metavar="DIR",
                   help="model repository for embedded builds (default: generated with the named models)")
    p.add_argument("--out", type=Path, default=Path("reports/matrix"), metavar="DIR",
                   help="per-build reports, logs and corpora (default: reports/matrix)")
    p.add_argument("--json", type=Path, metavar="PATH", help="the merged JSON report (default: OUT/matrix.json)")
    p.add_argument("--build-timeout", type=float, metavar="SECONDS",
                   help="stop a build's run after this long (default: 600 s plus 3 x budget + 120 s per model)")
    p.add_argument("--no-replay", dest="replay", action="store_false",
                   help="do not replay new reproducers on the other builds")
    args = p.parse_args(argv)
    if not args.builds:
        p.error("name at least one build: --release VERSION, --installed or --url HOST:PORT")
    args.builds = [b for given in args.builds for b in _expand(given)]
    slugs = [b.slug for b in args.builds]
    if len(set(slugs)) != len(slugs):
        p.error(f"a build is named twice: {', '.join(b.label for b in args.builds)}")
    if args.fuzz_budget is not None and args.fuzz_budget <= 0:
        p.error("--fuzz-budget must be a positive number of seconds")
    return args


def _models_dir(models, out: Path) -> Path | None:
    """A repository with just the named models, when modelgen makes them all: a server with
    fewer Python stubs starts faster and leaves more CPU to the fuzzer."""
    from modelgen import native_variants, python_variants, split_variants, write_repository

    chosen = [v for v in python_variants() + native_variants() + split_variants() if v.name in models]
    if not models or len(chosen) != len(set(models)):
        return None
    target = out / "models"
    shutil.rmtree(target, ignore_errors=True)
    write_repository(chosen, target)
    return target.resolve()


def main(argv=None) -> int:
    args = parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    n_models = len(args.model) or 12
    timeout = args.build_timeout or 600 + n_models * (3 * (args.fuzz_budget or 60) + 120)
    corpus = args.corpus_dir or (PROJECT_CORPUS if PROJECT_CORPUS.is_dir() else None)
    opts = Options(tuple(args.model), args.fuzz_budget, args.hypothesis_profile,
                   corpus.resolve() if corpus else None,
                   args.models_dir.resolve() if args.models_dir else _models_dir(args.model, out), timeout)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731  (the table goes to stdout)
    if corpus is None:
        log(f"no corpus at {PROJECT_CORPUS}: the builds start from an empty one (--corpus-dir DIR to give one)")
    runs, prepared = [], {}
    for build in args.builds:
        log(f"[{build.label}] preparing ...")
        try:
            prepared[build] = prepare(build)
        except BuildUnavailable as err:
            log(f"[{build.label}] unavailable: {err}")
            runs.append(BuildRun(build, "unavailable", str(err)))
            continue
        log(f"[{build.label}] running pytest fuzz/ (at most {timeout:.0f} s; log {out / build.slug / 'pytest.log'})")
        run = run_build(build, prepared[build], opts, out)
        log(f"[{build.label}] {run.status} in {run.wall_s:.0f} s, Triton {run.triton_version or '?'}"
            + (f": {run.message}" if run.message else ""))
        runs.append(run)
    rows, reclassified = compare(runs)
    note = "not replayed (--no-replay): absence in a fuzz campaign only means not seen within the budget"
    if args.replay:
        rows, note = confirm(rows, runs, prepared, opts, out, log)
    table = cells(runs)
    print(format_table(table, runs))
    print()
    print(format_divergences(rows, reclassified, note))
    target = args.json or out / "matrix.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(report_json(runs, table, rows, reclassified, note, opts), indent=2))
    print(f"\nJSON report: {target}")
    return 0 if runs and all(r.status == "ok" for r in runs) else 1
