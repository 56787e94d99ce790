"""pytest plugin: the options and the session-wide Triton that fuzz/ and tests/ share.

Loaded through the pytest11 entry point, so `pytest fuzz/` works from anywhere once the project
is installed.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import attrs
import pytest

from . import profiles  # noqa: F401  (registers ci / dev / long)
from . import leftovers, progress, xdist_support
from .checker.divergences import KNOWN, as_built_of
from .files import atomic_write
from .generator.machine import FuzzSettings
from .harness.releases import triton_version_of
from .harness.server import (EmbeddedTriton, ExternalTriton, InstallNotFound, ServerStartError, TritonInstall,
    explicit_control)


def pytest_addoption(parser):
    group = parser.getgroup("triton-seqfuzz", "Triton sequence-batcher fuzzing")
    group.addoption("--triton-url", metavar="HOST:PORT",
                    help="gRPC address of an external Triton to test instead of starting the embedded one")
    group.addoption("--triton-http-url", metavar="HOST:PORT",
                    help="HTTP address of that external Triton (HTTP steps are skipped without it)")
    group.addoption("--triton-install", metavar="DIR",
                    help="site-packages folder of another nvidia-pytriton (e.g. from `pip install --target "
                         "DIR nvidia-pytriton==0.5.0`) whose tritonserver to start instead of the installed one")
    group.addoption("--models-dir", metavar="DIR",
                    help="model repository for the embedded Triton (default: a fresh `python -m modelgen` one)")
    group.addoption("--model", action="append", default=[], metavar="NAME",
                    help="fuzz this model (repeatable); any loaded model that follows the accumulator contract. "
                         "Default: every model in the repository")
    group.addoption("--fuzz-budget", type=float, metavar="SECONDS",
                    help="keep fuzzing each model with fresh examples until this many seconds have passed")
    group.addoption("--fuzz-report", metavar="PATH", help="write the campaign's JSON report here")
    group.addoption("--corpus-dir", metavar="DIR",
                    help="corpus of shrunk failing programs: replayed before fuzzing (test_corpus), and where "
                         "new failures are written (default: corpus/ under pytest's rootdir)")
    group.addoption("--corpus-write", dest="corpus_write", action="store_true", default=True,
                    help="write each new failure the fuzzer finds to the corpus, with a reproducer (default)")
    group.addoption("--no-corpus-write", dest="corpus_write", action="store_false",
                    help="do not write failures to the corpus (e.g. when fuzzing someone else's server)")
    group.addoption("--nemesis", metavar="NAMES", default="",
                    help="faults the fuzzer may draw, comma-separated, or all: slow (adds slow models to the "
                         "generated repository), cut, stall (a TCP fault proxy before some clients), restart, "
                         "reload, full_batch (restart with TRITONSERVER_DELAY_SCHEDULER), which three need "
                         "the embedded server; deadlines (unary gRPC calls given up in flight). Default: none")
    group.addoption("--known-divergences", choices=("steer", "find"), default="steer",
                    help="steer: keep the guards around the build's known divergences (fuzz/checker/divergences.py); "
                         "find: turn them off, so that the fuzzer meets them as bugs nobody had seen (each found "
                         "is still named). Default: steer")
    group.addoption("--fuzz-progress", type=float, metavar="SECONDS",
                    help="a progress line per model this often while it is fuzzed (default: 10 on a terminal, "
                         "60 in a log or a pipe; 0: none)")
    group.addoption("--fuzz-db", metavar="redis://HOST:PORT/DB|dir:PATH",
                    help="Hypothesis example database shared between machines or workers (see fuzz/db.py)")


@attrs.frozen
class FuzzOptions:
    budget_s: float | None
    fuzz_settings: FuzzSettings
    corpus_dir: Path = Path("corpus")
    corpus_write: bool = True
    database: object = None  # a Hypothesis ExampleDatabase from --fuzz-db, or None (the profile's)

    def hypothesis_settings(self):
        """The active profile, with the --fuzz-db database if one was given."""
        from hypothesis import settings

        return settings(database=self.database) if self.database is not None else settings()


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Bad options and folders fail here, in one line and with exit status 4, before any server
    starts or Hypothesis's own plugin meets them."""
    _check_profile(config.getoption("--hypothesis-profile", None))
    models_dir, url = config.getoption("--models-dir", None), config.getoption("--triton-url", None)
    if models_dir is not None or url:
        # Listed once here; collection then reuses the list (xdist workers, which skip this
        # hook, list it themselves).
        found = config._fuzz_listed_models = _models_at(url) if url else _models_in(models_dir)
    else:
        from modelgen import slow_variants

        found = [v.name for v in _default_variants() + slow_variants()]
    _check_corpus_dir(config)
    unknown = [n for n in config.getoption("--model", None) or [] if n not in found]
    if unknown:
        where = (f"ready at --triton-url {url}" if url else
                 f"in --models-dir {models_dir}" if models_dir is not None else "in the generated repository")
        raise pytest.UsageError(f"--model {', '.join(unknown)}: no such model {where}; there are: {', '.join(found)}")


