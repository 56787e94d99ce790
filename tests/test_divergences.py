"""Each known divergence of fuzz/checker/divergences.py reproduced live, so that a build that fixes one
is noticed (the test then fails on purpose: update the table). Crashing ones get their own server."""
import threading
import time
import types

import attrs
import pytest

from fuzz.harness.client import GrpcClient, Request, StreamClient
from fuzz.checker.divergences import AS_BUILT, KNOWN, accepted, by_key, known_for, steered_around
from fuzz.checker.model import START_ERROR
from fuzz.harness.server import EmbeddedTriton, ServerDied
from fuzz.spec import ModelSpec
from modelgen import Variant, write_model

FULL = ("START", "END", "READY", "CORRID")


def divergence(key):
    return next(d for d in KNOWN if d.key == key)


@pytest.fixture
def one_slot(tmp_path):
    # A window of 5 s: the backlog test holds the one slot for half a second and more on a
    # loaded machine, and a holder idled out frees it (a clean-clone CI saw the cancelled id
    # answered at once, its dead backlog place dropped as the slot freed).
    v = Variant("corrid", "direct", 1, 1, "int32", "uint64", FULL, idle_us=5_000_000)
    write_model(v, tmp_path / "models")
    with EmbeddedTriton(tmp_path / "models", workdir=tmp_path / "w") as server:
        yield server, v.name


def test_long_string_id_on_uint64_corrid(one_slot):
    server, model = one_slot
    applies = divergence("string-id-on-uint64-corrid").applies(ModelSpec.fetch(server, model), server.version)
    client = GrpcClient(server.grpc_url)
    ok = client.infer(Request(model, "q" * 108, 1, start=True, end=True))
    assert ok.value == 1, ok
    # 109-110 characters have come back 'unknown request' or already crashed it (heap corruption),
    # so only the deterministic end of the range is pinned.
    # Nor is this end: once (a clean-clone CI) a 120-character id was answered, right. A few tries,
    # each a fresh id of 111-128 characters, until one is not.
    for length, char in ((120, "q"), (111, "r"), (128, "s"), (115, "t"), (125, "u")):
        crashed = client.infer(Request(model, char * length, 1, start=True, end=True))
        if not crashed.ok:
            break
    time.sleep(1.0)
    if not applies:  # the promise: up to 128 characters are allowed
        assert crashed.value == 1, crashed
        server.check_alive()
        return
    # The abort is certain, its timing is not: on a loaded machine tritonserver has taken longer
    # than the client's 30 s to go down (CLIENT_TIMEOUT, seen once in a full run).
    assert crashed.status in ("UNAVAILABLE", "CLIENT_TIMEOUT"), crashed
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            server.check_alive()
        except ServerDied as died:
            assert "died" in str(died)
            return
        time.sleep(0.5)
    # Heap corruption need not abort: once (a loaded clean-clone CI) the server neither died nor
    # answered the 120-character id. Wedged is the divergence too; answering again is not.
    after = GrpcClient(server.grpc_url).infer(Request(model, 7, 1, start=True, end=True), timeout_s=10)
    if crashed.status == "CLIENT_TIMEOUT" and not after.ok:
        return
    pytest.fail(f"tritonserver still running and answering ({after.describe()}) 60 s after a 120-character id "
                f"({crashed.status}): the divergence changed")


def test_string_ids_of_one_length_share_an_int32_corrid(tmp_path):
    v = Variant("corrid", "direct", 2, 1, "int32", "int32", FULL, bool_controls=True)
    write_model(v, tmp_path / "models")
    with EmbeddedTriton(tmp_path / "models", workdir=tmp_path / "w") as server:
        applies = divergence("string-id-on-integer-corrid").applies(ModelSpec.fetch(server, v.name), server.version)
        client = GrpcClient(server.grpc_url)
        assert client.infer(Request(v.name, "abc", 1, start=True)).value == 1
        assert client.infer(Request(v.name, "xyz", 10, start=True)).value == 10
        again = client.infer(Request(v.name, "abc", 1))
        # Each its own sequence: 2. The CORRID the model saw was the string's length for both: 11.
        assert again.value == (11 if applies else 2), again
        server.check_alive()


