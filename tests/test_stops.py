"""How a campaign ends when it is stopped or misconfigured: no false finding, nothing left behind.

Each case runs `pytest fuzz/` in a child process, as a user or a CI runner would."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODEL = "py_slot_direct_s1_i1_int32_csr"


def _default_sigint():
    # A child of a shell's background job inherits SIGINT ignored, and Python then never raises
    # KeyboardInterrupt: give it the disposition of a terminal's foreground job.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def pytest_fuzz(tmp_path, *args, env_extra=None, **popen):
    corpus = [] if "--corpus-dir" in args else ["--corpus-dir", str(tmp_path / "corpus")]
    cmd = [sys.executable, "-m", "pytest", "fuzz/", "-p", "no:cacheprovider", "-q",
           "--basetemp", str(tmp_path / "bt"), *corpus, *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    env.pop("CI", None)
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=_default_sigint, **popen)


def server_cmdlines(tmp_path) -> dict:
    """pid -> command line of the tritonserver processes that name this run's folders."""
    found = {}
    for d in Path("/proc").iterdir():
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "tritonserver" in cmd and str(tmp_path) in cmd:
            found[int(d.name)] = cmd
    return found


def servers_of(tmp_path) -> list[int]:
    return sorted(server_cmdlines(tmp_path))


def inferences(tmp_path) -> int:
    """Successful inferences of MODEL so far on this run's server (0 while it is not up)."""
    import tritonclient.grpc as grpcclient

    for cmd in server_cmdlines(tmp_path).values():
        port = re.search(r"--grpc-port=(\d+)", cmd)
        try:
            stats = grpcclient.InferenceServerClient(f"127.0.0.1:{port.group(1)}").get_inference_statistics(
                MODEL, as_json=True, client_timeout=2)
            return int(stats["model_stats"][0]["inference_stats"]["success"].get("count", 0))
        except Exception:
            return 0
    return 0


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
    (["--corpus-dir", "A_FILE"], "is not a folder; give a writable --corpus-dir, or --no-corpus-write"),
    # A folder the kernel refuses writes to, even for root (a chmod'ed one would not stop root).
    (["--corpus-dir", "/proc/self"], "--corpus-dir /proc/self is not writable; give a writable --corpus-dir, or "
                                     "--no-corpus-write"),
], ids=["profile", "models-dir missing", "models-dir empty", "model", "triton-url", "corpus-dir a file",
        "corpus-dir read-only"])
def test_a_bad_option_fails_in_one_line_before_any_server_starts(tmp_path, args, says):
    (tmp_path / "empty").mkdir()
    (tmp_path / "a_file").write_text("")
    args = [str(tmp_path / "empty") if a == "EMPTY" else str(tmp_path / "a_file") if a == "A_FILE" else a
            for a in args]
    proc = pytest_fuzz(tmp_path, *args)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 4, out
    errors = [line for line in out.splitlines() if line.startswith("ERROR: ")]
    assert len(errors) == 1 and says in errors[0], out
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    assert not servers_of(tmp_path) and not (tmp_path / "bt").exists(), "a server or a session started"


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
@pytest.mark.parametrize("sig, says", [(signal.SIGTERM, "terminated by signal 15"), (signal.SIGINT, "KeyboardInterrupt")],
                         ids=["SIGTERM", "SIGINT"])
def test_a_stop_mid_campaign_keeps_the_record_and_writes_no_finding(tmp_path, sig, says, workers):
    # A budget far past the test's own wait: the signal lands while the model is being fuzzed.
    # It reaches the pytest process alone (as `timeout` sends it): under xdist, the controller,
    # which stops the server its workers are still fuzzing.
    report = tmp_path / "report.json"
    proc = pytest_fuzz(tmp_path, "--model", MODEL, "--fuzz-budget", "300", "-k", "test_sequence_batcher",
                       "--fuzz-report", str(report), *workers)
    deadline = time.monotonic() + 120
    while inferences(tmp_path) < 20 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()[0]
    assert inferences(tmp_path) >= 20, "the campaign never got going"
    proc.send_signal(sig)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"pytest did not stop within 60 s of {sig.name}:\n" + proc.communicate()[0])
    assert proc.returncode != 0, out
    written = sorted(p.name for p in (tmp_path / "corpus").glob("*")) if (tmp_path / "corpus").exists() else []
    assert written == [], f"a stopped run wrote corpus entries {written}:\n{out}"
    assert "FAILURE" not in out and "Falsifying" not in out, out
    assert says in out, out
    assert not servers_of(tmp_path), f"servers left running:\n{out}"
    # The record of what it did is kept: the summary and the JSON report, marked interrupted.
    assert "fuzz campaign (interrupted)" in out, out
    data = json.loads(report.read_text())
    assert says in data["interrupted"], data
    (model,) = data["models"]
    assert model["model"] == MODEL and model["verdict"] == "interrupted" and model["examples"] >= 1, model
    assert model["requests"] > 0 and model["failures"] == [], model


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_a_log_gets_progress_lines_while_a_model_is_fuzzed(tmp_path, workers):
    # stdout is a pipe here, as in CI logs and `| tee`: between two pytest dots a model can be
    # fuzzed for minutes, and its progress lines must get through pytest's capture.
    proc = pytest_fuzz(tmp_path, "--model", MODEL, "--fuzz-budget", "6", "-k", "test_sequence_batcher",
                       "--fuzz-progress", "1", *workers)
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 0, out
    lines = [line for line in out.splitlines() if line.startswith(f"[fuzz {MODEL}]")]
    assert len(lines) >= 3, out
    assert re.search(r"\d+ examples\s+\d+ steps\s+\d+ requests \(\d+/s\)\s+failures 0", lines[-1]), lines


