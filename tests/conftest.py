"""Session guard: no tritonserver or stub process this session started may outlive it.

Every server the harness starts leads its own process group (the stubs are in it too), so the
check looks at exactly those groups, not at other people's servers on the same machine.
"""
import subprocess
import time
from pathlib import Path

import pytest

from fuzz.harness import server


def group_pids(pgid: int) -> set[int]:
    out = subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


def triton_pids() -> set[int]:
    return {p for g in server.STARTED_GROUPS for p in group_pids(g)}


def pytest_collection_modifyitems(config, items):
    """Under xdist (CI runs `-n 2`), each test module runs on one worker, as --dist loadscope
    would (the plugin makes plain -n loadgroup, which keeps fuzz/'s tests of one model together):
    a module's servers (module-scoped fixtures) start once, not once per worker."""
    from fuzz import xdist_support

    for item in items:
        if item.path.is_relative_to(Path(__file__).parent):
            xdist_support.put_in_group(config, item, f"module-{item.path.stem}")


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


@pytest.fixture(scope="session")
def triton(request, tmp_path_factory, triton):
    """The Triton of tests/: the plugin's (`triton` of fuzz/plugin.py, shared with fuzz/), but
    under xdist (CI runs `-n 2`) a server of each worker's own, not the controller's that fuzz/'s
    campaigns share by model: these tests reload models, hold every slot and read a model's
    statistics, and another worker's tests on the same server would cross them."""
    from fuzz import xdist_support
    from fuzz.plugin import _make_server

    if not xdist_support.is_worker(request.config) or request.config.getoption("--triton-url"):
        yield triton
        return
    server = _make_server(request.config, tmp_path_factory, shared=False)
    try:
        yield server
    finally:
        server.stop()