def test_cancelled_backlogged_start_leaves_its_id_behind(one_slot):
    server, model = one_slot
    applies = divergence("cancelled-backlog-id-lingers").applies(ModelSpec.fetch(server, model), server.version)
    unary, holder, waiter = GrpcClient(server.grpc_url), StreamClient(server.grpc_url), StreamClient(server.grpc_url)
    assert holder.infer(Request(model, 1, 1, start=True)).value == 1
    box = waiter.send(Request(model, 2, 5, start=True))
    time.sleep(0.1)
    assert box.empty(), "the second START must wait: the only slot is held"
    waiter.close(cancel_requests=True)
    assert box.get(timeout=5).status == "CANCELLED"
    time.sleep(0.1)
    after = {}
    t = threading.Thread(target=lambda: after.setdefault("o", unary.infer(Request(model, 2, 1), timeout_s=10)))
    t.start()
    time.sleep(0.2)
    if not applies:
        t.join(5)
        assert after["o"].message == START_ERROR.format(id=2, model=model)
        return
    assert t.is_alive(), "the request to the cancelled id was answered at once: divergence fixed?"
    holder.infer(Request(model, 1, 0, end=True))  # frees the slot: the dead backlog place is dropped
    t.join(5)
    assert (after["o"].status, after["o"].message) == ("CANCELLED", ""), after["o"]
    holder.close()


@pytest.mark.parametrize("release", [None, "0.4.0"], ids=["installed", "2.36"])
def test_a_start_cancelled_in_the_backlog_still_runs_on_a_build_without_cancellation(tmp_path, release):
    """cancel-not-honoured pinned: on 2.36 a START cancelled while it waits in the backlog runs once
    the slot frees, and its sequence goes on; the fuzzer's engine says so (start_is_required), and
    leaves the cancel rule out there. Later builds drop it: once the slot has freed (the cancelled
    START's backlog place with it), its id gets the START-flag error."""
    from fuzz.harness.engine import CANCEL_REACHES_S, Engine, FuzzSettings, Setup
    from fuzz.checker.invariants import InvariantViolation
    from fuzz.generator.machine import make_machine

    from .release_installs import embedded_install

    v = Variant("corrid", "direct", 1, 1, "int32", "uint64", FULL, idle_us=4_000_000)  # its window opens after the cancel settles
    write_model(v, tmp_path / "models")
    with EmbeddedTriton(tmp_path / "models", workdir=tmp_path / "w", **embedded_install(release)) as server:
        spec = ModelSpec.fetch(server, v.name)
        applies = divergence("cancel-not-honoured").applies(spec, server.version)
        assert (make_machine(server, spec).cancel is None) == applies
        assert make_machine(server, spec, FuzzSettings(find_known={"cancel-not-honoured"})).cancel is not None
        engine = Engine(Setup.of(server, spec, FuzzSettings()), salt=1)
        assert engine.send(0, spec.request(101, 1, start=True), "stream", "start").value == 1
        engine.send(1, spec.request(102, 5, start=True), "stream", "start, into the backlog")
        time.sleep(0.3)
        engine.cancel_queued(1)
        # The cancel's status is the client's own; the server takes it some time later (a loaded
        # clean-clone CI once freed the slot first, and the START ran): the model waits as long.
        time.sleep(CANCEL_REACHES_S + 0.2)
        assert engine.send(0, spec.request(101, 1, end=True), "stream", "end").value == 2  # the slot frees
        time.sleep(0.1)
        if not applies:
            engine.send(2, spec.request(102, 1), "grpc", "the cancelled id, without START")
            engine.finish()
            assert not engine.failed and "must specify the START flag" in engine.log[4].outcome.message, engine.log[4].got
            return
        with pytest.raises(InvariantViolation) as raised:
            engine.send(2, spec.request(102, 1), "grpc", "the cancelled id, without START")
        engine.failed = True
        engine.finish()
    assert raised.value.invariant == "start_is_required" and engine.log[-1].outcome.value == 6, engine.log[-1].got
    assert [d.key for d in known_for(spec, server.version) if d.invariant == "start_is_required"] == \
        ["cancel-not-honoured"]


def test_every_known_divergence_names_a_build_and_a_symptom():
    for d in KNOWN:
        assert d.versions and d.symptom and d.summary
        assert d.guard or d.invariant
    assert known_for(Variant("slot", "direct", 1, 1), "0.0.0") == []
    assert all(d.as_built in AS_BUILT for d in KNOWN if d.as_built), "an as-built behaviour the model lacks"
    assert accepted({"python-backend-drops-implicit-state"}, "carries_no_state")
    assert not accepted({"string-corrid-control-rejected"}, "carries_no_state")


