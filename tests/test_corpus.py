"""The corpus format without a server: round trips, typed ids, atomic files, clear errors for
bad files, and the reproducer script's embedding."""
import json
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from fuzz import corpus
from fuzz.harness.client import Request
from fuzz.corpus import CorpusError
from fuzz.harness.engine import Kind, StepRecord
from fuzz.corpus.reproducer import RUNTIME_NAME, render, runtime
from fuzz.values import Answer, Cancelled, Outcome, Queued, Refusal
from fuzz.spec import ModelSpec

ROOT = Path(__file__).resolve().parent.parent
SPEC = ModelSpec(name="m", dtype="INT32", strategy="direct", slots_per_instance=2, instances=1, idle_s=0.5,
                 max_batch_size=2, controls=frozenset({"START", "READY"}), corrid_type=None,
                 implicit_state=False, flavour="slot", backend="python")


def steps():
    return (
        StepRecord(1, 0, "start", Request("m", 5, 1, start=True), via="stream", expected="OUTPUT=1", got="OUTPUT=1",
                   expect=Answer(1), outcome=Outcome(1)),
        StepRecord(2, 1, "start the other-typed twin", Request("m", "5", 10, start=True), via="grpc",
                   expected="OUTPUT=10", got="OUTPUT=10", expect=Answer(10), outcome=Outcome(10)),
        StepRecord(3, 2, "start", Request("m", 2**64 - 1, 3, start=True, end=True), via="http",
                   expected="OUTPUT=3", got="OUTPUT=3", expect=Answer(3), outcome=Outcome(3)),
        StepRecord(4, None, "pause", kind=Kind.PAUSE, wait_s=0.025),
        StepRecord(5, 0, "continue", Request("m", 5, 2), via="stream", expected="OUTPUT=3", got="OUTPUT=2",
                   expect=Answer(3), outcome=Outcome(2)),
    )


def entry(**kw):
    return corpus.make_entry(SPEC, "2.51.0", "sums_match", "wrong running sum", steps(), **kw)


def test_round_trip_keeps_uint64_and_string_ids_apart(tmp_path):
    e = entry(divergence="some-divergence")
    path = corpus.write(tmp_path, e)
    data = json.loads(path.read_text())
    assert data["format_version"] == corpus.FORMAT_VERSION
    ids = [s["request"]["id"] for s in data["steps"] if s["request"]]
    assert ids[:3] == [{"type": "uint64", "value": 5}, {"type": "string", "value": "5"},
                       {"type": "uint64", "value": 2**64 - 1}]
    back = corpus.load(path)
    assert back == e
    assert [type(s.request.seq_id) for s in back.steps if s.request] == [int, str, int, int]
    assert back.status == "known-divergence" and back.divergence_versions == ("2.51.0",)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{e.name}.json", f"{e.name}.py", RUNTIME_NAME], \
        "no temp files left"


def test_what_a_program_took_as_built_round_trips_and_is_left_out_when_nothing(tmp_path):
    e = entry(accepts=("python-backend-drops-implicit-state",))
    assert corpus.load(corpus.write(tmp_path, e)) == e
    assert "accepts" not in entry().to_json()


def test_a_request_without_a_batch_dimension_round_trips_and_older_entries_have_one(tmp_path):
    nb = attrs.evolve(SPEC, max_batch_size=0)
    step = StepRecord(1, 0, "misuse (batch 2)", nb.request(7, 1, batch=2), via="grpc",
                      expected="INVALID_ARGUMENT", got="INVALID_ARGUMENT")
    e = corpus.make_entry(nb, "2.51.0", "invalid_is_refused", "wrong shape", (step,))
    data = json.loads(corpus.write(tmp_path, e).read_text())
    assert data["steps"][0]["request"]["batch_dim"] is False
    assert corpus.load(tmp_path / f"{e.name}.json").steps[0].request.shape == (2,)
    assert "batch_dim" not in json.dumps(entry().to_json())  # batched requests are written as before
    assert all(s.request.batch_dim for s in corpus.CorpusEntry.from_json(entry().to_json()).steps if s.request)


