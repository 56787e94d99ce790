"""The campaign as a user drives it: external servers, bad model names, the JSON-able result."""
import inspect
import json

import pytest
from hypothesis import HealthCheck, settings

from fuzz.campaign import fuzz_model, violations_in
from fuzz.harness.engine import FuzzSettings
from fuzz.values import Kind
from fuzz.harness.server import ExternalTriton
from fuzz.spec import ContractError

# Seeded, not derandomized: derandomized examples follow the machine's source, so an edit to the
# rules could leave a tiny budget with no request at all.
TINY = settings(max_examples=2, stateful_step_count=8, derandomize=False, database=None, deadline=None,
                suppress_health_check=list(HealthCheck))


def test_fuzzing_an_external_triton(triton):
    external = ExternalTriton(triton.grpc_url, triton.http_url)
    # Seeds until one sends a request: 2 examples of 8 steps can draw only rules that find nothing
    # to do (seed 1 did, once three rules were added); every campaign must pass.
    for seed in (1, 2, 3, 4, 5):
        result, error = fuzz_model(external, "py_slot_direct_s2_i2_fp32_cser", TINY, seed=seed)
        assert error is None, str(error)
        assert result.verdict == "pass" and result.examples >= 2
        if result.requests > 0:
            break
    assert result.requests > 0
    assert result.triton_version == triton.version
    report = json.loads(json.dumps(result.to_json()))
    assert report["model"] == "py_slot_direct_s2_i2_fp32_cser" and report["verdict"] == "pass"


def test_unknown_model_is_a_clear_error(triton):
    with pytest.raises(ContractError, match="cannot read the config of model 'no_such_model'.*ready models: "):
        fuzz_model(triton, "no_such_model", TINY)


def _unless_a_capacity_race(result, error):
    """An xfail where the campaign's only findings beside the divergence are capacity breaks, which
    none of these tests is about. On CI's two loaded cores this one-slot model twice let a second
    START in while its slot was held (capacity_respected): 5 ms apart in a shrink of the
    implicit-state divergence, seen once and not replayed (stop 67), and 20 ms after the first
    START took the slot, replayed from a freshly loaded model (stop 78). Campaigns here (two
    dozen, then three more), on idle and on busy cores, never met it: a race of the server under
    load, or of our clock, that README's stop 67 and 78 notes leave open. A finding of any other
    promise still fails the test."""
    others = [f for f in result.failures if f.expected_divergence is None]
    raised = violations_in(error) if error is not None else []
    if others and all(f.invariant == "capacity_respected" for f in others) and \
            any(v.invariant == "capacity_respected" for v in raised):
        pytest.xfail(f"a capacity break on a loaded machine, not what this test is about: {error}")


def test_expected_divergence_passes_and_stays_visible(triton):
    # A fixed seed, not derandomize: derandomized examples follow the machine's source, so any
    # edit to the rules would change which programs this test runs and how far they shrink.
    result, error = fuzz_model(triton, "py_implicit_direct_s1_i1_int32_csr",
                               settings(TINY, max_examples=5, stateful_step_count=20), seed=1)
    _unless_a_capacity_race(result, error)
    assert error is None, str(error)
    assert result.verdict == "expected divergence"
    # The divergence breaks a wrong-sum promise: sums_match, and order_kept too where requests of
    # one sequence were sent at once (how the server timed a seeded program decides which came up).
    assert result.failures, result
    for failure in result.failures:
        assert failure.expected_divergence == "python-backend-drops-implicit-state"
        assert failure.invariant in ("sums_match", "order_kept"), failure.program
        # A finished shrink gets the divergence down to a START and one more request, or to a
        # START of 0 and two more (a local minimum: a START of 0 hides the dropped state from the
        # next request); a shrink stopped at its budget reports the shortest program seen by then.
        # Requests, not lines: requests sent at once get a line for each answer besides.
        if failure.shrink_stopped:
            assert failure.shrunk_steps <= 30, "\n".join(failure.program)
        elif failure.invariant == "sums_match":
            assert len(_requests(failure)) <= 3, "\n".join(failure.program)
        else:
            assert failure.shrunk_steps <= 10, "\n".join(failure.program)


def _requests(failure) -> list:
    """The steps of a failure's program that sent a request (not its answers)."""
    answers = (Kind.ANSWER, Kind.HELD_ANSWER, Kind.SHARED_ANSWER, Kind.ASIDE_ANSWER, Kind.STILL_WAITING)
    return [r for r in failure.records if r.kind not in answers and r.request is not None]


def test_past_a_divergence_taken_as_built_the_campaign_fuzzes_on(triton):
    """The Python backend drops implicit state on every build: once the campaign has seen that,
    its reference takes it as built (each answer the initial sum plus its own value) and every
    other promise is still held; taken so from the start, a campaign keeps them all."""
    key = "python-backend-drops-implicit-state"
    result, error = fuzz_model(triton, "py_implicit_direct_s1_i1_int32_csr", settings(TINY, max_examples=5,
                               stateful_step_count=30), fuzz_settings=FuzzSettings(accept={key}), seed=1)
    _unless_a_capacity_race(result, error)
    assert error is None, str(error)
    assert result.failures == () and result.requests > 20, result
    seen, error = fuzz_model(triton, "py_implicit_direct_s1_i1_int32_csr",
                             settings(TINY, max_examples=5, stateful_step_count=20), seed=1)
    _unless_a_capacity_race(seen, error)
    assert error is None, str(error)
    assert seen.failures and {f.expected_divergence for f in seen.failures} == {key} and seen.accepted == (key,)