def test_2_36s_dtype_wording_is_taken_as_built_and_only_its_wording():
    """The release matrix met 2.36's older text for a wrong-dtype refusal on every model; the
    reference then expects that text, and nothing else about the refusal changes."""
    from fuzz.harness.client import Request
    from fuzz.checker.model import OLDER_DTYPE_ERROR, BatcherModel, Refusal
    from fuzz.spec import ModelSpec
    from modelgen import model_config

    older = next(d for d in KNOWN if d.key == "dtype-error-older-wording")
    got = "inference input data-type is 'FP32', model expects 'INT32' for 'm'"
    assert older.explains("invalid_is_refused", got) and not older.explains("invalid_is_refused", "other text")
    assert known_for(Variant("slot", "direct", 1, 1), "2.36.0") and older not in known_for(Variant("slot", "direct", 1, 1),
                                                                                         "2.39.0")
    spec = ModelSpec.from_config(model_config(Variant("slot", "direct", 1, 1)))
    wrong = Request(spec.name, 5, 1.0, dtype="FP32", batch_dim=True)
    as_built = BatcherModel(spec, margin_s=0.1, dtype_error=OLDER_DTYPE_ERROR).expect(wrong, 0.0)
    assert as_built == Refusal("INVALID_ARGUMENT", OLDER_DTYPE_ERROR.format(sent="FP32", want="INT32", model=spec.name),
                               "invalid_is_refused")
    assert accepted({older.key}, "older_dtype_wording")


def test_the_python_backends_missing_state_is_known_under_the_promise_that_meets_it_first():
    """share_sequence can meet python-backend-drops-implicit-state before any plain request does:
    its answers are then no running sums of any order, an order_kept failure of the same cause."""
    drops = next(d for d in KNOWN if d.key == "python-backend-drops-implicit-state")
    assert drops.explains("sums_match", "") and drops.explains("order_kept", "")
    assert not drops.explains("start_is_required", "")


@pytest.mark.parametrize("via", ["grpc", "stream", "http"])
def test_a_string_id_is_cut_at_an_embedded_nul(triton, via):
    """Found by the fuzzer's string-id families: 'a\\0x' is the sequence 'a' on 2.51, whatever the
    transport (what 'a' answers after a START of 'a\\0x' shows which sequence that START was)."""
    from fuzz.harness.client import HttpClient
    from fuzz.generator.machine import string_ids_allowed

    model = "py_slot_direct_s2_i2_fp32_cser"  # takes string ids, keeps its sums per slot
    spec = ModelSpec.fetch(triton, model)
    if not string_ids_allowed(spec, triton.version):
        pytest.skip("this build takes no string ids on this model (string-ids-refused)")
    applies = divergence("string-id-cut-at-nul").applies(spec, triton.version)
    client = {"grpc": GrpcClient, "stream": StreamClient}.get(via, lambda u: HttpClient(triton.http_url))(triton.grpc_url)
    base = f"nul-{via}"
    req = lambda seq_id, value, **f: Request(model, seq_id, value, dtype="FP32", **f)  # noqa: E731
    assert client.infer(req(base, 1.0, start=True)).value == 1.0
    assert client.infer(req(base + "\x00x", 10.0, start=True)).value == 10.0
    after = client.infer(req(base, 100.0, end=True))
    # Two sequences: 101. One, restarted by the twin's START: 110.
    assert after.value == (110.0 if applies else 101.0), after
    client.infer(req(base + "\x00x", 0.0, end=True))


def test_readmes_per_build_table_is_the_one_the_known_divergences_make():
    from pathlib import Path

    from fuzz.checker.divergences import build_table

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert build_table() in readme, "README's per-build table of known divergences is stale"