def _check_corpus_dir(config) -> None:
    """A corpus that cannot be written fails now, not after a whole campaign (when written to)."""
    if not config.getoption("corpus_write", True):
        return
    path = corpus_dir(config)
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is not None and existing.is_dir() and os.access(existing, os.W_OK | os.X_OK):
        return
    why = ("cannot be created: nothing above it exists" if existing is None else
           ("is not writable" if existing.is_dir() else "is not a folder") if existing == path else
           f"cannot be created in {existing}")
    raise pytest.UsageError(f"--corpus-dir {path} {why}; give a writable --corpus-dir, or --no-corpus-write "
                            f"to fuzz without saving findings")


def _check_profile(name):
    if not name:
        return
    from hypothesis import settings
    from hypothesis.errors import InvalidArgument

    try:
        settings.get_profile(name)
    except InvalidArgument:
        raise pytest.UsageError(f"--hypothesis-profile {name}: no such profile; the fuzzer's are ci (5 x 20 steps, "
                                f"derandomized), dev (10 x 100) and long (5000 x 80)") from None


def _models_at(url: str) -> list:
    """The READY models of the Triton at --triton-url."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)
    try:
        index = client.get_model_repository_index(client_timeout=10).models
        ready = sorted(m.name for m in index if m.state == "READY")
        configs = {name: client.get_model_config(name, client_timeout=10).config for name in ready}
    except Exception as err:
        message = err.message() if callable(getattr(err, "message", None)) else str(err)
        raise pytest.UsageError(f"--triton-url {url}: cannot list its models ({message}); is a Triton serving "
                                f"gRPC there?") from None
    return _without_steps(ready, configs.get)


def _without_steps(names: list, config_of) -> list:
    """The models but those that are an ensemble's steps: their requests come through the
    ensemble, which is fuzzed instead (two campaigns on one model would share its slots)."""
    from .spec import ensemble_steps

    steps = {step for name in names for step in ensemble_steps(config_of(name))}
    return [n for n in names if n not in steps]


def _models_in(models_dir) -> list:
    """The model folders (with a config.pbtxt) of a repository given by --models-dir."""
    path = Path(models_dir)
    if not path.is_dir():
        raise pytest.UsageError(f"--models-dir {models_dir}: no such folder")
    names = sorted(p.name for p in path.iterdir() if (p / "config.pbtxt").is_file())
    if names:
        names = _without_steps(names, lambda name: _parsed(path / name / "config.pbtxt"))
    if not names:
        raise pytest.UsageError(f"--models-dir {models_dir} holds no model (a folder with a config.pbtxt); "
                                f"write the default set there with: python -m modelgen --models-dir {models_dir}")
    return names


def _parsed(config_file: Path):
    """A config.pbtxt as a ModelConfig; one that does not parse has no ensemble steps (the
    server will say what is wrong with it)."""
    from google.protobuf.text_format import ParseError
    from tritonclient.grpc import model_config_pb2 as mc

    from modelgen import parse

    try:
        return parse(config_file.read_text())
    except (ParseError, OSError, UnicodeDecodeError):
        return mc.ModelConfig()


_FULL_TRACE = [False]  # --full-trace: a Ctrl-C's traceback is wanted whole


def pytest_configure(config):
    from hypothesis import settings

    _FULL_TRACE[0] = bool(config.getoption("fulltrace", False))

    if not config.getoption("--hypothesis-profile", None):
        settings.load_profile("ci" if os.environ.get("CI") else "dev")
    config._fuzz_results = []
    config._fuzz_received_from = set()  # xdist workers whose results came
    config._fuzz_started = time.monotonic()
    budget = config.getoption("--fuzz-budget")
    if budget is not None and not (0 < budget < float("inf")):  # nan fails both comparisons
        raise pytest.UsageError(f"--fuzz-budget must be a positive, finite number of seconds, got {budget}")
    every = config.getoption("--fuzz-progress", None)
    if every is not None and not (0 <= every < float("inf")):
        raise pytest.UsageError(f"--fuzz-progress must be 0 (no progress lines) or a finite number of seconds, "
                                f"got {every}")
    progress.keep_console(every)  # before any test's output is captured
    if not xdist_support.is_worker(config):
        # Said here, before pytest captures anything: a notice from the server's start-up would
        # only show in a failed test's captured output.
        leftovers.reap()
    config._fuzz_corpus_written = []
    from . import nemesis

    try:
        config._fuzz_nemesis = nemesis.parse(config.getoption("--nemesis", "") or "")
    except ValueError as err:
        raise pytest.UsageError(f"--nemesis: {err}") from None
    server_faults = sorted(config._fuzz_nemesis & set(nemesis.SERVER_FAULTS))
    if server_faults and (config.getoption("--triton-url", None) or config.getoption("numprocesses", None)):
        raise pytest.UsageError(f"--nemesis {','.join(server_faults)} restarts the server or reloads models: it "
                                "needs the embedded server, without --triton-url and without -n")
    xdist_support.configure(config)
    config._fuzz_db = None
    if config.getoption("--fuzz-db", None):
        from .db import DatabaseSpecError, open_database

        try:
            config._fuzz_db = open_database(config.getoption("--fuzz-db"))
        except DatabaseSpecError as err:
            raise pytest.UsageError(str(err)) from None


def reproduction(config, server, entry_path: Path) -> str:
    """The two commands that replay a written corpus entry: through pytest (with the options
    that chose this run's server and corpus) and standalone."""
    opts = []
    for opt in ("--triton-url", "--triton-http-url", "--models-dir", "--triton-install", "--corpus-dir"):
        value = config.getoption(opt, None)
        if value:
            opts += [opt, str(value)]
    http = f" --http-url {server.http_url}" if getattr(server, "http_url", None) else ""
    return (f"reproduce: pytest fuzz/ -k '{entry_path.stem}'{''.join(' ' + o for o in opts)}\n"
            f"standalone: python {entry_path.with_suffix('.py')} --url {server.grpc_url}{http}")


def corpus_dir(config) -> Path:
    given = config.getoption("--corpus-dir", None)
    return Path(given) if given else Path(config.rootpath) / "corpus"


# Corpus replays first (a known regression fails fast), then the regression seeds, then fuzzing.
_ORDER = {"test_corpus": 0, "test_seed": 1}


# What a campaign may take past its budget: its last round, the shrink, the teardown.
PAST_BUDGET_S = 900.0


@pytest.hookimpl(tryfirst=True)  # the groups must be marked before xdist reads them
def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda item: _ORDER.get(getattr(item, "originalname", ""), 2))
    xdist_support.group_by_model(config, items)
    budget = config.getoption("--fuzz-budget", None)
    if budget is not None:  # pytest-timeout's limit must not end a campaign its budget allows
        for item in items:
            if getattr(item, "originalname", "") == "test_sequence_batcher":
                item.add_marker(pytest.mark.timeout(budget + PAST_BUDGET_S))