def test_name_depends_on_the_program_not_on_timing():
    timed = tuple(s if s.action != "pause" else StepRecord(4, None, "pause", kind=Kind.PAUSE, wait_s=0.031) for s in steps())
    assert corpus.entry_name("m", "sums_match", timed) == entry().name
    other = steps()[:-1] + (StepRecord(5, 0, "continue", Request("m", "5", 2), via="stream"),)
    assert corpus.entry_name("m", "sums_match", other) != entry().name


def test_record_does_not_write_a_finding_twice(tmp_path):
    first, written = corpus.record(tmp_path, entry(divergence="d"))
    assert written
    # the same known divergence of the same model, found through another program: not written again
    other = corpus.make_entry(SPEC, "2.51.0", "sums_match", "wrong running sum", steps()[:1], divergence="d")
    assert corpus.record(tmp_path, other) == (first, False)
    assert corpus.record(tmp_path, entry())[1] is False  # same program, untriaged
    assert len(list(tmp_path.glob("*.json"))) == 1


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(format_version=99), "unknown format_version 99"),
    (lambda d: d.pop("steps"), "missing field 'steps'"),
    (lambda d: d.update(status="maybe"), "status must be one of"),
    (lambda d: d["steps"][0]["request"].update(id=5), "step 1: an id must be"),
    (lambda d: d["steps"][0]["request"]["id"].update(value=2**64), "uint64 id out of range"),
    (lambda d: d.update(name="other"), "does not match the file name"),
    (lambda d: d.update(status="known-divergence", divergence_versions=[]), "must name the Triton versions"),
    (lambda d: d.update(accepts=["no-such-divergence"]), "accepts names no known divergence: no-such-divergence"),
])
def test_a_bad_file_is_reported_with_its_name(tmp_path, mutate, message):
    e = entry()
    data = e.to_json()
    mutate(data)
    path = tmp_path / f"{e.name}.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CorpusError, match=message) as err:
        corpus.load(path)
    assert str(path) in str(err.value)


def test_load_dir_keeps_going_past_a_corrupt_file(tmp_path):
    good = corpus.write(tmp_path, entry())
    (tmp_path / "broken.json").write_text('{"format_version": 1, "name": ')
    loaded = {item.name: item for item in corpus.load_dir(tmp_path)}
    assert loaded[good.stem].entry is not None
    assert "not valid JSON" in str(loaded["broken"].error) and "broken.json" in str(loaded["broken"].error)