@pytest.mark.parametrize("release", [None, "0.5.0"], ids=["2.51", "2.41"])
def test_failures_counted_by_ensembles_and_iterative_releases(tmp_path, release):
    """The fail count of an ensemble whose step refuses a request (twice on 2.51, once before), and
    of an iterative model whose START was answered in full (one on 2.51, none before): what
    stats_agree takes as built where the divergences say the build shows them."""
    from modelgen import python_variants, write_repository

    from .release_installs import embedded_install

    ensemble = next(v for v in python_variants() if v.ensemble)
    iterative = next(v for v in python_variants() if v.iterations)
    write_repository([ensemble, iterative], tmp_path / "models")
    with EmbeddedTriton(tmp_path / "models", workdir=tmp_path / "w", **embedded_install(release)) as server:
        server.wait_models_ready([ensemble.name, iterative.name])

        def fail_rise(variant, client, reqs):
            before = server.statistics(variant.name)
            outs = [client.infer(r, 5.0) for r in reqs]
            time.sleep(0.3)  # the server counts just after it answers
            return server.statistics(variant.name).rise_since(before).fail.count, outs

        spec = ModelSpec.fetch(server, ensemble.name)
        unary = GrpcClient(server.grpc_url)
        fails, outs = fail_rise(ensemble, unary, [spec.request(41, 1), spec.request(42, 1)])  # no START
        assert not any(o.ok for o in outs) and all("START" in o.message for o in outs), outs
        twice = divergence("ensemble-failure-counted-twice").applies(ensemble, server.version)
        assert fails == (4 if twice else 2)
        answered, _ = fail_rise(ensemble, unary, [spec.request(43, 1, start=True, end=True)])
        assert answered == 0

        spec = ModelSpec.fetch(server, iterative.name)
        stream = StreamClient(server.grpc_url)
        try:
            fails, outs = fail_rise(iterative, stream, [spec.request(51, 2, start=True), spec.request(52, 2, start=True)])
        finally:
            stream.close(cancel_requests=True)
        assert [len(o.partials) for o in outs] == [iterative.iterations - 1] * 2, outs
        released = divergence("iterative-release-counts-failure").applies(iterative, server.version)
        assert fails == (2 if released else 0)


def test_find_turns_every_guard_off_and_steer_keeps_each_of_this_build():
    """--known-divergences find (FuzzSettings.find_known, every key): no guard is kept, so the fuzzer
    meets the build's known divergences unaided; one key lifts that guard only; steer keeps every
    guard that applies, and nothing else."""
    from fuzz.checker.divergences import steered_around
    from fuzz.generator.machine import string_ids_allowed, twin_families

    uint64 = ModelSpec(name="m", dtype="INT32", strategy="direct", slots_per_instance=1, instances=1, idle_s=0.5,
                       max_batch_size=1, controls=frozenset(FULL), corrid_type="UINT64", implicit_state=False)
    kept = steered_around(uint64, "2.51.0")
    assert {d.key for d in kept} == {d.key for d in known_for(uint64, "2.51.0") if d.guard}
    assert "string-id-on-uint64-corrid" in {d.key for d in kept}
    assert not string_ids_allowed(uint64, "2.51.0") and twin_families(uint64, "2.51.0") == ()
    every = {d.key for d in KNOWN}
    assert steered_around(uint64, "2.51.0", find=every) == []
    assert string_ids_allowed(uint64, "2.51.0", every) and "embedded NUL" in twin_families(uint64, "2.51.0", every)
    one = steered_around(uint64, "2.51.0", find={"string-id-on-uint64-corrid"})
    assert {d.key for d in one} == {d.key for d in kept} - {"string-id-on-uint64-corrid"}


def test_a_split_ensembles_unanswered_refusal_is_known_only_where_a_refusal_was_due():
    """ensemble-step-refusal-unanswered: no answer where the step's refusal at enqueue was due
    (under no_hangs or invalid_is_refused, whichever check met it), never a hang of anything else,
    on the split ensemble only; its guard keeps such requests from being sent there."""
    from modelgen import split_variants
    from fuzz.checker.model import BatcherModel, refused_on_enqueue
    from fuzz.spec import ModelSpec
    from modelgen.config import configs

    lost = by_key("ensemble-step-refusal-unanswered")
    hang = "CLIENT_TIMEOUT: no response within 5.0 s"
    start_due = "INVALID_ARGUMENT: in ensemble 'e', inference request for sequence 9 to model 'e_step' must specify the START flag"
    assert lost.explains("no_hangs", hang, start_due) and lost.explains("invalid_is_refused", hang, start_due)
    assert not lost.explains("no_hangs", hang, "OUTPUT=3 after [3]")  # an answer due: a hang of another kind
    assert not lost.explains("start_is_required", "OUTPUT=3", start_due)
    split = split_variants()[0]
    assert known_for(split, "2.51.0") and lost in steered_around(split, "2.36.0")
    assert lost not in known_for(Variant("slot", "oldest", 1, 1, "int32", controls=("START", "END", "READY"),
                                         ensemble=True), "2.51.0")
    cfgs = configs(split)
    spec = ModelSpec.of_ensemble(cfgs[split.name], {n: cfgs[n] for n in (split.split_name, split.step_name)})
    model = BatcherModel(spec, margin_s=0.1)
    assert refused_on_enqueue(spec, model.expect(spec.request(9, 3), 0.0))  # no START
    assert refused_on_enqueue(spec, model.expect(spec.request(0, 3, start=True), 0.0))  # id 0
    assert not refused_on_enqueue(spec, model.expect(spec.request(9, 3, start=True), 0.0))  # an answer