@pytest.hookimpl(hookwrapper=True, optionalhook=True)
def pytest_timeout_set_timer(item, settings):
    """pytest-timeout's alarm is a stop like SIGTERM: what a campaign sees after it (an example
    cut in the middle, its teardown) is not a finding."""
    yield
    import signal

    from .harness.server import mark_stopped

    current = signal.getsignal(signal.SIGALRM)
    if callable(current) and not getattr(current, "_seqfuzz", False):
        def on_alarm(signum, frame):
            mark_stopped(f"pytest-timeout: {item.nodeid} ran past {settings.timeout:.0f} s")
            current(signum, frame)
        on_alarm._seqfuzz = True
        signal.signal(signal.SIGALRM, on_alarm)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A broken promise is reported by its own message (what was sent, what came back, what was
    expected, the program): the traceback through Hypothesis and the engine says nothing more."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.excinfo is not None:
        from .campaign import violation_report

        text = violation_report(call.excinfo.value)
        if text is not None:
            report.longrepr = text
        server = item.funcargs.get("triton") if hasattr(item, "funcargs") else None
        death = _death(server) if server is not None else None
        if death is not None:
            # Like -x: each later test could only report the same death again. How it died (its
            # log's last lines) goes with the report, unless the report says it already (a
            # campaign's server_alive does): a test's own error may only say "refused".
            if death.partition("\n")[0] not in str(report.longrepr):
                report.sections.append(("the Triton under test died", death))
            item.session.shouldfail = "the Triton under test died; the run stops here"


