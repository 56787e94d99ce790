"""Faults are steps like any other: a program with a nemesis fault keeps it in its corpus entry,
and replaying the entry strikes the fault again (restart and reload; a cut or a full batch ends
the replay with ReplayDrift)."""
import subprocess
import sys
import warnings

import attrs
import pytest
from hypothesis import HealthCheck, settings

from fuzz import corpus, nemesis
from fuzz.corpus import isolate
from fuzz.campaign import fuzz_model
from fuzz.harness.client import GrpcClient, Request
from fuzz.harness.engine import Fault, FuzzSettings, Kind, StepRecord
from fuzz.corpus.fresh import FreshCopies, renamed
from fuzz.corpus.isolate import RELOAD
from fuzz.values import Answer
from fuzz.checker.invariants import InvariantViolation
from fuzz.corpus.replay import ReplayNeeds, replay
from fuzz.harness.server import EmbeddedTriton, ExternalTriton
from fuzz.spec import ModelSpec

from .broken_models import FIRST_AFTER_LOAD, model_name, write_broken_repository

MODEL = model_name(FIRST_AFTER_LOAD)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    repo = tmp_path_factory.mktemp("fault-models")
    write_broken_repository(repo, [FIRST_AFTER_LOAD])
    with EmbeddedTriton(repo, workdir=tmp_path_factory.mktemp("fault-triton"), model_control_mode="explicit",
                        load_models=[MODEL]) as s:
        yield s


def warm(server):
    """The bug's one wrong answer, spent: from here only a reload or a restart shows it. A server
    that died under an earlier campaign (a crash of the build, which that campaign reported as
    server_alive) is started again first, so that one crash does not fail every later test here."""
    if isinstance(server, EmbeddedTriton) and not server.running:
        server.restart()
    GrpcClient(server.grpc_url).infer(Request(MODEL, 999, 1, start=True, end=True))


@pytest.mark.parametrize("fault", [Fault("reload"), Fault("restart", graceful=False), Fault("restart", graceful=True)],
                         ids=["reload", "restart (SIGKILL)", "restart (SIGTERM)"])
def test_a_fault_in_a_corpus_entry_is_struck_again_by_its_replay(server, fault, tmp_path):
    # The program a nemesis failure on this model shrinks to: the fault, then a START. Written
    # and read back, its replay strikes the fault and breaks the same promise on a warmed model;
    # the same program without the fault keeps it.
    spec = ModelSpec.fetch(server, MODEL)
    steps = (StepRecord(1, None, f"the {fault.name} nemesis", kind=Kind.FAULT, fault=fault),
             StepRecord(2, 0, "start", Request(MODEL, 7, 15, start=True), via="stream",
                        expected="OUTPUT=15", got="OUTPUT=16", expect=Answer(15)))
    entry = corpus.load(corpus.write(tmp_path, corpus.make_entry(spec, server.version, "sums_match",
                                                                 "wrong running sum", steps)))
    assert entry.steps[0].fault == fault
    warm(server)
    with pytest.raises(InvariantViolation) as again:
        replay(server, entry)
    assert again.value.invariant == "sums_match" and "got      OUTPUT=16" in str(again.value), again.value
    assert any(s.kind is Kind.FAULT and s.fault == fault for s in again.value.program)
    warm(server)
    replay(server, attrs.evolve(entry, steps=entry.steps[1:]))


def test_a_fault_the_server_cannot_take_is_not_replayed_there(server):
    spec = ModelSpec.fetch(server, MODEL)
    steps = [StepRecord(1, None, "the server restarts (SIGKILL)", kind=Kind.FAULT, fault=Fault("restart"))]
    entry = corpus.make_entry(spec, server.version, "sums_match", "test", steps)
    with pytest.raises(ReplayNeeds, match="needs the embedded server"):
        replay(ExternalTriton(server.grpc_url, server.http_url), entry)