def test_only_the_decoupled_iterative_model_and_the_split_ensemble_are_fuzzed_alone_on_the_builds_they_kill():
    """`pytest fuzz/ -n N` gives a model a server of its own (fuzz/plugin.py LoneServers) where a
    known divergence kills a server it shares with another model's traffic: of the default models,
    the decoupled iterative one and the split ensemble on 2.46 and 2.51 (iterative-beside-backlog-crash),
    none on 2.44; not the decoupled model that does not iterate, nor any other."""
    from modelgen import default_variants

    def alone(version):
        return [v.name for v in default_variants(native=True) if any(d.alone and d.applies(v, version) for d in KNOWN)]
    assert [v.name for v in default_variants(native=True) if (v.iterations and v.decoupled) or v.chunks > 1] == \
        alone("2.51.0")
    assert alone("2.51.0") == alone("2.46.0") and len(alone("2.51.0")) == 2
    assert alone("2.44.0") == []


def test_a_known_divergence_is_polished_only_into_a_cut_that_is_still_it(monkeypatch):
    """A known divergence's program is polished (Hypothesis cannot fold a queue sent back to
    back), but a cut is kept only where the same divergence still explains it: one that breaks
    the same promise some other way would be reported as a new finding. Hangs and the server's
    death are not polished at all. (The campaign's bookkeeping only: polish is stubbed.)"""
    from fuzz import campaign
    from fuzz.checker.divergences import KnownDivergence
    from fuzz.checker.invariants import InvariantViolation
    from fuzz.harness.engine import FuzzSettings

    def violation(invariant, got, steps):
        v = InvariantViolation(invariant, "d")
        v.got, v.program = got, ["step"] * steps
        return v
    known = [KnownDivergence(k, "s", ("2.51.0",), "x", affects=lambda spec: True, invariant=inv, signatures=(sig,))
             for k, inv, sig in [("dropped", "sums_match", "dropped"), ("hang", "no_hangs", "given up")]]
    cuts = {}
    monkeypatch.setattr(campaign, "polish", lambda server, spec, v, settings, budget: cuts.get(id(v)))
    still, other, hang, ours = (violation("sums_match", "dropped", 9), violation("sums_match", "dropped", 9),
                                violation("no_hangs", "given up", 9), violation("sums_match", "wrong", 9))
    cuts.update({id(still): violation("sums_match", "dropped", 2), id(other): violation("sums_match", "wrong", 2),
                 id(hang): violation("no_hangs", "no response", 1), id(ours): violation("sums_match", "wrong", 1)})
    violations = [still, other, hang, ours]
    polished = campaign._shorten_known(None, None, violations, {id(ours)}, known, FuzzSettings())
    assert [len(v.program) for v in violations] == [2, 9, 9, 9]
    assert list(polished) == [id(violations[0])]