def _death(server) -> str | None:
    """Why the server is dead (with its log's last lines, where it has a log); None while it lives."""
    try:
        server.check_alive()
    except Exception as err:
        return str(err)
    return None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist controller: every worker gets the one server's address."""
    server = xdist_support.controller_server(node.config, _make_server)
    node.workerinput[xdist_support.WORKER_KEY] = (server.grpc_url, server.http_url)
    xdist_support.worker_input(node.config, node)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist controller: collects a worker's campaign results and corpus writes for the summary."""
    from .campaign import ModelResult

    out = getattr(node, "workeroutput", {})
    if "fuzz_results" in out:
        node.config._fuzz_received_from.add(node.workerinput["workerid"])
    node.config._fuzz_results.extend(ModelResult.from_json(d) for d in out.get("fuzz_results", ()))
    node.config._fuzz_corpus_written.extend((Path(p), w) for p, w in out.get("corpus_written", ()))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if not xdist_support.is_worker(config):
        xdist_support.stop_controller_server(config)  # before tests/conftest.py's leftover check
    else:
        config.workeroutput["fuzz_results"] = [r.to_json() for r in config._fuzz_results]
        xdist_support.save_worker_results(config, config.workeroutput["fuzz_results"])
        config.workeroutput["corpus_written"] = [(str(p), w) for p, w in config._fuzz_corpus_written]


@pytest.hookimpl(tryfirst=True)
def pytest_keyboard_interrupt(excinfo):
    """pytest renders every frame of a Ctrl-C's traceback (each frame's file parsed again) and
    of the exceptions chained to it, to print one line: seconds on a loaded machine (a third of a
    stop's time), while the user waits. Unless --full-trace asks for it all, the frame the stop
    landed in is what it gets."""
    if _FULL_TRACE[0] or not isinstance(excinfo.value, KeyboardInterrupt):  # pytest.exit comes here too
        return
    entries = excinfo.traceback
    shown = [i for i, e in enumerate(entries) if not e.ishidden(excinfo)]
    excinfo.traceback = entries[shown[-1]:] if shown else entries
    excinfo.value.__cause__, excinfo.value.__suppress_context__ = None, True


