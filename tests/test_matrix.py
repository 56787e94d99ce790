"""The release matrix (fuzz/matrix/): junit and report parsing, cells and the comparison
between builds on synthetic reports; the error paths; and, gated like tests/test_releases.py,
a real run over two nvidia-pytriton releases."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz import matrix
from fuzz.campaign import Failure, ModelResult
from fuzz.matrix import Build, BuildRun, Replay, parse_fuzz_report, parse_junit
from fuzz.harness.releases import is_installed
from fuzz.harness.server import free_port

IMPLICIT = "py_implicit_direct_s1_i1_int32_csr"
CORRID = "py_corrid_direct_s1_i1_int32_cserc_u64"
ENTRY = f"{IMPLICIT}--sums_match--ec0e1dce01"

JUNIT = f"""<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="fuzz.test_corpus" name="test_corpus[NOTSET]"><skipped type="pytest.skip"
 message="got empty parameter set for (corpus_item)"/></testcase>
<testcase classname="fuzz.test_corpus" name="test_corpus[{ENTRY}]"><skipped type="pytest.xfail"
 message="known divergence python-backend-drops-implicit-state on Triton 2.51.0: [sums_match] wrong running sum."/>
</testcase>
<testcase classname="fuzz.test_corpus" name="test_corpus[{CORRID}--slots_reused--0123456789]"><failure
 message="[XPASS(strict)] known divergence x on Triton 2.51.0">[XPASS(strict)]</failure></testcase>
<testcase classname="fuzz.test_seeds" name="test_seed[{IMPLICIT}-seed1]"><failure
 message="fuzz.checker.invariants.InvariantViolation: [sums_match] wrong running sum">trace</failure></testcase>
<testcase classname="fuzz.test_seeds" name="test_seed[{CORRID}-seed2]"/>
<testcase classname="fuzz.test_fuzz" name="test_sequence_batcher[{CORRID}]"><error
 message="failed on setup with &quot;fuzz.harness.server.ServerStartError: tritonserver exited&quot;">x</error></testcase>
</testsuite></testsuites>"""


def test_junit_outcomes_models_and_invariants():
    got = [(t.kind, t.model, t.outcome, t.invariant, t.known) for t in parse_junit(JUNIT)]
    assert got == [  # the NOTSET placeholder of an empty parameter set is left out
        ("corpus", IMPLICIT, "xfailed", "sums_match", "python-backend-drops-implicit-state"),
        ("corpus", CORRID, "xpassed", "slots_reused", None),
        ("seed", IMPLICIT, "failed", "sums_match", None),
        ("seed", CORRID, "passed", "", None),
        ("fuzz", CORRID, "error", "", None),
    ]


def _result(model, version, *failures, guards=()) -> ModelResult:
    return ModelResult(model=model, spec=model, triton_version=version, examples=10, steps=50, requests=60,
                       wall_s=12.5, ambiguous_waits=0, failures=tuple(failures), expected_divergences=(),
                       guards=guards)


def _failure(invariant, known=None) -> Failure:
    return Failure(invariant, "wrong running sum", 1.5, 2, ("  1. client 0: start", "  2. client 0: continue"),
                   expected_divergence=known)


def _report(*results) -> str:
    """A --fuzz-report file's text, as the plugin writes it."""
    return json.dumps({"triton_version": results[0].triton_version, "models": [r.to_json() for r in results],
                       "totals": {}})


def _outcome(kind, param, outcome, message=""):
    return matrix.TestOutcome(kind, param, outcome, message)


def _runs(tmp_path):
    """2.51.0: implicit state is a known divergence, and its corpus entry xfails; 2.41.0: the
    campaign breaks slots_reused on CORRID and valid_is_accepted on the implicit model, the
    corpus entry passes, and both break sums_match on CORRID (known on 2.51.0 only)."""
    new = tmp_path / "old" / "corpus" / f"{CORRID}--slots_reused--aaaaaaaaaa.json"
    new.parent.mkdir(parents=True)
    new.write_text("{}")
    recent = parse_fuzz_report(_report(
        _result(IMPLICIT, "2.51.0", _failure("sums_match", "python-backend-drops-implicit-state")),
        _result(CORRID, "2.51.0", _failure("sums_match", "made-up-key"), guards=("no string ids",))))
    old = parse_fuzz_report(_report(
        _result(IMPLICIT, "2.41.0", _failure("valid_is_accepted")),
        _result(CORRID, "2.41.0", _failure("slots_reused"), _failure("sums_match"))))
    return [
        BuildRun(Build("installed", "0.7.0"), "ok", triton_version="2.51.0", results=recent,
                 tests=(_outcome("corpus", ENTRY, "xfailed", "known divergence python-backend-drops-implicit-state "
                                                             "on Triton 2.51.0: [sums_match]"),
                        _outcome("seed", f"{CORRID}-seed1", "passed"))),
        BuildRun(Build("release", "0.5.0"), "failures", triton_version="2.41.0", results=old,
                 out_dir=tmp_path / "old", new_entries=(new,),
                 tests=(_outcome("corpus", ENTRY, "passed"),
                        _outcome("seed", f"{CORRID}-seed1", "failed", "InvariantViolation: [slots_reused] x"))),
    ]


