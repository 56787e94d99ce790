"""The stress campaign (fuzz/stress.py) against a live embedded Triton: short runs only."""
import pytest

from fuzz import stress
from fuzz.harness.server import EmbeddedTriton
from fuzz.stress import StressSettings, run_stress
from modelgen import python_variants, write_model

from .broken_models import BUGS, bug_named, model_name, write_broken_repository

CORRECT = "py_corrid_direct_s1_i1_int32_cserc_u64"  # one slot: most STARTs wait in the backlog


@pytest.fixture(scope="module")
def correct_triton(tmp_path_factory):
    repo = tmp_path_factory.mktemp("stress-models")
    write_model(next(v for v in python_variants() if v.name == CORRECT), repo)
    with EmbeddedTriton(repo, workdir=tmp_path_factory.mktemp("stress-triton")) as server:
        yield server


@pytest.fixture(scope="module")
def broken_repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("stress-broken-models")
    write_broken_repository(repo, BUGS)
    return repo


def test_cli_passes_on_a_correct_model(capsys):
    # The default path: a fresh modelgen repository with the default model on the embedded Triton.
    assert stress.main(["--concurrency", "3", "--iterations", "5", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "verdict: pass" in out and "requests/s" in out


def test_backlog_is_checked_without_false_alarms(correct_triton):
    result = run_stress(correct_triton, CORRECT, StressSettings(concurrency=3, iterations=8, seed=5))
    assert result.ok, result.summary()
    assert sum(n for _, n in result.sequences) == 24
    assert result.backlogged > 0, "with one slot and three threads some START must wait in the backlog"
    assert result.requests >= 24


def test_cli_exits_nonzero_on_a_broken_model(broken_repo, capsys):
    bug = bug_named("drops_every_third")
    code = stress.main(["--concurrency", "3", "--iterations", "5", "--seed", "1",
                        "--models-dir", str(broken_repo), "--model", model_name(bug)])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "[sums_match]" in out and "verdict: FAIL" in out


def test_a_violation_says_when_it_happened(broken_repo, tmp_path):
    bug = bug_named("int16_wrap")
    with EmbeddedTriton(broken_repo, workdir=tmp_path) as server:
        result = run_stress(server, model_name(bug), StressSettings(concurrency=2, iterations=5, seed=2))
    assert not result.ok
    first = result.violations[0]
    assert first.invariant == "sums_match"
    assert first.requests >= 1 and first.sequences >= 1 and first.seconds >= 0
    assert "expected OUTPUT=" in first.detail


def test_an_iterative_model_is_refused_in_one_line(capsys):
    """Its sequences are one START each: the stress patterns' many-request sequences do not apply."""
    name = next(v.name for v in python_variants() if v.iterations)
    assert stress.main(["--concurrency", "2", "--iterations", "1", "--model", name]) == 2
    err = capsys.readouterr().err
    assert f"model {name!r} is an iterative sequence" in err and len(err.strip().splitlines()) == 1