def pytest_unconfigure(config):
    xdist_support.stop_controller_server(config)
    xdist_support.unconfigure(config)


def _model_names(config) -> list[str]:
    names = config.getoption("--model")
    if names:
        return names
    listed = getattr(config, "_fuzz_listed_models", None)
    if listed is not None:
        return listed
    url = config.getoption("--triton-url")
    if url:
        return _models_at(url)
    models_dir = config.getoption("--models-dir")
    if models_dir:
        return _models_in(models_dir)
    return [v.name for v in _generated_variants(config)]


def _default_variants() -> list:
    """modelgen's default set, the native models (and the split ensemble) only where a C compiler can build their
    backend (native_unavailable says why not, in the report header)."""
    from modelgen import default_variants

    return default_variants(native=native_unavailable() is None)


def native_unavailable() -> str | None:
    from modelgen.native import unavailable_reason

    return unavailable_reason()


def _wanted_variants(config) -> list:
    """The default set, and the slow models when the slow nemesis is on, before the build has a say."""
    from modelgen import slow_variants

    return _default_variants() + (slow_variants() if "slow" in config._fuzz_nemesis else [])


def _install_version(config) -> str | None:
    """The Triton version of the --triton-install build (None: the installed one, which loads all)."""
    install_dir = config.getoption("--triton-install")
    return triton_version_of(install_dir) if install_dir else None


def _refused_by_build(config) -> list:
    """(model, why) for each default model the --triton-install build would refuse."""
    from modelgen import left_out_on

    return [(v.name, why) for v, why in left_out_on(_wanted_variants(config), _install_version(config))]


def _generated_variants(config) -> list:
    """The models of the repository the embedded server gets when no --models-dir is given: an
    older build refuses some configs, and with them the whole server (Variant.needs)."""
    from modelgen import loadable_on

    return loadable_on(_wanted_variants(config), _install_version(config))


def pytest_generate_tests(metafunc):
    if "fuzz_model_name" in metafunc.fixturenames:
        names = _model_names(metafunc.config)
        metafunc.parametrize("fuzz_model_name", names, ids=names)
    if "corpus_item" in metafunc.fixturenames:
        from .corpus import load_dir

        only = set(metafunc.config.getoption("--model"))
        items = [i for i in load_dir(corpus_dir(metafunc.config))
                 if not only or i.entry is None or i.entry.model in only]
        metafunc.parametrize("corpus_item", items, ids=[i.name for i in items])
    if "seed_case" in metafunc.fixturenames:
        from .seeds import cases

        chosen = cases(_model_names(metafunc.config))
        metafunc.parametrize("seed_case", chosen, ids=[c.id for c in chosen])


@pytest.fixture(scope="session")
def fuzz_options(request) -> FuzzOptions:
    config = request.config
    return FuzzOptions(budget_s=config.getoption("--fuzz-budget"),
                       fuzz_settings=FuzzSettings(nemesis=config._fuzz_nemesis,
                                                  find_known=({d.key for d in KNOWN} if config.getoption("--known-divergences") == "find"
                                                              else ())),
                       corpus_dir=corpus_dir(config), corpus_write=config.getoption("corpus_write"),
                       database=config._fuzz_db)


@pytest.fixture(scope="session")
def corpus_written(request) -> list:
    """(path, written) of every failure this session recorded, for the summary."""
    return request.config._fuzz_corpus_written