def test_reproducer_shows_the_program_and_runs_without_this_project(tmp_path):
    tricky = corpus.make_entry(SPEC, "2.51.0", "invalid_is_refused", 'quote " backslash \\ triple """ end',
                               steps())
    script = Path(corpus.write(tmp_path, tricky)).with_suffix(".py")
    text = script.read_text()
    assert all(line in text for s in tricky.steps for line in s.describe().split("\n")), text
    assert (tmp_path / RUNTIME_NAME).read_text() == runtime()
    # Run it with this project's packages made unimportable: it must stand alone. No server is
    # listening on port 1, so it must say so and exit 2.
    guard = ("import runpy, sys; sys.modules['fuzz'] = None; sys.modules['modelgen'] = None; "
             f"sys.argv = [{str(script)!r}, '--url', '127.0.0.1:1']; runpy.run_path(sys.argv[0], run_name='__main__')")
    out = subprocess.run([sys.executable, "-I", "-c", guard], capture_output=True, text=True, cwd=tmp_path,
                         timeout=60)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "cannot reach a Triton at 127.0.0.1:1" in out.stdout
    embedded = subprocess.run(
        [sys.executable, "-I", "-c", f"import runpy; print(runpy.run_path({str(script)!r})['ENTRY']['detail'])"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert embedded.stdout.strip() == tricky.detail, embedded.stderr


def test_checked_in_corpus_loads_and_its_reproducers_are_current():
    items = corpus.load_dir(ROOT / "corpus")
    assert items, "the corpus holds at least the implicit-state divergence"
    for item in items:
        assert item.error is None, item.error
        assert json.loads(item.path.read_text())["format_version"] == corpus.FORMAT_VERSION, (
            f"{item.path} is in an older format: rewrite it with fuzz.corpus.write")
        script = item.path.with_suffix(".py")
        assert script.read_text() == render(item.entry), f"{script} is stale: rewrite it with fuzz.corpus.write"
        assert len(script.read_text().splitlines()) < 150
    assert (ROOT / "corpus" / RUNTIME_NAME).read_text() == runtime(), "the reproducers' runtime is stale"
    implicit = [i.entry for i in items if i.entry.model == "py_implicit_direct_s1_i1_int32_csr"]
    assert implicit and implicit[0].status == "known-divergence" and "2.51.0" in implicit[0].divergence_versions


def every_kind():
    """One step of each kind, with the text the fuzzer writes for it."""
    q = Request("m", 9, 4, start=True)
    return (
        StepRecord(1, 0, "start", Request("m", 5, 1, start=True), via="stream", expected="OUTPUT=1", got="OUTPUT=1"),
        StepRecord(2, 1, "start", q, via="stream", expected="queued in the backlog, then OUTPUT=4", got="(waiting)",
                   kind=Kind.QUEUED),
        StepRecord(3, None, "leave 1 sequence(s) to expire: 5", kind=Kind.LEAVE_TO_EXPIRE),
        StepRecord(4, None, "go silent past the idle timeout", wait_s=0.6, kind=Kind.GO_SILENT),
        StepRecord(5, 1, "answer to step 2", q, via="stream", expected="OUTPUT=4", got="OUTPUT=4", kind=Kind.ANSWER),
        StepRecord(6, 2, "start after timeout", Request("m", 7, 1, start=True), via="stream", expected="OUTPUT=1",
                   got="OUTPUT=1", kind=Kind.REFILL),
        StepRecord(7, 3, "start", q, via="stream", expected="queued", got="(waiting)", kind=Kind.QUEUED),
        StepRecord(8, 3, "cancel its queued START (step 7)", q, via="stream", expected="CANCELLED",
                   got="CANCELLED", kind=Kind.CANCEL_QUEUED),
        StepRecord(9, 0, "close its stream", kind=Kind.CLOSE_STREAM),
        StepRecord(10, None, "pause", wait_s=0.01, kind=Kind.PAUSE),
        StepRecord(11, None, "restart the server", kind=Kind.FAULT),
        StepRecord(12, 1, "still waiting", q, via="stream", expected="OUTPUT=4", got="no answer",
                   kind=Kind.STILL_WAITING),
    )


def test_format_1_entries_are_migrated_on_load(tmp_path):
    # Format 1 had no kinds, only the text; every kind comes back from the text the fuzzer wrote.
    e = corpus.make_entry(SPEC, "2.51.0", "sums_match", "wrong running sum", every_kind())
    data = e.to_json()
    assert data["format_version"] == 2 and [s["kind"] for s in data["steps"]] == [s.kind.value for s in every_kind()]
    data["format_version"] = 1
    for s in data["steps"]:
        del s["kind"]
    (tmp_path / f"{e.name}.json").write_text(json.dumps(data))
    assert corpus.load(tmp_path / f"{e.name}.json") == e
    # A real one, as checked in before format 2.
    (old,) = [i.entry for i in corpus.load_dir(ROOT / "tests" / "golden" / "corpus_format1")]
    assert [s.kind for s in old.steps] == [Kind.GO_SILENT, Kind.REFILL], old.steps
    assert json.loads(old.dumps())["format_version"] == 2


def test_steps_written_before_expectations_were_values_get_them_from_their_text():
    """Format 1, and format 2 before `expect`: the expectation is read from its text, once, on load."""
    def step(kind, expected, **kw):
        return {"index": 1, "client": 0, "kind": kind, "action": "a", "request": None, "via": "stream",
                "wait_s": 0.0, "expected": expected, "got": "", **kw}
    text = {"request": "OUTPUT=-3", "refill": "OUTPUT=2.5", "queued": "queued in the backlog, then OUTPUT=7",
            "answer": "queued in the backlog, then OUTPUT=7", "cancel_queued": "CANCELLED, sequence ended"}
    read = {k: corpus._step_from_json(step(k, v), 0).expect for k, v in text.items()}
    assert read == {"request": Answer(-3), "refill": Answer(2.5), "queued": Queued(7), "answer": Queued(7),
                    "cancel_queued": Cancelled()}
    refusal = corpus._step_from_json(step("request", "INVALID_ARGUMENT: must specify the START flag"), 0).expect
    assert refusal == Refusal("INVALID_ARGUMENT", "must specify the START flag", "")
    assert corpus._step_from_json(step("pause", ""), 0).expect is None
    # Once kept as a value, the value is read, not the text.
    assert corpus._step_from_json(step("request", "OUTPUT=1", expect={"answer": 2}), 0).expect == Answer(2)


def test_an_ended_or_expectation_round_trips_and_a_bad_one_is_refused():
    """cancel_pipelined's expectation: refused (its sequence ended), or one of these sums."""
    from fuzz.corpus import _expect_from_json, _expect_to_json
    from fuzz.values import EndedOr

    for e in (EndedOr(()), EndedOr((15, 11)), EndedOr([2.5])):
        assert _expect_from_json(json.loads(json.dumps(_expect_to_json(e)))) == e
    assert _expect_to_json(EndedOr((15, 11))) == {"ended_or": [15, 11]}
    with pytest.raises(TypeError, match="ended_or must be a list of numbers"):
        _expect_from_json({"ended_or": 15})
    with pytest.raises(TypeError, match="ended_or must be a list of numbers"):
        _expect_from_json({"ended_or": [True]})


def test_an_answer_with_partials_round_trips_and_the_reproducer_checks_them(tmp_path):
    """An iterative sequence's START answers once per execution: the expectation and the outcome
    keep the answers before the final one, and entries without them read and write as before."""
    from fuzz.corpus import _expect_from_json, _expect_to_json, _outcome_from_json, _outcome_to_json
    from fuzz.corpus.reproducer_script import Outcome as ScriptOutcome, matches

    for e in (Answer(15, partials=(5, 10)), Queued(2.5, partials=[1.25]), Answer(3)):
        assert _expect_from_json(json.loads(json.dumps(_expect_to_json(e)))) == e
    assert _expect_to_json(Answer(3)) == {"answer": 3}
    got = Outcome(value=15, partials=(5, 10))
    assert _outcome_from_json(json.loads(json.dumps(_outcome_to_json(got)))) == got
    assert "partials" not in _outcome_to_json(Outcome(value=1))
    with pytest.raises(TypeError, match="partials must be a list of numbers"):
        _expect_from_json({"answer": 15, "partials": 5})
    with pytest.raises(ValueError, match="an expectation is one of"):
        _expect_from_json({"refusal": {}, "partials": []})
    expect = {"answer": 15, "partials": [5, 10]}
    assert matches(expect, ScriptOutcome(15, partials=[5, 10]), "stream")
    assert not matches(expect, ScriptOutcome(15, partials=[5, 11]), "stream")
    assert not matches(expect, ScriptOutcome(15), "stream") and matches({"answer": 15}, ScriptOutcome(15), "stream")


def test_a_deadlines_fault_round_trips_with_its_ids_and_the_reproducer_strikes_it(tmp_path):
    """The deadlines fault keeps its ids (uint64 ones past 2**63 too), how many calls were in
    flight together and their deadline; the standalone reproducer sends them, not skips them."""
    from fuzz.values import Fault

    fault = Fault("deadlines", ids=(2**64 - 5, 17, 3, 2**40), at_once=2, deadline_us=700)
    steps = (StepRecord(1, None, "4 unary gRPC calls given up", kind=Kind.FAULT, fault=fault, got="3 answered, 1 given up"),)
    e = corpus.make_entry(SPEC, "2.51.0", "server_alive", "the server died", steps)
    corpus.write(tmp_path, e)
    assert corpus.load(tmp_path / f"{e.name}.json").steps[0].fault == fault
    script = render(e)
    assert "not replayed here" not in script and "give_up_in_flight" in runtime()


def test_a_give_up_fault_round_trips_with_its_spared_calls_and_the_reproducer_judges_them():
    """The give_up fault (streams cancelled beside spared calls) keeps every k-th call spared; the
    standalone reproducer spares the same calls and calls a spared one answered wrong, or not at
    all, a divergence, as the fuzzer does (an answer that came is judged too)."""
    from fuzz.corpus.reproducer_script import Outcome as ScriptOutcome, answered_wrong, spared
    from fuzz.values import Fault

    fault = Fault("give_up", ids=(9, 10, 11, 12, 13, 14), at_once=3, deadline_us=1000, spare_every=3)
    assert [fault.spared(i) for i in range(6)] == [False, False, True, False, False, True]
    assert not any(Fault("give_up", ids=(1, 2), at_once=2).spared(i) for i in range(2))
    steps = (StepRecord(1, None, "6 calls given up", kind=Kind.FAULT, fault=fault, got="2 answered, 4 given up"),)
    e = corpus.make_entry(SPEC, "2.51.0", "valid_is_accepted", "refused a request that must be accepted", steps)
    d = json.loads(json.dumps(corpus._step_to_json(steps[0])))
    assert corpus._fault_from_json(d["fault"]) == fault
    assert [spared(d["fault"], i) for i in range(6)] == [fault.spared(i) for i in range(6)]
    assert "not replayed here" not in render(e) and 'in ("deadlines", "give_up")' in runtime()
    came = [ScriptOutcome(status="CANCELLED", message="x"), ScriptOutcome(1), ScriptOutcome(status="INTERNAL", message="x"),
            ScriptOutcome(status="CANCELLED", message="x"), ScriptOutcome(2), ScriptOutcome(1)]
    wrong = answered_wrong({"dtype": "INT32"}, d["fault"], came)
    # the spared third came back an error, the fifth (not spared) answered 2 where 1 was due
    assert [w.split(":")[0] for w in wrong] == ["id 11", "id 13"]
    assert answered_wrong({"dtype": "INT32", "initial_sum": 7}, d["fault"], [ScriptOutcome(8)] * 6) == []


def test_an_answers_shape_round_trips_and_the_reproducer_checks_it():
    """answers_well_formed: the outcome keeps OUTPUT's shape (entries saved before have none, and
    read and write as before), and the standalone reproducer judges it as the fuzzer does."""
    from fuzz.corpus import _outcome_from_json, _outcome_to_json
    from fuzz.corpus.reproducer_script import Outcome as ScriptOutcome, well_formed

    got = Outcome(value=3, shape=(1, 2))
    assert _outcome_to_json(got)["shape"] == [1, 2]
    assert _outcome_from_json(json.loads(json.dumps(_outcome_to_json(got)))) == got
    assert "shape" not in _outcome_to_json(Outcome(value=3)) and _outcome_from_json({"value": 3}).shape is None
    req = corpus._request_to_json(Request("m", 5, 3, start=True))
    assert well_formed(req, ScriptOutcome(3, shape=[1, 1], datatype="INT32"), "INT32")
    assert well_formed(req, ScriptOutcome(3), "INT32")
    assert not well_formed(req, ScriptOutcome(3, shape=[1, 2]), "INT32")
    assert not well_formed(req, ScriptOutcome(3, shape=[1]), "INT32")
    assert not well_formed(req, ScriptOutcome(3, shape=[1, 1], datatype="INT64"), "INT32")
    assert well_formed(req, ScriptOutcome(status="INVALID_ARGUMENT", message="x", shape=[9], datatype="FP64"), "INT32")
    typed = Outcome(value=3, shape=(1, 1), datatype="INT64")
    assert _outcome_from_json(json.loads(json.dumps(_outcome_to_json(typed)))) == typed
    assert "datatype" not in _outcome_to_json(got)