def test_a_start_overtaking_its_ids_end_is_told_apart_by_what_the_checker_saw_not_by_the_invariant():
    """start-overtakes-its-ids-end breaks sums_match, as every wrong sum does: only the END whose
    answer the checker found to be the new START's sum plus its own (verdicts.start_ran_first) is
    it. An END answered its own value alone (a hoisted reset) is no such thing, nor is any other
    wrong sum, nor the overtaken sum where a START of 0 makes it what a reset gives; it is a race
    (not seeing it says nothing), of models that can keep their state by CORRID; and once taken as
    built, no START goes behind an END on its id (AS_BUILT)."""
    from fuzz.checker.invariants import NamedDivergence, failure_key
    from fuzz.checker.verdicts import START_RAN_FIRST, start_ran_first
    from fuzz.values import Outcome

    overtakes = next(d for d in KNOWN if d.key == "start-overtakes-its-ids-end")
    end, then = Request("m", 7, 2, end=True), (lambda total, value: total + value)
    ran_first = start_ran_first(end, 5, 0, Outcome(status="OK", value=7), then)
    assert isinstance(ran_first, NamedDivergence) and ran_first.known_as == overtakes.key
    assert START_RAN_FIRST in ran_first.detail and ran_first.invariant == "sums_match"
    assert failure_key(ran_first) != "sums_match"  # kept apart from a finding's wrong sum
    assert overtakes.explains(ran_first.invariant, "OUTPUT=7", "OUTPUT=12", ran_first.detail)
    assert start_ran_first(end, 5, 0, Outcome(status="OK", value=2), then) is None  # its own value alone: a finding
    assert start_ran_first(end, 5, 0, Outcome(status="INVALID_ARGUMENT", message="x"), then) is None
    assert start_ran_first(end, 7, 7, Outcome(status="OK", value=9), then) is None  # a START of 0 from 7: a reset's sum
    # the request before the END, still in flight with it: the START shared its execution, its row first
    before = start_ran_first(Request("m", 7, 4), 5, 0, Outcome(status="OK", value=9), then)
    assert isinstance(before, NamedDivergence) and "plus this request's 4" in before.detail
    assert overtakes.explains(before.invariant, "OUTPUT=9", "OUTPUT=14", before.detail)
    assert not overtakes.explains("sums_match", "OUTPUT=2", "OUTPUT=12", "wrong running sum")
    assert overtakes.as_built and accepted({overtakes.key}, "no_start_behind_its_end") and overtakes.race
    corrid = Variant("corrid", "oldest", 2, 1, "int32", "uint64", FULL)
    assert overtakes.applies(corrid, "2.51.0") and not overtakes.applies(corrid, "2.46.0")
    # not where the state is kept by slot or by Triton (implicit), nor on a split ensemble, whose
    # START behind a START+END is start-behind-end-runs-first
    assert not overtakes.affects(Variant("slot", "direct", 2, 1, "int32", "uint64", FULL))
    assert not overtakes.affects(Variant("implicit", "direct", 2, 1, "int32", "uint64", FULL))
    assert not overtakes.affects(types.SimpleNamespace(corrid_type="UINT64", controls=FULL, chunks=2))


def test_the_start_behind_an_end_is_found_from_every_request_of_its_sequence_still_held_with_it():
    """Engine._start_behind: the START a client pipelined right behind the END of a request's
    sequence, on its id, is found from the END and from the requests of that sequence sent
    before it with nothing waited for; not from another id's, not across a restart, not where
    the START went on another id or none followed."""
    from fuzz.harness.engine import Engine
    from fuzz.values import Kind, StepRecord

    def held(*reqs, client=0):
        return [StepRecord(i, client, "run", r, "stream", kind=Kind.HELD) for i, r in enumerate(reqs)]

    x, end, start = Request("m", 7, 4), Request("m", 7, 1, end=True), Request("m", 7, 3, start=True)
    engine = types.SimpleNamespace(log=held(Request("m", 7, 2), x, end, start))
    assert Engine._start_behind(engine, 0, x) == start and Engine._start_behind(engine, 0, end) == start
    assert Engine._start_behind(engine, 1, x) is None  # another client's stream
    restart = Request("m", 7, 9, start=True)
    assert Engine._start_behind(types.SimpleNamespace(log=held(x, restart, end, start)), 0, x) is None
    other = Request("m", 8, 3, start=True)
    assert Engine._start_behind(types.SimpleNamespace(log=held(x, end, other)), 0, x) is None
    assert Engine._start_behind(types.SimpleNamespace(log=held(x, end)), 0, end) is None
    assert Engine._start_behind(types.SimpleNamespace(log=held(x, Request("m", 8, 1), end, start)), 0, x) is None