@pytest.fixture(scope="session")
def fuzz_results(request) -> list:
    return request.config._fuzz_results


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if xdist_support.is_worker(config):
        return  # the controller says it all, once
    from .campaign import ModelResult

    tr = terminalreporter
    config._fuzz_results.extend(ModelResult.from_json(d) for d in
                                xdist_support.unreceived_results(config, config._fuzz_received_from))
    for path, written in getattr(config, "_fuzz_corpus_written", []):
        if written:
            tr.write_line(f"corpus: wrote {path} and its reproducer {path.with_suffix('.py')}")
        else:
            tr.write_line(f"corpus: finding already held by {path}")
    results = getattr(config, "_fuzz_results", [])
    from .harness.server import stop_reason

    interrupted = stop_reason() or next((r.interrupted for r in results if r.interrupted), "") or (
        "interrupted" if exitstatus == pytest.ExitCode.INTERRUPTED else "")
    if not results:
        if interrupted:  # stopped before any model was fuzzed: the record says so
            tr.section("fuzz campaign (interrupted)")
            tr.write_line(f"interrupted: {interrupted}; no model was fuzzed")
            _write_report(config, tr, results, interrupted)
        return
    tr.section("fuzz campaign" + (" (interrupted)" if interrupted else ""))
    if interrupted:
        tr.write_line(f"interrupted: {interrupted}; what follows is what the run did until then")
    wall = sum(r.wall_s for r in results)
    requests = sum(r.requests for r in results)
    tr.write_line(f"Triton {results[0].triton_version}: {len(results)} model(s), "
                  f"{sum(r.examples for r in results)} examples, {sum(r.steps for r in results)} steps, "
                  f"{requests} requests in {wall:.1f} s ({requests / wall if wall else 0:.0f} requests/s)")
    by_invariant: dict = {}
    for r in results:
        for f in r.failures:
            tag = f.invariant + (" (expected divergence)" if f.expected_divergence else "")
            by_invariant[tag] = by_invariant.get(tag, 0) + 1
        line = (f"  {r.verdict:<20} {r.model:<45} {r.examples:>4} ex {r.steps:>5} steps {r.requests:>5} req "
                f"{r.wall_s:>7.1f} s")
        tr.write_line(line)
        tr.write_line(f"      {r.depth.line()}")
        if r.coverage.goals:
            tr.write_line(f"      {r.coverage.line()}")
        for f in r.failures:
            what = f"known divergence {f.expected_divergence}" if f.expected_divergence else "FAILURE"
            tr.write_line(f"      {what}: [{f.invariant}] {f.detail} (first seen after {f.seconds_to_first_failure:.1f} s, "
                          f"shrunk to {f.shrunk_steps} steps in {f.shrink_s:.1f} s)")
        for key in r.accepted:
            tr.write_line(f"      fuzzed on past {key}, taking it as built: {as_built_of(key)}")
        if r.faults:
            took = dict(r.fault_s)
            tr.write_line("      faults struck (--nemesis, and give_up_beside's give_up): " + ", ".join(
                f"{name} x{count}" + (f" ({took[name]:.1f} s)" if name in took else "") for name, count in r.faults)
                + (f"; server faults took {sum(took.values()) / r.wall_s:.0%} of the wall time" if took and r.wall_s else ""))
        if r.wait_s >= 0.1 and r.wall_s:
            tr.write_line(f"      waiting out idle windows at the ends of examples: {r.wait_s:.1f} s, "
                          f"{r.wait_s / r.wall_s:.0%} of the wall time")
        if r.stuck_s >= 0.1 and r.wall_s:
            tr.write_line(f"      every client waiting mid-example for windows to free slots: "
                          f"{r.stuck_s:.1f} s, {r.stuck_s / r.wall_s:.0%} of the wall time")
        # Said beside a failure only: corpus replays and seeds run first, so nearly every model of
        # the main job had run requests before its campaign.
        if r.reloaded_first and r.failures:
            tr.write_line(f"      the model had run {r.served_before} inference(s) before the campaign: reloaded "
                          f"first, so every failure's history is the campaign's")
        elif r.served_before and any(f.flaky for f in r.failures):
            tr.write_line(f"      the model had run {r.served_before} inference(s) before the campaign and could not "
                          f"be reloaded (that needs the embedded server this run started, not --triton-url or an "
                          f"xdist worker's): a failure not replayable may need what they left")
        if r.fresh_rounds:
            tr.write_line(f"      {r.fresh_rounds} round(s) of examples after the first began on a freshly reloaded "
                          f"copy of the model (what it kept of earlier rounds cannot hide a bug for good)")
        if r.clean_examples_idled:  # a clean round's point missed: said, as a gap is
            tr.write_line(f"      {r.clean_examples_idled} of {r.clean_examples} clean example(s) had a sequence end "
                          f"with no END all the same (a client idle past its window): what the model keeps for it "
                          f"may hide a bug for the rest of the copy's life")
        if r.unsteady_rounds:
            tr.write_line(f"      {r.unsteady_rounds} round(s) of examples cut short: Hypothesis saw the same choices "
                          f"draw differently (the server answered differently), no promise broken")
        if r.slow_answers:
            tr.write_line(f"      {r.slow_answers} answer(s) came after the {r.prompt_s:g} s bound "
                          f"(the slowest after {r.slowest_answer_s:g} s): a starved machine, not hangs; the bound "
                          f"widens with the latency measured")
        for why in r.left_out:
            tr.write_line(f"      not fuzzed: {why}")
    guarded: dict = {}  # a build's guards once, with how many models each kept safe
    for r in results:
        for g in r.guards:
            guarded[g] = guarded.get(g, 0) + 1
    for g, n in guarded.items():
        tr.write_line(f"guard ({n} of {len(results)} models): {g} (steering around a known divergence of this build)")
    if by_invariant:
        tr.write_line("failures by invariant: " + ", ".join(f"{k}: {v}" for k, v in sorted(by_invariant.items())))
    _write_report(config, tr, results, interrupted)