def test_the_servers_a_killed_run_left_are_stopped_and_said(tmp_path):
    from fuzz import leftovers

    registry = tmp_path / "run"
    registry.mkdir()
    orphan = subprocess.Popen(["sleep", "300"], start_new_session=True)  # plays a server whose fuzzer was killed
    try:
        gone = subprocess.Popen(["true"])
        gone.wait()
        (registry / f"{orphan.pid}.group").write_text(f"{gone.pid} 1 {leftovers.start_time(orphan.pid)}\n")
        proc = pytest_fuzz(tmp_path, "--model", MODEL, "--collect-only", env_extra={leftovers.ENV_DIR: str(registry)})
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out
        assert f"stopped 1 server group(s) left by a run that was killed: [{orphan.pid}]" in out, out
        assert orphan.wait(timeout=5) == -signal.SIGKILL
    finally:
        orphan.kill()


def test_a_server_killed_mid_run_is_one_short_report_and_stops_the_run(tmp_path):
    # Two models: the second is not fuzzed against a dead server. The death is reported once,
    # with the program it came under, and nothing seen after it is another finding.
    other = "py_slot_direct_s2_i2_fp32_cser"
    proc = pytest_fuzz(tmp_path, "--model", MODEL, "--model", other, "--fuzz-budget", "120",
                       "-k", "test_sequence_batcher")
    deadline = time.monotonic() + 120
    while inferences(tmp_path) < 50 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    servers = servers_of(tmp_path)
    assert proc.poll() is None and servers, proc.communicate()[0]
    for pid in servers:
        os.kill(pid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, out
    assert re.search(r"\[server_alive\] tritonserver \(pid \d+\) died with status -9", out), out
    assert out.count("--- last lines of the server log ---") == 1, out
    for noise in ("Flaky", "direct cause", "During handling", "Traceback", "hypothesis/core.py"):
        assert noise not in out, f"{noise!r} in the report:\n{out}"
    assert "the Triton under test died; the run stops here" in out and "1 failed" in out and "passed" not in out, out
    written = {p.name.split("--")[1] for p in (tmp_path / "corpus").glob("*.json")} if (tmp_path / "corpus").exists() else set()
    assert written <= {"server_alive"}, f"a finding other than the death itself was written: {written}\n{out}"
    assert not servers_of(tmp_path)


def test_a_test_whose_server_died_says_how_it_died(tmp_path):
    """A test of the user's (not a campaign) that fails once the server is dead: its report says
    how the server died, with the log's last lines, not only the test's own error; the run stops."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_users.py").write_text(
        "import os, signal, time\n\n"
        "def test_after_the_server_died(triton):\n"
        "    os.kill(triton.process.pid, signal.SIGKILL)\n"
        "    triton.process.wait(10)\n"
        "    assert False, 'the request was refused'\n\n"
        "def test_never_run(triton):\n"
        "    pass\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CI", None)
    out = subprocess.run([sys.executable, "-m", "pytest", str(suite), "-p", "no:cacheprovider", "-q",
                          "--basetemp", str(tmp_path / "bt"), "--model", MODEL],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120).stdout
    assert "the request was refused" in out, out
    assert "the Triton under test died" in out and re.search(r"died with status -9", out), out
    assert out.count("--- last lines of the server log ---") == 1, out
    assert "the Triton under test died; the run stops here" in out and "1 failed" in out and "passed" not in out, out


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_a_server_that_dies_at_start_up_ends_the_run_with_why(tmp_path, workers):
    from modelgen import Variant, write_model

    models = tmp_path / "models"
    fine, broken = Variant("slot", "direct", 1, 1), Variant("slot", "direct", 2, 1)
    write_model(fine, models)
    write_model(broken, models)
    with open(models / broken.name / "config.pbtxt", "a") as f:
        f.write("this is { not a model config\n")
    proc = pytest_fuzz(tmp_path, "--models-dir", str(models), *workers)
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 4, out  # the folder given is unusable, as a bad option is
    verdict = "the embedded Triton did not start (check --models-dir): tritonserver exited with status 1 during start-up"
    assert verdict in out and f"Poll failed for model directory '{broken.name}'" in out, out
    assert f"Poll failed for model directory '{fine.name}'" not in out, out
    assert out.count("--- last lines of the server log ---") == 1, out
    assert "ERROR at setup" not in out and "Traceback" not in out, out
    assert not servers_of(tmp_path)


def test_a_server_that_dies_while_a_failure_shrinks_keeps_the_finding(tmp_path):
    # The finding seen before the death is written, shrunk as far as it got; what the shrinker
    # ran into after the death is the death's, not another broken promise.
    from .broken_models import bug_named, write_broken_repository

    write_broken_repository(tmp_path / "models", [bug_named("drops_every_third")])
    for attempt in range(5):  # a shrink can end before the kill lands: then try again
        run = tmp_path / f"run{attempt}"
        run.mkdir()
        proc = pytest_fuzz(run, "--models-dir", str(tmp_path / "models"), "--model", "broken_drops_every_third",
                           "-k", "test_sequence_batcher", "--fuzz-progress", "0.05", "--fuzz-budget", "120")
        seen = []
        for line in proc.stdout:  # the progress line says when the first failure is in: shrinking starts
            seen.append(line)
            if re.search(r"failures [1-9]", line):
                break
        for pid in servers_of(run):
            os.kill(pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=120)
        out = "".join(seen) + out
        if "the run stops here" in out or proc.returncode != 1:
            break
    else:
        pytest.fail(f"the shrink ended before the server could be killed, 5 times:\n{out}")
    tmp_path = run
    assert proc.returncode == 1, out
    # A dropped request shows as a wrong running sum: alone (sums_match), or among requests of one
    # sequence sent at once, whose answers then fit no arrival order (order_kept).
    found = re.findall(r"FAILURE: \[(sums_match|order_kept)\]", out)
    assert found and "the run stops here" in out, out
    assert "Flaky" not in out and "Traceback" not in out, out
    entries = {p.name.split("--")[1]: json.loads(p.read_text()) for p in (tmp_path / "corpus").glob("*.json")}
    others = {k: (e["detail"], e["steps"][-3:]) for k, e in entries.items() if k not in {*found, "server_alive"}}
    assert found[0] in entries and not others, f"written after the death: {others}"
    assert not servers_of(tmp_path)


def test_a_server_that_dies_during_a_replay_is_its_death_not_a_broken_promise(tmp_path):
    # The program pauses between two requests of a sequence; the server is killed in the pause.
    # The continuation's refused connection is reported as the death, with the replay command.
    import threading

    import attrs

    from fuzz import corpus
    from fuzz.harness.client import Request
    from fuzz.harness.engine import Kind, StepRecord
    from fuzz.checker.invariants import InvariantViolation
    from fuzz.corpus.replay import check_entry
    from fuzz.harness.server import EmbeddedTriton
    from fuzz.spec import ModelSpec
    from modelgen import Variant, write_model

    model = Variant("slot", "direct", 1, 1).name
    write_model(Variant("slot", "direct", 1, 1), tmp_path / "models")
    program = [StepRecord(1, 0, "start", Request(model, 7, 1, start=True), via="stream"),
               StepRecord(2, None, "pause", kind=Kind.PAUSE, wait_s=3.0),
               StepRecord(3, 0, "continue", Request(model, 7, 2), via="grpc"),
               StepRecord(4, 0, "end", Request(model, 7, 3, end=True), via="grpc")]
    with EmbeddedTriton(tmp_path / "models", workdir=tmp_path / "w") as server:
        spec = ModelSpec.fetch(server, model)
        entry = attrs.evolve(corpus.make_entry(spec, server.version, "sums_match", "test program", program),
                             status="must-pass")
        threading.Timer(1.0, server.process.kill).start()
        with pytest.raises(InvariantViolation) as raised:
            check_entry(server, entry, corpus_path=str(tmp_path / "corpus"))
    v = raised.value
    assert v.invariant == "server_alive" and "died with status -9" in v.detail, v
    assert str(v).count("--- last lines of the server log ---") == 1, v
    assert f"Replay: pytest fuzz/ -k '{entry.name}'" in str(v), v


def test_pytest_timeout_is_a_stop_and_a_budget_moves_it(tmp_path):
    # pytest-timeout's alarm cuts an example in the middle: a 30-minute campaign once wrote two
    # false findings at its 600 s. Now what follows the alarm is no finding, and the run says why.
    report = tmp_path / "report.json"
    proc = pytest_fuzz(tmp_path, "--model", MODEL, "-k", "test_sequence_batcher", "--hypothesis-profile", "long",
                       "--timeout", "5", "-o", "timeout_func_only=true", "--fuzz-report", str(report))
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode != 0, out
    written = sorted(p.name for p in (tmp_path / "corpus").glob("*")) if (tmp_path / "corpus").exists() else []
    assert written == [], f"a timed-out run wrote corpus entries {written}:\n{out}"
    assert "FAILURE: [" not in out, out
    assert "pytest-timeout: " in json.loads(report.read_text())["interrupted"], out
    assert not servers_of(tmp_path)
    # With --fuzz-budget, the campaign's own limit is the one that holds.
    (tmp_path / "b").mkdir()
    budgeted = pytest_fuzz(tmp_path / "b", "--model", MODEL, "-k", "test_sequence_batcher", "--fuzz-budget", "10",
                           "--timeout", "5", "-o", "timeout_func_only=true")
    out, _ = budgeted.communicate(timeout=180)
    assert budgeted.returncode == 0 and "1 passed" in out, out
