"""A failure report ends in the commands that replay it, and they do: the pytest line replays
the corpus entry (test_corpus) and the standalone reproducer diverges, against a broken model."""
import os
import shlex
import subprocess
import sys
from pathlib import Path

from .broken_models import bug_named, model_name, write_broken_repository

ROOT = Path(__file__).resolve().parents[1]
BUG = bug_named("int16_wrap")  # one START whose value does not fit 16 bits
MODEL = model_name(BUG)


def run(args, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CI", None)
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, **kw)


def test_a_failure_report_ends_in_commands_that_replay_it(tmp_path):
    write_broken_repository(tmp_path / "models", [BUG])  # one model loads fast
    corpus_dir = tmp_path / "corpus"
    found = run([sys.executable, "-m", "pytest", "fuzz/", "-p", "no:cacheprovider", "-q", "--basetemp",
                 str(tmp_path / "bt"), "--models-dir", str(tmp_path / "models"), "--model", MODEL,
                 "--corpus-dir", str(corpus_dir), "-k", "test_sequence_batcher"])
    out = found.stdout
    assert found.returncode == 1, out
    report = out.split("test_sequence_batcher[" + MODEL + "] _", 1)[1]
    lines = report.splitlines()[1:]
    assert lines[0].startswith("[sums_match] wrong running sum"), report  # the report itself, no traceback
    lines = lines[:next(i for i, line in enumerate(lines) if line.startswith("standalone: ")) + 1]
    assert not any(line.startswith(("Traceback", "E ", ">")) for line in lines), report
    # Usually one entry. Hypothesis can report distinct failures of one run (raised at different
    # places, e.g. a wrong sum in a prompt answer and in a backlogged START's), each with its own
    # entry and commands (a CI run wrote two here once): the first report's commands are checked.
    entries = sorted(corpus_dir.glob("*.json"))
    entry = next((e for e in entries if f"-k '{e.stem}'" in lines[-2]), None)
    assert entry is not None, (entries, report)
    assert lines[-2] == (f"reproduce: pytest fuzz/ -k '{entry.stem}' --models-dir {tmp_path / 'models'} "
                         f"--corpus-dir {corpus_dir}"), report
    assert lines[-1].startswith(f"standalone: python {entry.with_suffix('.py')} --url 127.0.0.1:"), report

    # The pytest line, as printed: the entry replays and breaks the same promise.
    again = run([sys.executable, "-m"] + shlex.split(lines[-2].removeprefix("reproduce: ")) +
                ["-p", "no:cacheprovider", "-q", "--basetemp", str(tmp_path / "bt2")])
    assert again.returncode == 1 and "1 failed" in again.stdout, again.stdout
    assert f"test_corpus[{entry.stem}]" in again.stdout and "[sums_match]" in again.stdout, again.stdout