def _write_report(config, tr, results, interrupted: str) -> None:
    path = config.getoption("--fuzz-report")
    if not path:
        return
    report = {"triton_version": results[0].triton_version if results else None, "interrupted": interrupted,
              "models": [r.to_json() for r in results],
              "totals": {"models": len(results), "examples": sum(r.examples for r in results),
                         "steps": sum(r.steps for r in results), "requests": sum(r.requests for r in results),
                         "wall_s": round(sum(r.wall_s for r in results), 3)}}
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, json.dumps(report, indent=2))
    tr.write_line(f"JSON report: {target}")


def _make_server(config, tmp_path_factory, shared: bool = True):
    """The session's server; one that cannot start ends the run with why (not an error per test).
    shared=False: on an xdist worker, one of its own instead of the controller's."""
    try:
        return _start_server(config, tmp_path_factory, shared)
    except (InstallNotFound, ServerStartError) as err:
        given = [o for o in ("--models-dir", "--triton-install") if config.getoption(o, None)]
        blame = f" (check {' and '.join(given)})" if given else ""
        reason, _, log = str(err).partition("\n")
        if log:  # once, before the one-line verdict (xdist repeats that line)
            print(log, file=progress.console(), flush=True)
        pytest.exit(f"the embedded Triton did not start{blame}: {reason}",
                    returncode=pytest.ExitCode.USAGE_ERROR if given else pytest.ExitCode.INTERNAL_ERROR)


def _start_server(config, tmp_path_factory, shared: bool = True):
    controllers = xdist_support.server_for_worker(config) if shared else None
    if controllers is not None:
        return controllers
    url = config.getoption("--triton-url")
    http_url = config.getoption("--triton-http-url")
    if url:
        return ExternalTriton(url, http_url)
    if http_url:
        raise pytest.UsageError("--triton-http-url needs --triton-url (the embedded server has its own)")
    models_dir = config.getoption("--models-dir")
    if models_dir is None:
        from modelgen import write_repository

        models_dir = tmp_path_factory.mktemp("models")
        write_repository(_generated_variants(config), models_dir)
    return _embedded(config, models_dir, tmp_path_factory.mktemp("triton")).start()


