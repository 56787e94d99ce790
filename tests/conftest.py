"""Session guard: no tritonserver or stub process this session started may outlive it.

Every server the harness starts leads its own process group (the stubs are in it too), so the
check looks at exactly those groups, not at other people's servers on the same machine.
"""
import subprocess
import time

import pytest

from fuzz import server


def group_pids(pgid: int) -> set[int]:
    out = subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


def triton_pids() -> set[int]:
    return {p for g in server.STARTED_GROUPS for p in group_pids(g)}


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    deadline = time.monotonic() + 10  # stubs exit a moment after their server
    while (left := triton_pids()) and time.monotonic() < deadline:
        time.sleep(0.2)
    if left:
        cmdlines = subprocess.run(["ps", "-o", "pid,args", "-p", ",".join(map(str, left))],
                                  capture_output=True, text=True).stdout
        print(f"\nFAILED: Triton processes outlived the test session:\n{cmdlines}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