def test_cells_say_pass_fail_or_expected(tmp_path):
    runs = _runs(tmp_path)
    got = {(c.model, c.build): (c.triton_version, c.fuzz, matrix.tally(c.corpus), matrix.tally(c.seeds),
                                c.new_entries) for c in matrix.cells(runs)}
    assert got == {
        (CORRID, "pytriton 0.7.0 (installed)"): ("2.51.0", "expected divergence (made-up-key)", "-", "1 ok", 0),
        (CORRID, "pytriton 0.5.0"): ("2.41.0", "FAIL slots_reused, sums_match", "-", "1 FAILED", 1),
        (IMPLICIT, "pytriton 0.7.0 (installed)"): ("2.51.0", "expected divergence (python-backend-drops-implicit-state)",
                                                   "1 xfail", "-", 0),
        (IMPLICIT, "pytriton 0.5.0"): ("2.41.0", "FAIL valid_is_accepted", "1 ok", "-", 0),
    }
    table = matrix.format_table(matrix.cells(runs), runs)
    assert "FAIL slots_reused, sums_match" in table and table.splitlines()[0].split()[:3] == ["model", "build", "Triton"]


def test_a_failure_on_one_build_only_is_a_divergence_between_releases(tmp_path):
    runs = _runs(tmp_path)
    rows, reclassified = matrix.compare(runs)
    by_sig = {(r.signature.model, r.signature.invariant, r.signature.source): r for r in rows}
    assert sorted(by_sig) == sorted([
        (CORRID, "slots_reused", "fuzz"), (CORRID, "slots_reused", f"seed {CORRID}-seed1"),
        (IMPLICIT, "valid_is_accepted", "fuzz"), (IMPLICIT, "sums_match", "fuzz"),
        (IMPLICIT, "sums_match", f"corpus {ENTRY}"),
    ])
    fuzzed = by_sig[(CORRID, "slots_reused", "fuzz")]
    assert [s.build for s in fuzzed.shown] == ["pytriton 0.5.0"]
    assert fuzzed.absent_on == ("pytriton 0.7.0 (installed)",)
    assert fuzzed.absence == "not seen within the budget"
    assert fuzzed.shown[0].program == ("  1. client 0: start", "  2. client 0: continue")
    assert fuzzed.shown[0].reproducers == runs[1].new_entries
    assert fuzzed.guards == ("pytriton 0.7.0 (installed): no string ids",)
    assert fuzzed.confirmation.startswith("unconfirmed")
    replayed = by_sig[(IMPLICIT, "sums_match", f"corpus {ENTRY}")]
    assert replayed.shown[0].known == "python-backend-drops-implicit-state"
    assert replayed.absent_on == ("pytriton 0.5.0",) and replayed.absence == "the same program keeps the promise"
    # sums_match on CORRID shows on both builds: not a divergence, but classified differently
    assert [(r.signature.model, r.signature.invariant) for r in reclassified] == [(CORRID, "sums_match")]
    text = matrix.format_divergences(rows, reclassified, "not replayed")
    assert "absent on pytriton 0.7.0 (installed): not seen within the budget" in text
    assert "classified differently" in text and str(runs[1].new_entries[0]) in text
    report = matrix.report_json(runs, matrix.cells(runs), rows, reclassified, "not replayed", matrix.Options())
    assert json.loads(json.dumps(report))["divergences_between_releases"][0]["absence_means"]


@pytest.mark.parametrize("replays, says", [
    ([("A", "breaks it"), ("B", "keeps it")], "confirmed: the reproducer keeps the promise on B"),
    ([("A", "breaks it"), ("B", "breaks it")], "not a divergence: the reproducer breaks it on B too"),
    ([("A", "keeps it"), ("B", "keeps it")], "unconfirmed: the reproducer did not break"),
    ([("A", "breaks it"), ("B", "could not replay: drift")], "partly confirmed"),
])
def test_replays_confirm_or_refute_an_absence(replays, says):
    row = matrix.ReleaseDivergence(matrix.Signature(CORRID, "slots_reused", "fuzz"),
                                   (matrix.Sighting("A"),), ("B",), tuple(Replay("e", b, o) for b, o in replays))
    assert row.confirmation.startswith(says)


def test_replay_outcomes():
    out = lambda outcome, message="": matrix.replay_outcome(_outcome("corpus", "e", outcome, message), "sums_match")  # noqa: E731
    assert out("passed") == out("xpassed") == "keeps it"
    assert out("xfailed") == out("failed", "InvariantViolation: [sums_match] x") == "breaks it"
    assert out("failed", "InvariantViolation: [no_hangs] x") == "breaks no_hangs instead"
    assert out("failed", "ReplayDrift: step 3").startswith("could not replay: ReplayDrift")


