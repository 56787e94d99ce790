"""`python -m fuzz.matrix`: the release matrix. The same corpus, regression seeds and fuzz budget
against several Triton builds, and a table of build x model: pass, failures by invariant, new
corpus entries; then the failures that show on one build and not on another (divergences between
releases), each with its shrunk program and reproducers; and a JSON report of it all.

    python -m fuzz.matrix --installed --release 0.5.0 --model py_corrid_direct_s1_i1_int32_cserc_u64 --fuzz-budget 20

Each build runs `pytest fuzz/` in a subprocess of its own, bounded by a timeout: its own server
(started and stopped by the plugin), its own Hypothesis database (the subprocess runs in the
build's folder), basetemp, and copy of the corpus, so what one build finds is written beside its
results, not into the project's corpus, and cannot leak into the next build's run. Results come
back through the plugin's JSON report and pytest's junit XML.

A fuzz campaign that did not show a failure only did not see it within its budget. So every
reproducer a build wrote for such a failure is replayed on every build afterwards (test_corpus
over those entries), which makes "passes on the other build" a statement about the same program.

The modules, in the order data flows through them:
    builds.py    the builds (a release, the installed one, a URL) and getting each ready to run
    outcomes.py  test outcomes from pytest's junit XML, campaign results from the fuzz report
    run.py       one build's run: `pytest fuzz/` in a subprocess, bounded, and what it left
    table.py     the table: a cell per build and model
    compare.py   divergences between releases, and the replays that confirm an absence
    report.py    the JSON report
    cli.py       the command line (`main`), which `python -m fuzz.matrix` runs
"""
from .builds import FUZZ_DIR, PROJECT_CORPUS, Build, BuildUnavailable, Prepared, installed_version, one_line, prepare
from .cli import main, parse_args
from .compare import (ReleaseDivergence, Replay, Sighting, Signature, compare, confirm, format_divergences, kept,
    replay_outcome, sightings)
from .outcomes import TestOutcome, named_invariant, parse_fuzz_report, parse_junit
from .report import report_json
from .run import BuildRun, Options, pytest_command, run_build, run_pytest
from .table import Cell, cells, format_table, fuzz_text, tally

__all__ = ["FUZZ_DIR", "PROJECT_CORPUS", "Build", "BuildUnavailable", "Prepared", "installed_version", "one_line",
           "prepare", "TestOutcome", "named_invariant", "parse_junit", "parse_fuzz_report", "Options", "BuildRun",
           "pytest_command", "run_pytest", "run_build", "Cell", "fuzz_text", "tally", "cells", "format_table",
           "Signature", "Sighting", "Replay", "ReleaseDivergence", "sightings", "kept", "compare", "replay_outcome",
           "confirm", "format_divergences", "report_json", "parse_args", "main"]
