"""The next run stops what a killed run left behind, and nothing else."""
import os
import signal
import subprocess
import sys
import time

import pytest

from fuzz import leftovers


@pytest.fixture
def registry(tmp_path, monkeypatch):
    monkeypatch.setenv(leftovers.ENV_DIR, str(tmp_path / "run"))
    return tmp_path / "run"


def group_leader():
    """A stand-in for a tritonserver: a process leading its own group."""
    return subprocess.Popen(["sleep", "300"], start_new_session=True)


def dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def write_entry(registry, pgid, owner, owner_started, leader_started):
    registry.mkdir(parents=True, exist_ok=True)
    (registry / f"{pgid}.group").write_text(f"{owner} {owner_started} {leader_started}\n")


def gone(proc, timeout=5.0) -> bool:
    try:
        proc.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


def test_a_group_whose_owner_died_is_stopped(registry):
    server = group_leader()
    try:
        owner = dead_pid()
        write_entry(registry, server.pid, owner, "12345", leftovers.start_time(server.pid))
        assert leftovers.reap(quiet=True) == [server.pid]
        assert gone(server) and server.returncode == -signal.SIGKILL
        assert not list(registry.iterdir())
    finally:
        server.kill()


def test_a_group_whose_owner_lives_is_left_alone(registry):
    server = group_leader()
    try:
        assert leftovers.register(server.pid) is not None  # owned by this (live) process
        assert leftovers.reap(quiet=True) == []
        assert server.poll() is None
        leftovers.unregister(server.pid)
        assert not list(registry.iterdir())
    finally:
        server.kill()
        server.wait()


def test_a_recycled_pid_is_never_killed(registry):
    server = group_leader()
    try:
        # Registered with another start time: the pid now belongs to some other process.
        write_entry(registry, server.pid, dead_pid(), "1", "1")
        assert leftovers.reap(quiet=True) == []
        assert server.poll() is None
        assert not list(registry.iterdir())  # the stale entry is dropped
    finally:
        server.kill()
        server.wait()


def test_an_embedded_server_registers_while_it_runs(registry, tmp_path):
    from fuzz.harness.server import EmbeddedTriton
    from modelgen import Variant, write_model

    write_model(Variant("slot", "direct", 1, 1), tmp_path / "m")
    with EmbeddedTriton(tmp_path / "m", workdir=tmp_path / "w") as server:
        pgid = server.process.pid
        assert (registry / f"{pgid}.group").read_text().split()[0] == str(os.getpid())
    assert not (registry / f"{pgid}.group").exists()


def test_a_killed_fuzzer_s_server_is_stopped_by_the_next_run(registry, tmp_path):
    """A fuzzer SIGKILLed while its server hangs on (PDEATHSIG disarmed here to play a server it
    cannot reach): the next EmbeddedTriton.start() stops that server's whole group."""
    from modelgen import Variant, write_model

    write_model(Variant("slot", "direct", 1, 1), tmp_path / "m")
    script = f"""
import fuzz.harness.server as s, sys, time
s._die_with_parent = lambda: None
server = s.EmbeddedTriton({str(tmp_path / 'm')!r}, workdir={str(tmp_path / 'w1')!r}).start()
print(server.process.pid, flush=True)
time.sleep(300)
"""
    fuzzer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, leftovers.ENV_DIR: str(registry)})
    try:
        pgid = int(fuzzer.stdout.readline())
        fuzzer.kill()
        fuzzer.wait()
        time.sleep(0.5)
        assert leftovers.start_time(pgid) is not None, "the orphan should still run before the next start"
        from fuzz.harness.server import EmbeddedTriton

        with EmbeddedTriton(tmp_path / "m", workdir=tmp_path / "w2"):
            deadline = time.monotonic() + 5
            while leftovers.start_time(pgid) is not None and time.monotonic() < deadline:
                time.sleep(0.1)  # killed; the zombie is reaped by init
        assert leftovers.start_time(pgid) is None or _is_zombie(pgid)
    finally:
        fuzzer.kill()
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, UnboundLocalError):
            pass


def _is_zombie(pid) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