def test_builds_keep_their_order_and_are_named_once():
    args = matrix.parse_args(["--release", "0.5.0", "--installed", "--url", "h:8001,h:8000"])
    assert [(b.kind, b.http_url) for b in args.builds] == [("release", None), ("installed", None), ("url", "h:8000")]
    assert [b.slug for b in args.builds] == ["release-0.5.0", f"installed-{matrix.installed_version()}", "url-h-8001"]
    with pytest.raises(SystemExit):
        matrix.parse_args(["--release", "0.5.0", "--release", "0.5.0"])
    with pytest.raises(SystemExit):
        matrix.parse_args(["--model", CORRID])


def test_all_releases_are_the_six_builds_the_installed_one_standing_for_its_own():
    from fuzz.harness.releases import MATRIX_RELEASES, TRITON_VERSION

    builds = matrix.parse_args(["--all-releases"]).builds
    assert [b.name for b in builds] == list(MATRIX_RELEASES) and len(builds) == 6
    assert [TRITON_VERSION[r][:4] for r in MATRIX_RELEASES] == ["2.36", "2.39", "2.41", "2.44", "2.46", "2.51"]
    mine = matrix.installed_version()
    assert [b.kind for b in builds] == ["installed" if b.name == mine else "release" for b in builds]
    with pytest.raises(SystemExit):
        matrix.parse_args(["--all-releases", "--release", "0.4.0"])  # named twice


def test_a_build_says_which_default_models_it_would_refuse_and_why():
    from modelgen import default_variants, left_out_on, loadable_on

    variants = default_variants()
    refused = {v.name: why for v, why in left_out_on(variants, "2.36.0")}
    assert refused and set(refused) == {v.name for v in variants} - {v.name for v in loadable_on(variants, "2.36.0")}
    assert all(why for why in refused.values())
    assert [why for name, why in refused.items() if "iter" in name] == ["iterative_sequence came with Triton 2.40"]
    assert left_out_on(variants, "2.51.0") == [] and left_out_on(variants, None) == []


def test_pip_errors_become_one_line():
    text = "pip could not install nvidia-pytriton==0.0.999:\nERROR: Could not find a version\nERROR: No matching distribution"
    assert matrix.one_line(text) == "pip could not install nvidia-pytriton==0.0.999: ERROR: No matching distribution"


def test_a_url_that_does_not_answer_is_named_and_the_run_goes_on(tmp_path, capsys, monkeypatch):
    port = free_port()
    ask = matrix.prepare
    monkeypatch.setattr(matrix.cli, "prepare", lambda build: ask(build, url_timeout=0.5))  # main's (cli.py); not 10 s
    assert matrix.main(["--url", f"127.0.0.1:{port}", "--out", str(tmp_path), "--no-replay"]) == 1
    err = capsys.readouterr().err
    assert f"[url 127.0.0.1:{port}] unavailable: no Triton answers at gRPC 127.0.0.1:{port}" in err
    report = json.loads((tmp_path / "matrix.json").read_text())
    assert [(b["label"], b["status"]) for b in report["builds"]] == [(f"url 127.0.0.1:{port}", "unavailable")]


# -- live --------------------------------------------------------------------------------------------

WANTED = os.environ.get("TRITON_SEQFUZZ_RELEASES") == "1"


@pytest.mark.timeout(300)
def test_matrix_over_two_releases(tmp_path):
    """The installed nvidia-pytriton and 0.5.0 (Triton 2.41.0): one model, a tiny budget."""
    if not (WANTED or is_installed("0.5.0")):
        pytest.skip("set TRITON_SEQFUZZ_RELEASES=1 to download nvidia-pytriton 0.5.0")
    out = tmp_path / "matrix"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(matrix.__file__).parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "fuzz.matrix", "--installed", "--release", "0.5.0",
                           "--model", CORRID, "--fuzz-budget", "5", "--hypothesis-profile", "ci",
                           "--out", str(out)], capture_output=True, text=True, env=env, timeout=280)
    assert done.returncode in (0, 1), done.stderr
    report = json.loads((out / "matrix.json").read_text())
    builds = report["builds"]
    assert [b["kind"] for b in builds] == ["installed", "release"]
    assert all(b["status"] in ("ok", "failures") for b in builds), builds
    assert builds[1]["triton_version"] == "2.41.0" and builds[0]["triton_version"] != "2.41.0"
    assert [(c["model"], c["build"]) for c in report["cells"]] == [(CORRID, b["label"]) for b in builds]
    assert all(c["fuzz_result"]["examples"] >= 1 for c in report["cells"])
    for row in report["divergences_between_releases"]:
        assert row["shown_on"] and row["absent_on"] and row["confirmation"]
    assert CORRID in done.stdout and "Divergences between releases" in done.stdout
    left = [p for p in Path("/proc").glob("[0-9]*") if _cmdline_has(p, str(out))]
    assert not left, "processes outlived the matrix run"


def _cmdline_has(proc: Path, text: str) -> bool:
    try:
        return text.encode() in (proc / "cmdline").read_bytes()
    except OSError:
        return False