def test_the_standalone_reproducer_reloads_the_model_where_its_program_starts_from_a_fresh_one(server, tmp_path):
    """A program shrunk from a fresh model (fuzz/corpus/isolate.py) starts with the reload; the standalone
    reproducer strikes it through the repository API, so the bug shows on a warmed model too."""
    spec = ModelSpec.fetch(server, MODEL)
    steps = (RELOAD, StepRecord(2, 0, "start", Request(MODEL, 7, 15, start=True), via="stream",
                                expected="OUTPUT=15", got="OUTPUT=16", expect=Answer(15)))
    script = corpus.write(tmp_path, corpus.make_entry(spec, server.version, "sums_match", "wrong running sum",
                                                      steps)).with_suffix(".py")
    warm(server)
    out = subprocess.run([sys.executable, str(script), "--url", server.grpc_url], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "(reloaded through the repository API)" in out.stdout
    assert "expected OUTPUT=15\n       got      OUTPUT=16   <-- DIVERGES" in out.stdout, out.stdout


# Seeds each fault's campaign tries in turn: in a scan of seeds 1-8 each found the bug, and these
# fastest with a failure that replays (full_batch seeds 1 and 6 found one inside the held batch).
# With the swarm keeping rules on (fuzz/generator/swarm.py), full_batch's 2, 3, 4 and 7 struck
# nothing in a clean-clone CI, and the seeds after them went first. A campaign this small keeps no
# rules since (campaign.keeps_rules); with this order the test took 30 s here.
SEEDS = {"reload": (1, 2, 3), "restart": (4, 5, 8), "full_batch": (5, 6, 8, 9, 10, 11, 12, 1, 2, 3, 4, 7)}


@pytest.mark.parametrize("fault", ["reload", "restart", "full_batch"])
def test_a_failure_the_fuzzer_finds_under_a_server_fault_replays_from_its_corpus_entry(server, tmp_path, fault):
    """Found by fuzzing with `--nemesis FAULT` on a model whose bug shows only after a load: the
    program it keeps holds a fault that loads the model again (the nemesis's own, or the reload
    its shrinking from a fresh model started with), and its corpus entry breaks the same promise
    when replayed on a warmed model."""
    # Short examples, and seeds until the fault has struck and shown the bug: which seed draws the
    # fault where it can strike (no client waiting) changes with the rules and the server's timing
    # (a derandomized run stopped striking full_batch once the rules' source changed).
    budget = settings(max_examples=40, stateful_step_count=6, derandomize=False, database=None, deadline=None,
                      suppress_health_check=list(HealthCheck))
    # A failure inside the held batch itself keeps the full_batch in its program, which a replay
    # cannot strike from a fresh model (ReplayDrift): it is reported flaky, and the next seed runs.
    for seed in SEEDS[fault]:
        # Warmed for each seed: a seed before may have left the model freshly loaded (a flaky
        # failure's shrink reloads it), and the bug would show without the fault.
        warm(server)
        # (fresh_start off: the campaign would reload the warmed model first, and its bug would
        # show without the fault)
        result, error = fuzz_model(server, MODEL, budget, fuzz_settings=FuzzSettings(nemesis={fault}), seed=seed,
                                   fresh_start=False)
        for died in (f for f in result.failures if f.invariant == "server_alive"):
            # Not what this test is about, but a finding: a warning in the test's summary, and the
            # next seed runs on a server started again (it died, or a reload did not come back).
            warnings.warn(f"seed {seed}: the server died under this campaign:\n" + "\n".join(died.program))
            server.restart()
        failure = next((f for f in result.failures if f.invariant == "sums_match"), None)
        if failure is not None and not failure.flaky and dict(result.faults).get(fault):
            break
    assert failure is not None and error is not None, (result.faults, result.fault_s, result.examples, result.failures)
    assert not failure.flaky, "\n".join(failure.program)
    assert dict(result.faults).get(fault), result.faults  # the fault struck (the warmed model shows its bug only after a load)
    spec = ModelSpec.fetch(server, MODEL)
    entry = corpus.load(corpus.write(tmp_path, corpus.make_entry(spec, server.version, failure.invariant,
                                                                 failure.detail, failure.records)))
    assert any(s.kind is Kind.FAULT and s.fault.name in (fault, "reload") for s in entry.steps), entry.describe()
    for _ in range(2):
        warm(server)
        with pytest.raises(InvariantViolation) as again:
            replay(server, entry)
        assert again.value.invariant == "sums_match", again.value


def test_a_cut_in_a_corpus_entry_is_struck_again_through_the_fault_proxy(server, tmp_path):
    """A cut resets the proxied clients' connections; the sequence is the server's and goes on
    from the reconnected client. Its replay puts the first clients behind a proxy again."""
    warm(server)
    spec = ModelSpec.fetch(server, MODEL)
    steps = (StepRecord(1, 0, "start", Request(MODEL, 11, 1, start=True), via="stream", expect=Answer(1)),
             StepRecord(2, None, "the network cuts the proxied clients' 1 connection(s)", kind=Kind.FAULT,
                        fault=Fault("cut")),
             StepRecord(3, 0, "continue", Request(MODEL, 11, 2), via="stream", expect=Answer(3)))
    entry = corpus.load(corpus.write(tmp_path, corpus.make_entry(spec, server.version, "sums_match", "test", steps)))
    log = replay(server, entry)
    cut = next(s for s in log if s.kind is Kind.FAULT)
    assert cut.fault == Fault("cut") and cut.action == steps[1].action
    assert [s.got for s in log if s.request is not None][:2] == ["OUTPUT=1", "OUTPUT=3"]


def test_a_full_batch_in_a_corpus_entry_restarts_the_server_with_its_hook_and_holds_the_batch(server, tmp_path):
    """full_batch: the server restarts with TRITONSERVER_DELAY_SCHEDULER = the model's capacity,
    and that many STARTs are held until the batch is full. The replay restarts it with the
    recorded hook and sends the held STARTs without waiting; the model's first request after the
    load (position 0 of that one batch) is wrong, so the replay breaks sums_match."""
    spec = ModelSpec.fetch(server, MODEL)
    hook = Fault("full_batch", env=((nemesis.DELAY_SCHEDULER, str(spec.capacity)),))
    held = [Request(MODEL, 20 + i, 10 * (i + 1), start=True) for i in range(spec.capacity)]
    steps = ((StepRecord(1, None, "the server restarts with the hook", kind=Kind.FAULT, fault=hook),)
             + tuple(StepRecord(2 + i, i, "start (held for a full batch)", r, via="stream", kind=Kind.HELD,
                                expect=Answer(r.value)) for i, r in enumerate(held))
             + tuple(StepRecord(2 + spec.capacity + i, i, "answer to start (held for a full batch)", r, via="stream",
                                kind=Kind.HELD_ANSWER, expect=Answer(r.value)) for i, r in enumerate(held)))
    entry = corpus.load(corpus.write(tmp_path, corpus.make_entry(spec, server.version, "sums_match", "test", steps)))
    try:
        with pytest.raises(InvariantViolation) as again:
            replay(server, entry)
        assert again.value.invariant == "sums_match", again.value
        kinds = [s.kind for s in again.value.program]
        assert kinds[:1 + spec.capacity] == [Kind.FAULT] + [Kind.HELD] * spec.capacity, kinds
        assert again.value.program[0].fault == hook
    finally:
        server.restart()  # without the hook: it would hold every later request of this module


def _start_on(model: str, index: int = 1) -> StepRecord:
    return StepRecord(index, 0, "start", Request(model, 7, 15, start=True, end=True), via="stream",
                      expected="OUTPUT=15", got="OUTPUT=16", expect=Answer(15))


def test_fresh_copies_are_fresh_models_of_their_own_and_leave_nothing_behind(server):
    """A copy (fuzz/corpus/fresh.py) serves under its own name as a newly loaded model (the bug's first
    answer shows on it while the model itself is warm), the repository is not written to, and
    closing unloads every copy, those still loading included."""
    spec = ModelSpec.fetch(server, MODEL)
    files_before = sorted(p.relative_to(server.model_repository) for p in server.model_repository.rglob("*"))
    client = server.client()
    warm(server)
    with FreshCopies.of(server, spec) as fresh:
        copies = [fresh.take(), fresh.take()]
        assert [c.name for c in copies] != [MODEL, MODEL] and len({c.name for c in copies}) == 2
        for copy in copies:
            assert attrs.evolve(copy, name=MODEL) == spec
            assert GrpcClient(server.grpc_url).infer(Request(copy.name, 7, 15, start=True, end=True)).value == 16
        assert GrpcClient(server.grpc_url).infer(Request(MODEL, 7, 15, start=True, end=True)).value == 15
        fresh.done(copies[0])
        names = [c.name for c in copies] + [name for name, _ in fresh._loading]
    for name in names:
        assert not client.is_model_ready(name), name
    assert sorted(p.relative_to(server.model_repository) for p in server.model_repository.rglob("*")) == files_before


def test_no_copies_of_an_ensemble_or_of_a_server_this_harness_did_not_start(server):
    spec = ModelSpec.fetch(server, MODEL)
    assert FreshCopies.of(ExternalTriton(server.grpc_url, server.http_url), spec) is None
    assert FreshCopies.of(server, attrs.evolve(spec, step="its_stateful_step")) is None


def test_a_failure_a_copy_shows_is_kept_only_as_the_model_itself_shows_it_after_a_reload(server):
    """Shrinking from a fresh model tries on a copy first; what fails there is replayed on the
    model after a reload, and that is what is kept: its program starts with the reload and every
    request names the model. What keeps the promise on a copy is not tried on the model."""
    spec = ModelSpec.fetch(server, MODEL)
    reloads = []
    with FreshCopies.of(server, spec) as fresh:
        original = server.reload_model
        server.reload_model = lambda *a, **k: (reloads.append(a), original(*a, **k))[1]
        try:
            warm(server)
            kept = isolate._try(server, spec, [_start_on(MODEL)], "sums_match", FuzzSettings(), fresh=fresh)
            # Every first answer of a copy is wrong: as another promise's try, it passes there.
            passing = isolate._try(server, spec, [_start_on(MODEL)], "order_kept", FuzzSettings(), fresh=fresh)
        finally:
            del server.reload_model
    assert kept is not None and kept.program[0].fault == Fault("reload")
    assert {s.request.model for s in kept.program if s.request is not None} == {MODEL}
    assert passing is None and len(reloads) == 1, reloads


def test_renamed_sends_every_request_to_the_named_model():
    steps = [RELOAD, _start_on("a", 2), _start_on("b", 3)]
    assert [s.request and s.request.model for s in renamed(steps, "c")] == [None, "c", "c"]


def test_a_give_up_in_a_corpus_entry_is_struck_again_by_its_replay(server, tmp_path):
    """give_up is no nemesis (the default rule give_up_beside strikes it): an entry with it is
    replayed, not skipped as needing a fault the run lacks, and its calls go out again."""
    spec = ModelSpec.fetch(server, MODEL)
    fault = Fault("give_up", ids=(501, 502, 503, 504), at_once=2, deadline_us=500, spare_every=2)
    steps = (StepRecord(1, None, "4 calls, each on a stream of its own", kind=Kind.FAULT, fault=fault),
             StepRecord(2, 0, "start", Request(MODEL, 7, 15, start=True, end=True), via="stream",
                        expected="OUTPUT=15", got="OUTPUT=15", expect=Answer(15)))
    path = corpus.write(tmp_path, corpus.make_entry(spec, server.version, "valid_is_accepted",
                                                    "refused a request that must be accepted", steps))
    entry = corpus.load(path)
    warm(server)
    program = replay(server, entry)
    struck = [s for s in program if s.kind is Kind.FAULT and s.fault == fault]
    assert struck and "given up" in struck[0].got, program
    # The standalone reproducer strikes it too (its streams opened first, each call given up at
    # its own deadline), on ids the replay above did not leave behind: START+END each, so none is.
    out = subprocess.run([sys.executable, str(path.with_suffix(".py")), "--url", server.grpc_url],
                         capture_output=True, text=True, timeout=120)
    assert "Traceback" not in out.stderr, out.stderr
    assert "4 calls, each on a stream of its own" in out.stdout and "no divergence" in out.stdout, out.stdout
