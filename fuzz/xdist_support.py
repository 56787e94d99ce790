"""`pytest fuzz/ -n N` (pytest-xdist): N workers fuzz against one Triton.

- The controller starts the embedded Triton once (or uses --triton-url) and hands its address to
  every worker, which then treats it as an external server.
- Every test of one model (its corpus replays, seeds and fuzzing) goes to the same worker, in
  collection order (--dist loadgroup with one group per model). Ids alone could not keep two
  workers on one model apart: they would share its slots and backlog, which the reference model
  owns, and its inference statistics.
- Workers send their campaign results back, so the controller prints one summary and report.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from .files import atomic_write

WORKER_KEY = "triton_seqfuzz_server"


def is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def uses_xdist(config) -> bool:
    return not is_worker(config) and config.pluginmanager.hasplugin("xdist") and \
        config.getoption("dist", "no") != "no"


GROUP_KEY = "triton_seqfuzz_loadgroup"


RUN_KEY = "triton_seqfuzz_run_dir"


def configure(config) -> None:
    """Plain -n N means --dist load; make it loadgroup, on the controller and (xdist resets
    the option there) on every worker. The controller and its workers share a folder: its stop
    marker stops them together (a SIGTERM or Ctrl-C that reaches the controller alone stops the
    server the workers use), and workers leave their results there too (a stopped controller
    never gets the ones they send)."""
    from .harness.server import share_stop

    if uses_xdist(config):
        if config.getoption("dist") == "load":
            config.option.dist = "loadgroup"
        config._seqfuzz_run_dir = Path(tempfile.mkdtemp(prefix="triton-seqfuzz-run-"))
        share_stop(_stop_marker(config._seqfuzz_run_dir))
    if is_worker(config):
        if config.workerinput.get(GROUP_KEY):
            config.option.loadgroup = True
        if config.workerinput.get(RUN_KEY):
            share_stop(_stop_marker(config.workerinput[RUN_KEY]))


def _stop_marker(run_dir) -> Path:
    return Path(run_dir) / "stopped"


def worker_input(config, node) -> None:
    node.workerinput[GROUP_KEY] = config.getoption("dist") == "loadgroup"
    run_dir = getattr(config, "_seqfuzz_run_dir", None)
    node.workerinput[RUN_KEY] = str(run_dir) if run_dir else None


def save_worker_results(config, results: list) -> None:
    """A worker's campaign results (JSON values), left where its controller looks if they never came."""
    run_dir = config.workerinput.get(RUN_KEY)
    if not run_dir:
        return
    atomic_write(Path(run_dir) / f"results-{config.workerinput['workerid']}.json", json.dumps(results))


def unreceived_results(config, received: set) -> list:
    """Results the workers left behind but never sent (the controller was stopped meanwhile)."""
    run_dir = getattr(config, "_seqfuzz_run_dir", None)
    found = []
    for path in sorted(run_dir.glob("results-*.json")) if run_dir else ():
        if path.stem.removeprefix("results-") not in received:
            found.extend(json.loads(path.read_text()))
    return found


def unconfigure(config) -> None:
    run_dir = getattr(config, "_seqfuzz_run_dir", None)
    if run_dir is not None:
        shutil.rmtree(run_dir, ignore_errors=True)


def shares_the_controllers_server(config) -> bool:
    """Whether this is a worker that fuzzes on the server its controller started or was given."""
    return is_worker(config) and WORKER_KEY in config.workerinput


def server_for_worker(config):
    """The controller's server, seen from a worker (None outside xdist)."""
    if not shares_the_controllers_server(config):
        return None
    from .harness.server import ExternalTriton

    grpc_url, http_url = config.workerinput[WORKER_KEY]
    return ExternalTriton(grpc_url, http_url)


def controller_server(config, make_server):
    """Starts (once) the server every worker shares."""
    server = getattr(config, "_seqfuzz_shared_server", None)
    if server is None:
        factory = getattr(config, "_tmp_path_factory", None)
        if factory is None:
            class _Tmp:
                @staticmethod
                def mktemp(name):
                    return Path(tempfile.mkdtemp(prefix=f"{name}-"))
            factory = _Tmp()
        server = make_server(config, factory)
        config._seqfuzz_shared_server = server
    return server


def stop_controller_server(config) -> None:
    server = getattr(config, "_seqfuzz_shared_server", None)
    config._seqfuzz_shared_server = None
    if server is not None:
        server.stop()


def model_of(item) -> str | None:
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "fuzz_model_name" in params:
        return params["fuzz_model_name"]
    # An empty parameter set (--model naming a model without corpus entries or seeds) leaves
    # pytest's NOTSET placeholder in params: it belongs to no model.
    if "seed_case" in params:
        return getattr(params["seed_case"], "model", None)
    if "corpus_item" in params:
        entry = getattr(params["corpus_item"], "entry", None)
        return entry.model if entry is not None else None
    return None


def group_by_model(config, items) -> None:
    """Marks each model's tests as one xdist group. On a worker, also gives each nodeid its
    group suffix (what xdist's own hook does from the marks, but it may run before this one)."""
    for item in items:
        model = model_of(item)
        if model is not None:
            put_in_group(config, item, f"model-{model}")


def put_in_group(config, item, group: str) -> None:
    """Marks `item` as one of xdist group `group` (run on one worker, in collection order)."""
    item.add_marker(pytest.mark.xdist_group(group))
    if is_worker(config) and getattr(config.option, "loadgroup", False) and not item.nodeid.endswith(f"@{group}"):
        _set_nodeid(item, f"{item.nodeid}@{group}")


def _set_nodeid(item, nodeid: str) -> None:
    # xdist 3.8 sets item._nodeid, which pytest 9 no longer reads (nodeid comes from item._id),
    # so on pytest 9 loadgroup silently groups nothing.
    if hasattr(item, "_id"):
        from _pytest.nodeid import coerce_node_id

        item._id = coerce_node_id(nodeid)
    else:
        item._nodeid = nodeid
