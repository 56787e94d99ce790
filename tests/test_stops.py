"""How a campaign ends when it is stopped or misconfigured: no false finding, nothing left behind.

Each case runs `pytest fuzz/` in a child process, as a user or a CI runner would."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODEL = "py_slot_direct_s1_i1_int32_csr"


def pytest_fuzz(tmp_path, *args, **popen):
    cmd = [sys.executable, "-m", "pytest", "fuzz/", "-p", "no:cacheprovider", "-q",
           "--basetemp", str(tmp_path / "bt"), "--corpus-dir", str(tmp_path / "corpus"), *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CI", None)
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            **popen)


def servers_of(tmp_path) -> list[int]:
    """tritonserver processes whose command line names this run's folders."""
    pids = []
    for d in Path("/proc").iterdir():
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "tritonserver" in cmd and str(tmp_path) in cmd:
            pids.append(int(d.name))
    return pids


def test_a_non_finite_budget_is_a_usage_error(tmp_path):
    for bad in ("nan", "inf", "-3"):
        proc = pytest_fuzz(tmp_path, "--fuzz-budget", bad)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 4, out
        assert "--fuzz-budget must be a positive, finite number of seconds" in out
        assert not servers_of(tmp_path)


@pytest.mark.parametrize("args, says", [
    (["--hypothesis-profile", "nosuch"], "--hypothesis-profile nosuch: no such profile; the fuzzer's are ci"),
    (["--models-dir", "/nonexistent"], "--models-dir /nonexistent: no such folder"),
    (["--models-dir", "EMPTY"], "holds no model (a folder with a config.pbtxt); write the default set there with"),
    (["--model", "does_not_exist"], "--model does_not_exist: no such model in the generated repository; there are: "),
    (["--triton-url", "localhost:1"], "--triton-url localhost:1: cannot list its models"),
], ids=["profile", "models-dir missing", "models-dir empty", "model", "triton-url"])
def test_a_bad_option_fails_in_one_line_before_any_server_starts(tmp_path, args, says):
    (tmp_path / "empty").mkdir()
    args = [str(tmp_path / "empty") if a == "EMPTY" else a for a in args]
    proc = pytest_fuzz(tmp_path, *args)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 4, out
    errors = [line for line in out.splitlines() if line.startswith("ERROR: ")]
    assert len(errors) == 1 and says in errors[0], out
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    assert not servers_of(tmp_path) and not (tmp_path / "bt").exists(), "a server or a session started"


def test_sigterm_mid_campaign_stops_everything_and_writes_no_finding(tmp_path):
    # A budget far past the test's own wait: the signal lands while the model is being fuzzed.
    proc = pytest_fuzz(tmp_path, "--model", MODEL, "--fuzz-budget", "300", "-k", "test_sequence_batcher")
    deadline = time.monotonic() + 90
    while not servers_of(tmp_path) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert servers_of(tmp_path), "the embedded server never started"
    time.sleep(10)  # well into the campaign (server start-up takes a few seconds of it)
    assert proc.poll() is None, proc.communicate()[0]
    proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("pytest did not stop within 60 s of SIGTERM:\n" + proc.communicate()[0])
    assert proc.returncode != 0, out
    written = sorted(p.name for p in (tmp_path / "corpus").glob("*")) if (tmp_path / "corpus").exists() else []
    assert written == [], f"a stopped run wrote corpus entries {written}:\n{out}"
    assert "FAILURE" not in out and "Falsifying" not in out, out
    assert "terminated by signal 15" in out, out
    assert not servers_of(tmp_path), f"servers left running:\n{out}"