def _embedded(config, models_dir, workdir) -> EmbeddedTriton:
    """An embedded server (not started) of `models_dir`, on the --triton-install build if given.
    Explicit model control, every model loaded at start: the nemesis's reload and a failure's
    shrinking from a fresh model (fuzz/corpus/isolate.py) load new copies through the repository API."""
    install_dir = config.getoption("--triton-install")
    return EmbeddedTriton(models_dir, install=TritonInstall.find(install_dir) if install_dir else None,
                          workdir=workdir, **explicit_control(models_dir))


@pytest.fixture(scope="session")
def triton(request, tmp_path_factory):
    """The Triton under test for the whole session: started once, stopped at the end."""
    server = _make_server(request.config, tmp_path_factory)
    try:
        yield server
    finally:
        server.stop()


class LoneServers:
    """Servers of their own for the models that a known divergence of this build kills a shared
    server beside (KnownDivergence.alone: iterative-beside-backlog-crash), where this run's
    workers fuzz two models at a time on the one server it started: that death would fail the
    other worker's model too. Started on first use, one per model, stopped at the session's end."""

    def __init__(self, config, tmp_path_factory):
        self.config, self.tmp = config, tmp_path_factory
        self.servers: dict[str, EmbeddedTriton | None] = {}  # None: the shared one

    def for_model(self, shared, model: str):
        """The server `model`'s tests run on: its own where it needs one, else `shared`."""
        if model not in self.servers:
            variant = self._needs_own(shared, model)
            self.servers[model] = None if variant is None else self._start(shared, model, variant)
        return self.servers[model] or shared

    def _start(self, shared, model: str, variant) -> EmbeddedTriton:
        from modelgen import write_repository

        models_dir = self.tmp.mktemp(f"models-{model}")
        write_repository([variant], models_dir)
        print(f"\n{model}: fuzzed on a server of its own (known divergence "
              f"{', '.join(d.key for d in KNOWN if d.alone and d.applies(variant, shared.version))} kills a "
              f"server it shares with other models' traffic)", file=progress.console(), flush=True)
        server = _embedded(self.config, models_dir, self.tmp.mktemp(f"triton-{model}"))
        try:
            return server.start()
        except BaseException:  # a start cut short (not only ServerStartError) leaves no process
            server.stop()
            raise

    def _needs_own(self, shared, model: str):
        """`model`'s Variant where it needs a server of its own here, else None: only on a worker
        of a run that started the server its workers share (an external one, or one given its
        models, is the user's to arrange)."""
        config = self.config
        if config.getoption("--triton-url") or config.getoption("--models-dir") or \
                not xdist_support.shares_the_controllers_server(config):
            return None
        variant = next((v for v in _generated_variants(config) if v.name == model), None)
        version = getattr(shared, "version", None)
        if variant is None or not any(d.alone and d.applies(variant, version) for d in KNOWN):
            return None
        return variant

    def stop(self) -> None:
        for server in self.servers.values():
            if server is not None:
                server.stop()


@pytest.fixture(scope="session")
def lone_servers(request, tmp_path_factory):
    servers = LoneServers(request.config, tmp_path_factory)
    try:
        yield servers
    finally:
        servers.stop()


def pytest_report_header(config):
    url = config.getoption("--triton-url")
    if url:
        return f"triton: external at {url}"
    lines = ["triton: embedded (nvidia-pytriton)"]
    if config.getoption("--models-dir") is None:
        reason = native_unavailable()
        if reason:
            lines.append(f"native implicit-state models and the split ensemble left out: {reason}")
        lines += [f"left out on this build: {name} ({why})" for name, why in _refused_by_build(config)]
    return lines