def test_a_death_after_cancelled_streams_is_final_alone_cancel_crash_only_where_the_finals_came_alone():
    """final-alone-cancel-crash: named where the server died after streams were cancelled in
    flight on a decoupled model whose answers came with their final flag in a response of their
    own (what Engine._after_given_up adds), never for another death, and over a crash that names
    any death of its models (string-id-on-uint64-corrid); on decoupled models that neither iterate
    nor are ensembles. Guarded, so a default campaign does not expect it; one with the deadlines
    fault, which cancels such streams still, does. On 2.39-2.44 any decoupled model's death after
    cancelled streams is decoupled-cancel-crash."""
    from fuzz.campaign import _known, expected_divergences
    from fuzz.checker.invariants import InvariantViolation
    from fuzz.checker.verdicts import DECOUPLED_CANCEL_CRASH, FINAL_ALONE_CRASH
    from fuzz.generator.machine import FuzzSettings
    from fuzz.harness.engine import Engine, RunStats

    def after(final_alone):
        stats = RunStats()
        stats.final_alone = final_alone
        engine = types.SimpleNamespace(server=types.SimpleNamespace(calls_given_up=0, streams_given_up=12), stats=stats)
        return Engine._after_given_up(engine)

    crash = by_key(FINAL_ALONE_CRASH)
    assert crash.explains("server_alive", "45 answered, 19 given up" + after(True))
    assert not crash.explains("server_alive", "45 answered, 19 given up" + after(False))
    assert not crash.explains("server_alive", "tritonserver died with status -11")
    decoupled = Variant("corrid", "direct", 4, 1, "int32", "uint64", FULL, decoupled=True)
    assert crash.applies(decoupled, "2.51.0") and not crash.applies(decoupled, "2.36.0")
    assert not crash.applies(Variant("corrid", "direct", 4, 1, "int32", "uint64", FULL), "2.51.0")
    assert not crash.applies(Variant("corrid", "direct", 4, 1, "int32", "uint64", FULL, decoupled=True, iterations=3), "2.51.0")
    assert crash.guard and crash.race

    spec = ModelSpec(name="m", dtype="INT32", strategy="direct", slots_per_instance=4, instances=1, idle_s=0.5,
                     max_batch_size=1, controls=frozenset(FULL), corrid_type="UINT64", implicit_state=False, decoupled=True)
    assert not crash.applies(attrs.evolve(spec, step="e_step"), "2.51.0"), "no ensemble was measured"
    keys = lambda version, **kw: [d.key for d in expected_divergences(spec, version, FuzzSettings(**kw))]
    assert FINAL_ALONE_CRASH not in keys("2.51.0") and DECOUPLED_CANCEL_CRASH not in keys("2.41.0")
    assert FINAL_ALONE_CRASH in keys("2.51.0", nemesis=frozenset({"deadlines"}))
    assert DECOUPLED_CANCEL_CRASH in keys("2.41.0", nemesis=frozenset({"deadlines"}))

    died = InvariantViolation("server_alive", "tritonserver died with status -11")
    died.got = "45 answered, 19 given up" + after(False)
    every = frozenset(d.key for d in KNOWN)  # string ids' crash too, which names any death of this model
    assert _known(expected_divergences(spec, "2.41.0", FuzzSettings(find_known=every)), died) == DECOUPLED_CANCEL_CRASH
    assert _known([crash], died) is None
    died.got = "45 answered, 19 given up" + after(True)
    for version in ("2.41.0", "2.51.0"):
        assert _known(expected_divergences(spec, version, FuzzSettings(find_known=every)), died) == FINAL_ALONE_CRASH


def test_how_a_decoupled_model_sends_its_final_flag_is_kept_once_alone_always():
    """RunStats.final_alone, which final-alone-cancel-crash's guard reads: None until a decoupled
    model answers, False while its final flags came in its answers, True from the first that came
    alone on; errors and models that are not decoupled leave it."""
    from fuzz.harness.engine import Engine, RunStats
    from fuzz.values import Outcome

    def heard(*outcomes, decoupled=True):
        engine = types.SimpleNamespace(spec=types.SimpleNamespace(decoupled=decoupled), stats=RunStats())
        for o in outcomes:
            Engine.heard(engine, o)
        return engine.stats.final_alone

    ok, alone = Outcome(value=1), Outcome(value=1, final_alone=True)
    assert heard() is None and heard(Outcome(status="ERROR", message="x")) is None
    assert heard(ok) is False and heard(ok, alone) is True and heard(alone, ok) is True
    assert heard(alone, decoupled=False) is None
