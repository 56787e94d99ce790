"""Session guard: no tritonserver or stub process started during the tests may outlive them."""
import subprocess
import time

import pytest

PATTERN = "bin/tritonserver|triton_python_backend_stub"


def triton_pids() -> set[int]:
    out = subprocess.run(["pgrep", "-f", PATTERN], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


def pytest_sessionstart(session):
    session.config._triton_pids_before = triton_pids()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    before = session.config._triton_pids_before
    deadline = time.monotonic() + 10  # stubs exit a moment after their server
    while (left := triton_pids() - before) and time.monotonic() < deadline:
        time.sleep(0.2)
    if left:
        cmdlines = subprocess.run(["ps", "-o", "pid,args", "-p", ",".join(map(str, left))],
                                  capture_output=True, text=True).stdout
        print(f"\nFAILED: Triton processes outlived the test session:\n{cmdlines}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