def test_an_invariant_a_user_registers_is_fuzzed_for_and_shrunk(triton):
    """A promise of the user's own (here: no answer over 100, which any sum breaks) is judged on
    every step; its failure is found, named and shrunk like a built-in one."""
    from fuzz.checker.invariants import Invariant, register, unregister

    def over_100(rec, spec):
        got = rec.outcome
        return f"answered {got.value}" if got is not None and got.ok and got.value > 100 else None

    register(Invariant("no_answer_over_100", "no answer is over 100", judge=over_100))
    try:
        result, error = fuzz_model(triton, "py_slot_direct_s2_i2_fp32_cser",
                                   settings(TINY, max_examples=5, stateful_step_count=10), seed=1,
                                   # A shrink ends once nothing more goes; 5 s left a 7-request
                                   # program on CI's two loaded cores (once, with two new passes),
                                   # 15 s a 10-step one with two workers on them.
                                   fuzz_settings=FuzzSettings(shrink_budget_s=60))
    finally:
        unregister("no_answer_over_100")
    assert error is not None and result.verdict == "FAIL", result
    # Hypothesis keeps failures of distinct origins apart (two of this promise, seen once with two
    # workers on two cores): each is shrunk so.
    found = [f for f in result.failures if f.invariant == "no_answer_over_100"]
    assert found, result.failures
    # One request answered over 100 is the whole of it (a START with such a value), after the
    # reload a shrunk program may begin with; a crowd's request is two steps (sent held, answered).
    # Within one request of that (issue 26's bar): CI's loaded cores once left a START of 0.0 and
    # then inf, where the shrink did not fold the two into one START.
    for failure in found:
        sent = [r for r in failure.records if r.request is not None and r.kind not in (Kind.ANSWER, Kind.HELD_ANSWER)]
        assert len(sent) <= 2 and failure.shrunk_steps <= 4, failure.program


def test_a_campaign_begins_with_a_clean_round(triton, monkeypatch):
    """A campaign of a `dev` campaign's size begins with a clean round: CLEAN_EXAMPLES examples of a
    machine without the rules that leave a sequence to idle out (machine.lets_idle_out), of its
    planned examples; then the rest, with every rule. A tiny one (a test's, a seed's) has none."""
    import fuzz.campaign as campaign
    from hypothesis.stateful import RULE_MARKER

    from fuzz.generator.machine import SequenceBatcherMachine, make_machine
    from fuzz.spec import ModelSpec

    monkeypatch.setattr(campaign, "CLEAN_ROUND_S", 1e9)  # (a loaded machine's examples may take 10 s)
    model = "py_slot_direct_s2_i2_fp32_cser"
    spec = ModelSpec.fetch(triton, model)

    def rules(machine) -> set:
        return {n for n, f in inspect.getmembers(machine) if getattr(f, RULE_MARKER, None) is not None}

    every, kept = rules(make_machine(triton, spec)), rules(make_machine(triton, spec, clean=True))
    leaving = {n for n in every if getattr(vars(SequenceBatcherMachine)[n], "lets_idle_out", False)}
    assert {"let_expire", "abandon_stream"} <= leaving and kept == every - leaving, (every, kept)
    planned = settings(max_examples=5, stateful_step_count=100, derandomize=False, database=None, deadline=None,
                       suppress_health_check=list(HealthCheck))
    result, error = fuzz_model(triton, model, planned, seed=5)
    assert error is None, str(error)
    assert result.clean_examples >= campaign.CLEAN_EXAMPLES, result
    assert result.examples > result.clean_examples, (result.examples, result.clean_examples)  # then the rest
    assert result.to_json()["clean_examples"] == result.clean_examples
    tiny, _ = fuzz_model(triton, model, TINY, seed=1)
    assert tiny.clean_examples == 0 and tiny.examples >= 2


def test_a_round_begins_on_a_fresh_copy_and_the_counts_carry_over(triton, monkeypatch):
    """A budgeted campaign runs rounds of examples; one that begins FRESH_EVERY_S after its copy
    was loaded begins on a reloaded model (what it kept of earlier rounds cannot hide a bug for
    good). The server's counts start again at a reload: the campaign's batch sizes and executions
    are carried over. (Rounds of three examples, a fresh copy at every one: a machine too slow to
    finish one round in the budget says nothing, and is skipped.)"""
    import fuzz.campaign as campaign

    monkeypatch.setattr(campaign, "ROUND_EXAMPLES", 3)
    monkeypatch.setattr(campaign, "FRESH_EVERY_S", 0.0)
    model = "py_slot_direct_s1_i1_int32_csr"
    many = settings(TINY, max_examples=40, stateful_step_count=5)
    result, error = fuzz_model(triton, model, many, budget_s=10.0, seed=3)
    assert error is None, str(error)
    if result.examples <= 3:
        pytest.skip(f"inconclusive: one round in the budget ({result.examples} examples)")
    assert result.fresh_rounds >= 1, (result.examples, result.wall_s)
    since_reload = triton.executions_and_inferences(model)
    executions = sum(n for _, n in result.coverage.rows)
    assert executions > since_reload[0], ("the rounds before the last copy count too", result.coverage.rows,
                                          since_reload)
    assert result.requests >= executions, "one request an execution, on a model of one slot"
    assert result.to_json()["fresh_rounds"] == result.fresh_rounds
