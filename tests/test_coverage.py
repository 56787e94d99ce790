"""The pure parts of exploring: value edges, id families, and the coverage goals and tracker."""
import math

import attrs

from fuzz.generator.coverage import (FLAG_SHAPES, FULL_END, FULL_START, ID_STATES, INTEGER_TWINS, Coverage,
    CoverageReport, end_in_row, flag_shape, full_rows, goals_for, live_row_goals, sibling_family, twin_goal,
    twin_place, twin_places, twins_of, TOGETHER)
from fuzz.generator.edges import (FRACTION_LIMIT, ID_BANDS, STRING_FAMILIES, FloatTarget, SumTarget, band_of,
    core_targets, exact_range, id_bands, id_edges, into_band, is_fraction, power_targets, shared_low_bits,
    string_twin, swing_goals, swing_values, swings, value_edges)
from fuzz.checker.model import BatcherModel, key_of
from fuzz.spec import ModelSpec
from fuzz.generator.steering import (TWIN_STEPS, choose, open_swings, pair_layers, edge_ids, open_churn, open_depth, open_id_edges, open_rounding, open_start_goals, rounding_aim,
    open_sums, open_twins, twin_aim)
from fuzz.values import Outcome, Request

INT32 = (-(2**31), 2**31 - 1)


def spec(**kw):
    base = dict(name="m", dtype="INT32", strategy="direct", slots_per_instance=4, instances=1, idle_s=0.5,
                max_batch_size=4, controls=frozenset({"START", "READY", "CORRID"}), corrid_type="UINT64",
                implicit_state=False)
    return ModelSpec(**{**base, **kw})


def test_targets_hold_the_ends_zero_and_powers_of_two_within_range():
    core = core_targets(*INT32, floating=False)
    assert {-(2**31), -(2**31) + 1, 0, 1, -1, 2**31 - 2, 2**31 - 1} == set(core)
    powers = power_targets(*INT32)
    assert {2**24 - 1, 2**24, 2**24 + 1, -(2**16), 2**30} <= set(powers)
    assert all(INT32[0] <= v <= INT32[1] for v in powers) and 2**31 not in powers
    fp = core_targets(-(2**24), 2**24, floating=True)
    assert any(is_fraction(v) for v in fp) and all(abs(v) <= FRACTION_LIMIT for v in fp if is_fraction(v))


def test_a_drawn_target_becomes_a_plain_number_in_a_request():
    req = Request("m", 1, SumTarget(7))
    assert type(req.value) is int and req.value == 7
    assert type(Request("m", 1, FloatTarget(0.5)).value) is float


def test_a_sum_with_a_fraction_is_kept_where_float32_holds_it_exactly():
    assert exact_range(-(2**24), 2**24, fractional=False) == (-(2**24), 2**24)
    lo, hi = exact_range(-(2**24), 2**24, fractional=True)
    assert (lo, hi) == (-FRACTION_LIMIT, FRACTION_LIMIT)
    import numpy as np
    for v in (hi - 0.25, lo + 0.75):  # every quarter there survives float32
        assert float(np.float32(v)) == v


def test_value_edges_name_what_a_value_stands_on():
    lo, hi = INT32
    assert value_edges(hi, lo, hi) == ("max", "2^k-1")
    assert value_edges(lo, lo, hi) == ("min", "2^k")
    assert value_edges(0, lo, hi) == ("0",)
    assert value_edges(-1, lo, hi) == ("-1",)
    assert value_edges(65535, lo, hi) == ("2^k-1",)
    assert value_edges(-65537, lo, hi) == ("2^k+1",)
    assert value_edges(1000, lo, hi) == ()
    assert value_edges(2.5, -(2**24), 2**24) == ("fraction",)
    assert value_edges(-0.0, -(2**24), 2**24) == ("-0.0",)


def test_a_narrow_float_has_its_own_edges():
    """FP16: whole numbers exact to 2**11, quarters to 2**8; what passes 2**11 is labelled so,
    and its goals and steered sums say the same."""
    from fuzz.generator.coverage import goals_for
    from fuzz.generator.edges import wide_targets, wide_values

    assert value_edges(4096.0, -2048, 2048) == ("past 2^11",)
    assert value_edges(2048.0, -2048, 2048) == ("max", "2^k")
    assert set(core_targets(-2048, 2048, floating=True, limit=256)) >= {128.5, -128.25, 0.25}
    assert 65504.0 in wide_values(11, 65504.0) and 2.0**11 + 2 in wide_targets(11, 65504.0)
    spec = ModelSpec(name="m", dtype="FP16", strategy="direct", slots_per_instance=2, instances=1, idle_s=0.5,
                     max_batch_size=2, controls=frozenset({"START", "END", "READY"}), corrid_type=None,
                     implicit_state=False)
    goals = goals_for(spec, strings=False, expiry=True)
    assert {"input past 2^11", "sum past 2^11", "input fraction"} <= set(goals) and "input past 2^24" not in goals


def test_id_edges_and_families():
    assert id_edges(2**53 + 1) == ("id~2^53",)
    assert id_edges(2**64 - 1) == ("id~2^64",)
    assert id_edges(12345) == () and id_edges("2") == ()
    for family in STRING_FAMILIES:
        twin = string_twin("Kappa7", family)
        assert twin is not None and twin != "Kappa7" and 0 < len(twin) <= 128, family
    assert string_twin("7", "case") is None  # no letter to change
    assert len(string_twin("a" * 128, "long shared prefix")) <= 128
    assert sibling_family(1) == sibling_family(2) == "neighbours"
    assert sibling_family(2**32) == sibling_family(3 * 2**16) == "2^k apart"
    assert sibling_family(10**6) == "10^k apart"


def test_goals_follow_the_model():
    direct = goals_for(spec(), strings=False, expiry=True)
    assert [g for g in direct if g.startswith("live rows")] == [f"live rows >= {n}" for n in (1, 2, 3, 4)]
    assert "situation: expiry reuse" in direct and "twins live: case" not in direct
    assert "situation: kept alive" in direct  # a sequence in use past two idle windows
    assert "twins live: negatives" in direct
    assert "situation: long gap" in direct and "situation: long gap" not in goals_for(spec(iterations=3), strings=False,
                                                                                    expiry=True)
    assert "id~2^64" in direct and "sum max" in direct and "input fraction" not in direct
    narrow = goals_for(spec(corrid_type="INT32", dtype="FP32", max_batch_size=0), strings=True, expiry=False)
    assert "id~2^53" not in narrow and "id~2^32" in narrow and "input fraction" in narrow
    assert "twins live: embedded NUL" not in narrow and "situation: expiry reuse" not in narrow
    assert "situation: kept alive" not in narrow  # its windows are too long to wait out
    families = goals_for(spec(), strings=True, families=tuple(STRING_FAMILIES), expiry=True)
    assert "twins live: embedded NUL" in families and "twins live: other type" in families
    assert live_row_goals(spec(max_batch_size=0)) == 1
    assert not any(g.startswith("twins") for g in goals_for(spec(slots_per_instance=1), strings=True, expiry=True))
    iterative = goals_for(spec(iterations=3), strings=False, expiry=True)
    assert not any(g.startswith(("sum ", "depth", "twins")) for g in iterative)
    assert "situation: kept alive" not in iterative  # an iterative sequence is one request
    assert "situation: cancelled while running" not in direct  # where cancel_pipelined is drawn only
    assert "situation: cancelled while running" in goals_for(spec(), strings=False, expiry=True, cancels=True)
    # where give_up_beside is drawn, and the model says its executions and their live rows
    told = spec(says_execution=True, says_live_rows=True)
    assert "situation: cancelled beside a live row" in goals_for(told, strings=False, expiry=True, gives_up=True)
    assert "situation: cancelled beside a live row" not in goals_for(told, strings=False, expiry=True)
    assert "situation: cancelled beside a live row" not in goals_for(spec(), strings=False, expiry=True, gives_up=True)
    # nor where an execution carries one live row (no batch dimension)
    one_row = spec(says_execution=True, says_live_rows=True, strategy="oldest", max_batch_size=0)
    assert "situation: cancelled beside a live row" not in goals_for(one_row, strings=False, expiry=True, gives_up=True)
    # a START behind its id's END: where it is not steered around (behind_end), and not on an iterative model
    assert "situation: START behind its END" in goals_for(spec(), strings=False, expiry=True, behind_end=True)
    assert "situation: START behind its END" not in direct
    assert "situation: START behind its END" not in goals_for(spec(iterations=3), strings=False, expiry=True,
                                                             behind_end=True)
    assert "situation: START behind its END" not in goals_for(spec(slots_per_instance=1), strings=False, expiry=True,
                                                             behind_end=True)  # one slot: the START waits for the END's



def test_the_cancels_transitions_are_goals_where_their_rules_are_drawn():
    """A START cancelled in the backlog where cancel is drawn, its id sent to again where that is
    not guarded, and a witness swept over each transport cancel_pipelined sends it on."""
    plain = goals_for(spec(), strings=False, expiry=True)
    assert not any("cancelled in the backlog" in g or "witness swept" in g for g in plain)
    queued = goals_for(spec(), strings=False, expiry=True, cancels_queued=True)
    assert "situation: cancelled in the backlog" in queued and "situation: cancelled id sent to again" not in queued
    assert "situation: cancelled id sent to again" in goals_for(spec(), strings=False, expiry=True,
                                                               cancels_queued=True, again=True)
    swept = goals_for(spec(), strings=False, expiry=True, cancels=True, witness_vias=("grpc", "stream"))
    assert {"situation: witness swept over unary gRPC", "situation: witness swept on a stream"} <= set(swept)
    guarded = goals_for(spec(), strings=False, expiry=True, cancels=True, witness_vias=("grpc",))
    assert "situation: witness swept on a stream" not in guarded
    # an iterative START ends its sequence as it goes: no START ever waits in the backlog
    assert not any("witness swept" in g or "cancelled in" in g or "cancelled id" in g
                   for g in goals_for(spec(iterations=3), strings=False, expiry=True, cancels=True,
                                      witness_vias=("grpc",), cancels_queued=True, again=True))


def test_a_spared_call_whose_execution_carried_rows_that_never_answered_ran_beside_calls_given_up():
    from fuzz.harness.engine import ran_beside_given_up

    def answer(execution, rows, after_s=0.05, sent_at=0.0):
        return attrs.evolve(Outcome(5, live_rows=rows, latency_s=after_s, sent_at=sent_at), execution=execution)

    # calls sent at 0: the second given up, its stream's cancel gone by 30 ms (when its outcome came)
    gave_up = Outcome(status="CANCELLED", message="cancelled by the client", latency_s=0.03, sent_at=0.0)
    # the first ran alone (execution 1); a spared one, answered at 50 ms, ran beside it in execution 2
    assert ran_beside_given_up([answer(1, 1), gave_up, answer(2, 2)], [False, False, True], 3)
    # its execution was over before the cancel went: the cancel found nothing running
    assert not ran_beside_given_up([answer(1, 1), gave_up, answer(2, 2, after_s=0.02)], [False, False, True], 3)
    # every row of the spared call's execution answered: nothing given up ran beside it
    assert not ran_beside_given_up([answer(1, 1), answer(2, 2), answer(2, 2)], [False, False, True], 3)
    # a call given up that ran beside others, but no spared one among them
    assert not ran_beside_given_up([answer(1, 1), gave_up, answer(2, 2)], [False, False, False], 3)
    # two rounds of three: the first round's spared call ran beside its round's call given up; the
    # second round's cancel, which went after it was answered, is no cancel of its round
    later = Outcome(status="CANCELLED", message="cancelled by the client", latency_s=0.5, sent_at=0.2)
    rounds = [answer(1, 1), gave_up, answer(2, 2), answer(3, 1, sent_at=0.2), later, answer(4, 1, sent_at=0.2)]
    assert ran_beside_given_up(rounds, [False, False, True] * 2, at_once=3)
    assert not ran_beside_given_up(rounds, [False, False, True] * 2, at_once=6)  # read as one round
    # a model that does not say its executions
    assert not ran_beside_given_up([Outcome(5), gave_up, Outcome(5, live_rows=2, latency_s=0.05, sent_at=0.0)],
                                   [False, False, True], 3)


def test_a_deadline_beside_live_rows_is_steered_to_where_strikes_gave_some_calls_up_and_others_not():
    from fuzz.generator.steering import beside_deadline

    assert beside_deadline([], 1) is None  # nothing measured: the drawn deadline
    # (deadline us, given up, could be): a strike that gave up one of two is where to aim, by index
    mixed = [(0, 2, 2), (1300, 1, 2), (2600, 0, 2), (900, 2, 3)]
    assert beside_deadline(mixed, 1) == 1300 and beside_deadline(mixed, 2) == 900
    # none mixed yet: halfway between every call given up and none
    assert beside_deadline([(500, 2, 2), (2500, 0, 2)], 1) == 1500
    assert beside_deadline([(2500, 0, 2)], 3) == 1250  # (and from 0 where nothing was all given up)
    assert beside_deadline([(400, 2, 2)], 3) == 800  # no deadline late enough yet: later
    # all given up at once, none given up at once, or given up later than answered elsewhere (a
    # stalled machine): as drawn
    assert beside_deadline([(0, 2, 2)], 1) is None and beside_deadline([(0, 0, 2)], 1) is None
    assert beside_deadline([(3000, 2, 2), (1000, 0, 2)], 1) is None


def test_give_up_strikes_are_kept_for_steering_as_the_example_began():
    c = Coverage()
    c.gave_up(1000, 1, 2)
    c.gave_up(0, 0, 0)  # nothing it could give up: says nothing of where a deadline lands
    assert c.give_ups == [(1000, 1, 2)] and c.give_ups_seen == ()
    c.new_example()
    c.gave_up(2000, 0, 2)
    assert c.give_ups_seen == ((1000, 1, 2),)
    c.new_example(shrinking=True)  # a shrinking replay steers as the failing example did
    assert c.give_ups_seen == ((1000, 1, 2),)


def test_swings_are_neighbours_both_in_a_narrower_width_whose_difference_is_not():
    assert swing_goals(*INT32) == ("swing across 8 bits", "swing across 16 bits")
    assert swing_goals(-(2**63), 2**63 - 1)[-1] == "swing across 32 bits"
    assert swing_goals(0, 255) == () and swing_goals(0, 2**16 - 1) == ("swing across 8 bits",)
    # a float's range is where its whole numbers are exact: FP32 swings across 8 and 16 bits
    assert swing_goals(*spec(dtype="FP32").value_range) == ("swing across 8 bits", "swing across 16 bits")
    assert swing_goals(-(2.0**70), 2.0**70) == ()
    assert swings(5, -32768, *INT32) == ("swing across 16 bits",)
    assert swings(100, -100, *INT32) == ("swing across 8 bits",) and swings(100, -27, *INT32) == ()
    assert swings(40000, -40000, *INT32) == ()  # 40000 fits no narrower width
    assert swings(0.5, -100.0, *INT32) == ()
    # from each value, the negation and every narrower width's far end on its other side
    assert swing_values(5, *INT32) == (-5, -128, -32768)
    assert swing_values(-5, *INT32) == (5, 127, 32767)
    assert swing_values(40000, *INT32) == (-40000,)
    assert swing_values(3, 0, 2**16 - 1) == (255,)  # unsigned: no negation, the top of 8 bits
    for previous in (5, -5, 127, -128, 0):
        assert all(swings(previous, v, *INT32) or v == -previous for v in swing_values(previous, *INT32))


def test_a_swing_is_steered_to_a_width_not_swung_across_yet():
    assert open_swings(5, *INT32, here=set()) == (-128, -32768)  # the negation swings across none
    assert open_swings(5, *INT32, here={"swing across 8 bits"}) == (-32768,)
    assert open_swings(5, *INT32, here=set(), seen={"swing across 8 bits"}) == (-32768,)  # the campaign's gap first
    assert open_swings(5, *INT32, here=set(swing_goals(*INT32))) == (-5, -128, -32768)  # none open: any
    assert open_swings(40000, *INT32, here=set()) == (-40000,)  # fits no narrower width


def test_the_tracker_counts_swings_within_a_sequence_since_its_start():
    cover = Coverage(*INT32)
    cover.sent(Request("m", 7, 5, start=True), plain=True)
    cover.sent(Request("m", 8, -32768, start=True), plain=True)  # another sequence: no swing
    assert not any(g.startswith("swing") for g in cover.reached)
    cover.sent(Request("m", 8, 5, start=True), plain=True)  # a restart: its last input is 5 now
    cover.sent(Request("m", 7, -32768), plain=True)
    assert "swing across 16 bits" in cover.reached and cover.last_input[7] == -32768
    cover.sent(Request("m", 7, 1, end=True), plain=True)  # over: nothing to swing from on 7 now
    assert 7 not in cover.last_input and cover.last_input[8] == 5
    cover.new_example()
    assert cover.last_input == {}
    assert "swing across 8 bits" in goals_for(spec(), strings=False, expiry=True)


def test_the_tracker_reaches_goals_once_and_reports_the_rest_as_gaps():
    cover = Coverage(*INT32)
    cover.sent(Request("m", 2**63, 2**31 - 1), plain=True)
    cover.sent(Request("m", 5, 0, batch=2), plain=False)  # a misuse's value is no summand
    cover.answered(-1)
    cover.live_rows(inferences=10, executions=3)  # some execution ran at least 4
    cover.batch_sizes([(2, 5)], padded=True)  # under direct a batch size says nothing of live rows
    cover.depths([3, 70])
    cover.situation("backlog")
    first = dict(cover.reached)
    cover.answered(-1)
    assert cover.reached == first  # the first time is kept
    goals = goals_for(spec(), strings=False, expiry=True)
    report = cover.report(goals, rows=((2, 5),))
    reached = {g.name for g in report.goals if g.reached}
    assert {"input max", "id~2^63", "sum -1", "live rows >= 4", "depth 64", "situation: backlog"} <= reached
    assert "input 0" not in reached and "depth 256" in report.gaps
    assert report.most_live_rows == 4
    assert "gaps of the fuzzer" in report.line() and "batch sizes run 2:5" in report.line()
    again = CoverageReport.from_json(report.to_json())
    assert again == report
    assert math.isclose(report.to_json()["reached"], len(reached))


def test_goals_a_campaign_stopped_at_a_known_divergence_never_tried_are_no_gaps():
    """A string-CORRID model on a build that refuses every request that runs: the campaign stops
    at the known divergence, and what it had not reached was never tried (issue 26 item 3: a gap
    is the fuzzer's, when it tried and did not reach)."""
    cover = Coverage(*INT32)
    cover.situation("refused")
    report = cover.report(("situation: refused", "sum 0", "sum max"), stopped_at="string-corrid-control-rejected")
    assert report.gaps == () and report.unreached == ("sum 0", "sum max")
    assert "gaps of the fuzzer" not in report.line()
    assert "2 not tried: the campaign stopped at the known divergence string-corrid-control-rejected" in report.line()
    assert CoverageReport.from_json(report.to_json()) == report
    from benchmarks.coverage import goal_table, table
    from fuzz.campaign import ModelResult
    stopped = ModelResult(model="s", spec="s", triton_version="2.51.0", examples=1, steps=2, requests=3, wall_s=0.5,
                          ambiguous_waits=0, failures=(), expected_divergences=(), guards=(), coverage=report)
    full = attrs.evolve(stopped, model="f", coverage=attrs.evolve(report, stopped_at=""))
    assert "none tried past the known divergence string-corrid-control-rejected (2 goals not reached)" in table([stopped])
    assert "| sum 0 | 0/1 |" in goal_table([stopped, full])  # only the campaign that tried it counts


def test_a_goal_a_guard_kept_its_rule_from_is_left_out_and_no_gap():
    """give_up_beside on a model whose streams, cancelled in flight, kill the build
    (final-alone-cancel-crash): the guard skips the rule, and the goal it builds is reported as
    left out for the divergence, not as a gap of the fuzzer; one reached before stays reached,
    and a round counts it as seen (the swarm stops keeping its rule on for it)."""
    beside = "situation: cancelled beside a live row"
    cover = Coverage(*INT32)
    cover.guard(beside, "final-alone-cancel-crash")
    cover.guard(beside, "another")  # the first reason stays
    cover.new_round()
    assert beside in cover.round_seen
    report = cover.report((beside, "sum 0"))
    assert report.guarded == ((beside, "final-alone-cancel-crash"),)
    assert report.gaps == ("sum 0",) and report.unreached == (beside, "sum 0")
    assert f"left out by a guard (this build dies of or diverges on the rule that builds it): {beside} " \
           f"(final-alone-cancel-crash)" in report.line()
    assert CoverageReport.from_json(report.to_json()) == report
    from benchmarks.coverage import goal_table, table
    from fuzz.campaign import ModelResult
    result = ModelResult(model="g", spec="g", triton_version="2.51.0", examples=1, steps=2, requests=3, wall_s=0.5,
                         ambiguous_waits=0, failures=(), expected_divergences=(), guards=(), coverage=report)
    assert f"sum 0; left out by a guard: {beside} (final-alone-cancel-crash)" in table([result])
    assert f"| {beside} | 0/0 |" in goal_table([result]), "no campaign tried it"
    cover.situation("cancelled beside a live row")
    assert cover.report((beside,)).guarded == (), "reached: nothing left out"


def test_a_campaigns_coverage_travels_with_its_result():
    """How an xdist worker hands its results to the controller: through JSON."""
    from fuzz.campaign import ModelResult

    cover = Coverage(*INT32)
    cover.answered(0)
    report = cover.report(("sum 0", "sum max"), rows=((1, 3),))
    result = ModelResult(model="m", spec="m: direct", triton_version="2.51.0", examples=1, steps=2, requests=3,
                         wall_s=0.5, ambiguous_waits=0, failures=(), expected_divergences=(), guards=(),
                         coverage=report)
    again = ModelResult.from_json(result.to_json())
    assert again.coverage == report and again.coverage.gaps == ("sum max",)


# -- steering (fuzz/generator/steering.py) -----------------------------------------------------------------


def test_steering_chooses_among_what_is_open_and_nothing_when_all_is_reached():
    assert choose((), 5) is None
    assert choose(("a", "b", "c"), 4) == "b"


def test_open_sums_are_the_targets_whose_edges_the_example_has_not_reached():
    lo, hi = INT32
    targets = core_targets(lo, hi, floating=False)
    # every target on an edge is open at first (2**31 - 2, beside the max, stands on none)
    assert set(open_sums(targets, set(), lo, hi)) == {t for t in targets if value_edges(t, lo, hi)} != set()
    reached = {f"{where} {e}" for where in ("sum", "input") for e in ("min", "2^k", "0", "max", "2^k-1")}
    still = open_sums(targets, reached, lo, hi)
    assert 0 not in still and lo not in still and hi not in still
    assert 1 in still and -1 in still  # "+1" and "-1" are still open
    # an edge reached as a sum but never as an input is still open
    assert 0 in open_sums(targets, reached - {"input 0"}, lo, hi)


def test_open_twins_are_the_kinds_not_yet_live_at_once_each_once():
    kinds = (("2^k apart", "past 2^53"), ("neighbours", "below 2^32"), ("other type", None), ("other type", None),
             ("case", None))
    assert open_twins(kinds, set()) == (kinds[0], kinds[1], kinds[2], kinds[4])
    aligned = {f"twins live: aligned, to 2^{k}" for k in (8, 16, 32)}
    assert open_twins(kinds, {"twins live: other type", "twins live: 2^k apart, past 2^53"} | aligned) == (kinds[1], kinds[4])


def test_ids_2k_apart_are_steered_widest_first():
    """Ids that share their low 63 bits are one key to a cut of any width (8, 16, 32, or a width
    no goal names, e.g. a CORRID packed in 48 bits): the first steered pair is the widest open."""
    widths = tuple(("2^k apart", p) for p in twin_places("2^k apart", 64))
    kinds = widths + (("neighbours", "below 2^32"),)
    assert open_twins(kinds, set()) == (("2^k apart", "by 2^63"), ("neighbours", "below 2^32"))
    aligned = {f"twins live: aligned, to 2^{k}" for k in (8, 16, 32)}
    assert open_twins(kinds, {"twins live: 2^k apart, by 2^63"} | aligned) == \
        (("2^k apart", "by 2^32"), ("neighbours", "below 2^32"))
    # the campaign's gaps first: with 2^63 reached there, the widest the campaign lacks
    assert open_twins(widths, set(), frozenset({"twins live: 2^k apart, by 2^63"} | aligned)) == (("2^k apart", "by 2^32"),)
    # a width reached stays open while an alignment that rides on it (aligned_twin) is not: once
    # the campaign had every width, the aligned pairs were never made (9 of 21 models' gap)
    every_width = {twin_goal(*k) for k in widths}
    assert open_twins(kinds, every_width, frozenset(every_width)) == (("2^k apart", "by 2^63"), ("neighbours", "below 2^32"))
    assert open_twins(widths, every_width | {"twins live: aligned, to 2^32"}, frozenset(every_width)) == \
        (("2^k apart", "by 2^63"),)  # to 2^16 and 2^8 ride on the widest too
    assert open_twins(kinds, every_width | aligned, frozenset(every_width)) == (("neighbours", "below 2^32"),)
    # not where the older id is given (a sibling of a live id cannot be moved to an alignment)
    assert open_twins(kinds, every_width, frozenset(every_width), riders=False) == (("neighbours", "below 2^32"),)


def test_steering_takes_what_the_campaign_lacks_first_among_what_the_example_lacks():
    kinds = (("2^k apart", "past 2^53"), ("neighbours", "below 2^32"), ("case", None))
    campaign = {"twins live: 2^k apart, past 2^53", "twins live: case"} | {f"twins live: aligned, to 2^{k}" for k in (8, 16, 32)}
    assert open_twins(kinds, set(), frozenset(campaign)) == (kinds[1],)
    # what the campaign has is still a choice where the example lacks nothing else
    assert open_twins(kinds, {"twins live: neighbours, below 2^32"}, frozenset(campaign)) == (kinds[0], kinds[2])
    lo, hi = -(2**31), 2**31 - 1
    targets = core_targets(lo, hi, False) + power_targets(lo, hi)
    reached = {f"{side} {e}" for t in targets if t != hi for e in value_edges(t, lo, hi) for side in ("sum", "input")}
    assert set(open_sums(targets, set(), lo, hi, frozenset(reached))) == {hi}


def test_edge_ids_are_the_ids_at_each_id_edge_the_corrid_holds():
    special = (1, 2, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**53, 2**63, 2**64 - 1)
    wide = edge_ids(special, 64)
    assert wide == {"id~2^31": [2**31 - 1, 2**31], "id~2^32": [2**32 - 1, 2**32], "id~2^53": [2**53],
                    "id~2^63": [2**63], "id~2^64": [2**64 - 1]}
    # a 32-bit CORRID holds no id past 2^32 - 1: only the edges below it are steered onto
    assert edge_ids(special, 32) == {"id~2^31": [2**31 - 1, 2**31], "id~2^32": [2**32 - 1]}
    assert all(goal in id_edges(i) for goal, ids in wide.items() for i in ids)


def test_id_edges_are_steered_onto_only_where_neither_the_example_nor_the_campaign_has_them():
    by_goal = edge_ids((2**31, 2**32, 2**53, 2**64 - 1), 64)
    assert open_id_edges(by_goal, set(), frozenset()) == ("id~2^31", "id~2^32", "id~2^53", "id~2^64")
    # an edge id is the same id in every example: steered once a campaign, not once an example
    assert open_id_edges(by_goal, {"id~2^32"}, frozenset({"id~2^31", "id~2^53"})) == ("id~2^64",)
    assert open_id_edges(by_goal, {"id~2^64"}, frozenset({"id~2^31", "id~2^32", "id~2^53"})) == ()


def test_a_steered_start_aims_at_a_start_shape_and_id_state_the_example_lacks():
    assert open_start_goals(("fresh", "done"), set()) == (("START", "fresh"), ("START", "done"),
                                                          ("START+END", "fresh"), ("START+END", "done"))
    here = {"request: START on a fresh id", "request: START+END on a fresh id", "request: START on a done id"}
    assert open_start_goals(("fresh", "live", "done"), here) == (("START", "live"), ("START+END", "live"),
                                                                 ("START+END", "done"))
    # the campaign's gaps first; its other open aims where it has none left
    campaign = frozenset({"request: START on a live id", "request: START+END on a live id"})
    assert open_start_goals(("fresh", "live", "done"), here, campaign) == (("START+END", "done"),)
    assert open_start_goals(("live",), here, campaign) == (("START", "live"), ("START+END", "live"))
    # steering onto the campaign's gaps only: nothing, once the campaign has every one of them
    assert open_start_goals(("live",), here, campaign, gaps_only=True) == ()
    assert open_start_goals(("fresh", "live", "done"), here, campaign, gaps_only=True) == (("START+END", "done"),)
    kinds = (("neighbours", "below 2^32"), ("case", None))
    assert open_twins(kinds, set(), frozenset({"twins live: case"}), gaps_only=True) == (kinds[0],)
    assert open_twins(kinds, set(), frozenset(twin_goal(*k) for k in kinds), gaps_only=True) == ()
    assert open_start_goals((), set()) == ()


def test_twins_are_told_from_any_two_ids_whichever_rule_started_them():
    assert twins_of(5, 5 + 2**32, 64) == (("2^k apart", "by 2^32"),)
    assert twins_of(7, 7 + 3 * 2**16, 64) == (("2^k apart", "by 2^16"),)
    assert twins_of(2**60, 2**60 - 1, 64) == (("neighbours", "past 2^53"),)  # either way round
    assert twins_of(10, 10 + 10**6, 64) == (("10^k apart", "below 2^32"),)
    # round a 32-bit CORRID; and as numbers 2^32 - 1 apart, a multiple of 2^16 - 1
    assert twins_of(2**32 - 1, 0, 32) == (("2^k-1 apart", "by 2^16-1"), ("neighbours", "below 2^32"))
    assert twins_of(5, 5 + 2**3, 64) == twins_of(5, 123456789, 64) == ()  # 2^3: no goal; strangers
    assert twins_of(5, 2**64 - 5, 64) == twins_of(2**32 - 9, 9, 32) == (("negatives", None),)  # k and -k
    assert twins_of(5, 2**32 - 5, 64) == ()  # negatives only on the width the model reads
    assert twins_of(123, "123", 64) == twins_of("123", 123, 64) == (("other type", None),)
    # one the other times a power of ten (or two): alike but for trailing zeros, either way round
    assert twins_of(7, 70, 64) == twins_of(7000, 7, 64) == twins_of(9, 18, 64) == (("scaled", None),)
    assert twins_of(7, 7 * 10**4, 64) == twins_of(7, 21, 64) == ()
    assert ("leading space", None) in twins_of("abc", " abc", 64)
    assert ("case", None) in twins_of("Seq7", "sEQ7", 64) and twins_of("Seq7", "Seq8", 64) == ()
    assert twins_of(42, "42 ", 64) == (("trailing space", None),)  # an integer as its decimal text
    tracker = Coverage()
    tracker.started_beside(5 + 2**63, [5, "x", 6 + 2**63], 64)
    assert tracker.here == {"twins live: 2^k apart, by 2^63", "twins live: neighbours, past 2^53"}


def test_integer_twins_are_goals_once_per_band_the_corrid_can_hold():
    assert id_bands(32) == ("below 2^32",) and id_bands(64) == tuple(ID_BANDS)
    assert band_of(5) == "below 2^32" and band_of(2**32) == "2^32 to 2^53" and band_of(2**64 - 1) == "past 2^53"
    assert band_of("5") is None
    for band in ID_BANDS:
        for seq_id in (1, 2**31, 2**40 + 7, 2**53 + 1, 2**64 - 1):
            assert band_of(into_band(seq_id, band)) == band
    assert into_band(2**60, "past 2^53") == 2**60 and into_band(7, "past 2^53") != into_band(8, "past 2^53")
    wide = [g for g in goals_for(spec(), strings=False, expiry=True) if g.startswith("twins")]
    assert len(wide) == 4 + 2 * 3 + 4 + 3 + 2 and "twins live: neighbours, past 2^53" in wide  # + negatives, scaled
    narrow = [g for g in goals_for(spec(corrid_type="INT32"), strings=False, expiry=True) if g.startswith("twins")]
    # a 32-bit CORRID's widest: all but its top bit (ids 2^31 apart), one key to a cut of any width
    assert narrow == ["twins live: 2^k apart, by 2^8", "twins live: 2^k apart, by 2^16", "twins live: 2^k apart, by 2^31",
                      "twins live: neighbours, below 2^32", "twins live: 10^k apart, below 2^32",
                      "twins live: 2^k-1 apart, by 2^16-1", "twins live: 2^k-1 apart, by 2^31-1",
                      "twins live: aligned, to 2^8", "twins live: aligned, to 2^16", "twins live: negatives",
                      "twins live: scaled"]
    assert tuple(TWIN_STEPS) + ("aligned",) == INTEGER_TWINS  # aligned ids ride on ids 2^k apart


def test_aligned_ids_are_twins_at_the_alignment_both_have():
    """Ids whose low 8, 16 or 32 bits are all 0 (what a model reading a zero low byte as "no id"
    makes one key): twins at the lesser alignment of the two. Steering aims at them beside ids
    2^k apart by as many bits (no turns of their own): the older id moves to exactly that
    alignment, and each step of that place keeps its twin aligned too."""
    from fuzz.generator.edges import aligned_place, into_place, stands_at
    from fuzz.generator.steering import aligned_twin, twin_aim
    assert twin_places("aligned", 64) == ("to 2^8", "to 2^16", "to 2^32") and twin_places("aligned", 32)[-1] == "to 2^16"
    assert aligned_place(7 * 2**8) == "to 2^8" and aligned_place(2**40) == "to 2^32" and aligned_place(2**7) is None
    assert aligned_place(0) is None and aligned_place("256") is None
    assert ("aligned", "to 2^8") in twins_of(3 * 2**8, 2**20, 64) and ("aligned", "to 2^16") in twins_of(2**16, 2**40, 64)
    assert not [t for t in twins_of(2**8 + 1, 2**9, 64) if t[0] == "aligned"]
    for place in twin_places("aligned", 64):
        k = place.removeprefix("to 2^")
        assert aligned_twin(("2^k apart", f"by 2^{k}"), here=set()) == place
        # that one reached: the next narrower alignment open rides on it (its twin shares those bits too)
        narrower = [p for p in twin_places("aligned", 64) if int(p.removeprefix("to 2^")) < int(k)]
        assert aligned_twin(("2^k apart", f"by 2^{k}"), here={f"twins live: aligned, {place}"}) == \
            (narrower[-1] if narrower else None)
        base = into_place(0x123456789ABCDEF1, place)
        assert stands_at(base, place) and not stands_at(base + 1, place)
        _, steps = twin_aim("2^k apart", f"by 2^{k}", 64)
        assert steps and all(("aligned", place) in twins_of(base, base + s, 64) for s in steps)
    assert aligned_twin(("2^k apart", "by 2^63"), set()) == "to 2^32"  # the widest alignment below 63 bits
    assert aligned_twin(("2^k apart", "by 2^63"), {f"twins live: aligned, {p}" for p in twin_places("aligned", 64)}) is None
    assert aligned_twin(("neighbours", "below 2^32"), set()) is None
    assert stands_at(5, "below 2^32") and into_place(5, "below 2^32") == 5  # a band, as before


def test_ids_2k_apart_are_goals_once_per_width_of_low_bits_they_share():
    assert twin_places("2^k apart", 64) == ("by 2^8", "by 2^16", "by 2^32", "by 2^63")
    assert shared_low_bits(2**63) == 63 and shared_low_bits(3 * 2**32) == 32 and shared_low_bits(2**20) == 16
    assert shared_low_bits(2**3) is None and shared_low_bits(0) is None
    assert twin_places("2^k apart", 32) == ("by 2^8", "by 2^16", "by 2^31") and shared_low_bits(2**31, 32) == 31
    from fuzz.generator.steering import TWIN_STEPS, twin_aim
    for bits in (32, 64):  # every place steering may aim at has a step that makes it
        for family in TWIN_STEPS:
            for place in twin_places(family, bits):
                assert twin_aim(family, place, bits)[1], (bits, family, place)
    assert twin_place("2^k apart", 5, 5 + 2**63, 64) == "by 2^63"
    assert twin_place("2^k apart", 2**63 + 5, 5, 64) == "by 2^63"  # the distance modulo the width
    assert twin_place("2^k apart", 5, 13, 64) is None
    assert twin_place("neighbours", 2**60, 2**60 + 1, 64) == "past 2^53"
    # every place has a steered step that makes it, and only such steps
    for bits in (32, 64):
        for place in twin_places("2^k apart", bits):
            band, steps = twin_aim("2^k apart", place, bits)
            assert band is None and steps
            assert {twin_place("2^k apart", 7, 7 + s, bits) for s in steps} == {place}
    assert twin_aim("neighbours", "past 2^53", 64) == ("past 2^53", [1, 2])


def test_ids_2k_minus_1_apart_are_goals_once_per_mersenne_modulus_as_numbers():
    """What a key reduced modulo 2^k - 1 makes one (Python's hash of an int: 2^61 - 1): the ids
    apart by a multiple of it as numbers, not modulo the CORRID's width."""
    from fuzz.generator.coverage import MERSENNE
    from fuzz.generator.edges import into_place, stands_at
    from fuzz.generator.machine import sibling
    assert twin_places(MERSENNE, 64) == ("by 2^16-1", "by 2^31-1", "by 2^32-1", "by 2^61-1")
    assert twins_of(1, 2**61, 64) == ((MERSENNE, "by 2^61-1"),)  # hash(1) == hash(2**61)
    assert twins_of(5, 5 + 2 * (2**31 - 1), 64) == ((MERSENNE, "by 2^31-1"),)
    assert twin_place(MERSENNE, 9, 9 + 2**32 - 1, 64) == "by 2^32-1"  # the widest modulus that divides
    assert twin_place(MERSENNE, 9, 9 + 2**61 - 1 - 2**64, 64) is None  # a wrap moves them 2^64: no twins
    assert sibling_family(2**61 - 1) == MERSENNE
    for bits in (32, 64):
        for place in twin_places(MERSENNE, bits):
            band, steps = twin_aim(MERSENNE, place, bits)
            assert {twin_place(MERSENNE, 7, 7 + s, bits) for s in steps} == {place}
            # the base moved so that its twin's halves fold alike by XOR (Long.hashCode's fold, at 2^32)
            step, k = steps[0], int(place.removeprefix("by 2^").removesuffix("-1"))
            for drawn in (0x23456789ABCDEF0 % 2**(bits - 1), 2**k, 6, 2**(bits - 1) - 2):
                base = into_place(drawn, band)
                twin = sibling(base, step, bits)
                assert stands_at(base, band) and twin_place(MERSENNE, base, twin, bits) == place, (place, drawn)
                assert base >= 2**(k - 1), (place, drawn)  # not a small id every example shares
                fold = lambda i: (i & (2**k - 1)) ^ (i >> k)  # noqa: E731
                assert fold(base) == fold(twin), (place, hex(base))
    assert not stands_at(6, "halves fold alike at 2^16") and not stands_at(1 + 2**16, "halves fold alike at 2^16")
    # a sibling a Mersenne step away goes down where it would wrap; a power of two's still wraps
    assert sibling(2**64 - 5, 2**61 - 1) == 2**64 - 5 - (2**61 - 1)
    assert sibling(2**64 - 5, 2**32) == 2**32 - 5 and sibling(2**16, 2**16 - 1, 16) == 1


def test_requests_are_goals_by_flags_and_where_their_id_stood():
    assert [flag_shape(s, e) for s, e in ((1, 0), (1, 1), (0, 0), (0, 1))] == list(FLAG_SHAPES)
    goals = goals_for(spec(), strings=False, expiry=True)
    assert "request: START+END on a live id" in goals and "request: no flag on a fresh id" in goals
    assert sum(g.startswith("request: ") for g in goals) == len(FLAG_SHAPES) * len(ID_STATES)
    iterative = goals_for(spec(iterations=3), strings=False, expiry=True)
    assert "request: START on a done id" in iterative and not any(g.endswith("on a live id") for g in iterative)


def test_every_steered_integer_step_makes_twins_of_its_family():
    for family, steps in TWIN_STEPS.items():
        assert {sibling_family(s) for s in steps} == {family}


def test_a_steered_run_goes_one_past_the_deepest_campaign_gap():
    assert open_depth(deepest=0, current=0) == 1025  # one run passes every depth, and a 10-bit counter's wrap
    assert open_depth(deepest=10, current=3, seen={"depth 8", "depth 1024"}) == 254  # 3 + 254 = 257 requests
    assert open_depth(deepest=300, current=0) == 1025  # once a campaign
    assert open_depth(deepest=300, current=0, seen={"depth 1024"}) is None
    assert open_depth(deepest=2000, current=0) is None
    assert open_depth(deepest=63, current=2000, seen={"depth 8"}) == 1  # already past it: one more request
    every = {"depth 8", "depth 64", "depth 256", "depth 1024"}
    assert open_depth(deepest=10, current=3, seen=every) == 62  # then the example's, shallowest first: one past 64


def test_a_float_sum_rounds_where_it_is_not_the_exact_sum_of_what_was_sent():
    fp32, fp16 = spec(dtype="FP32"), spec(dtype="FP16")
    assert not fp32.rounds(2.0**24 - 2, 1) and fp32.rounds(2.0**24 + 2, 1) and fp32.rounds(2.0**24 + 2, 3)
    assert not fp32.rounds(2.0**24 + 2, 2)  # an even step past 2**24 is exact
    assert fp32.rounds(0.1, 0.25) and not fp32.rounds(0.5, 0.25)  # an inexact fraction's sum rounds, quarters not
    assert fp32.rounds(3e38, 3e38) and not fp32.rounds(math.inf, 1) and not fp32.rounds(math.nan, 1)
    assert fp16.rounds(2050.0, 1) and not fp16.rounds(2046.0, 1)  # FP16's whole numbers are exact to 2**11
    assert fp32.rounds(2.0**24 + 4, 1)  # a tie (spacing 2) rounds to even: counted, the value could move it
    assert not fp32.rounds(3.4e38, 15) and not spec(dtype="FP64").rounds(1.7e308, 15)  # absorbed at any precision
    assert not spec().rounds(2**31 - 1, 1)  # an integer sum never rounds (the generator keeps it in range)


def test_the_tracker_counts_runs_of_sums_that_rounded_one_after_another_in_a_sequence():
    c = Coverage(rounds=spec(dtype="FP32").rounds)
    total = 2.0**24 + 2
    c.summed(Request("m", 1, total, start=True), total)
    c.summed(Request("m", 2, 5.0, start=True), 5.0)
    for i in range(7):
        total = float(spec(dtype="FP32").add(total, 1.0))  # an odd step: rounds every time
        c.summed(Request("m", 1, 1.0), total)
        c.summed(Request("m", 2, 1.0), 6.0 + i)  # exact: no run on the other sequence
    assert c.longest_rounding == 7 and "rounding run 8" not in c.reached
    c.summed(Request("m", 1, 1.0), float(spec(dtype="FP32").add(total, 1.0)))
    assert c.longest_rounding == 8 and "rounding run 8" in c.here and "rounding run 32" not in c.reached
    c.summed(Request("m", 1, 2.0), total + 2)  # an even step is exact: the run is over
    assert c.rounding[1] == 0
    c.summed(Request("m", 1, 1.0, end=True), total + 3)
    assert 1 not in c.rounding and 1 not in c.last_sum  # over with its END
    c.new_example()
    assert c.longest_rounding == 0 and not c.rounding
    plain = Coverage()
    plain.summed(Request("m", 1, 1.0), 1.0)  # nothing counted where the model does not round (rounds None)
    assert not plain.rounding and not plain.last_sum and plain.longest_rounding == 0


def test_goals_for_rounding_runs_are_a_float_models_whose_sums_go_on():
    def rounding(**kw):
        return [g for g in goals_for(spec(**kw), strings=False, expiry=True) if g.startswith("rounding run")]
    assert rounding(dtype="FP32") == ["rounding run 8", "rounding run 32"] == rounding(dtype="FP16")
    assert rounding() == [] and rounding(dtype="FP32", iterations=3) == []  # an iterative START's sums are its multiples


def test_a_steered_rounding_runs_first_request_lands_past_the_exact_range_from_any_sum():
    for dtype in ("FP16", "FP32", "FP64"):
        m = spec(dtype=dtype)
        lo, hi = m.value_range
        bases = [0, 1, -1, 3, -3, 0.25, -13.5, 1001, -1001, lo, hi, lo + 1, hi - 1, hi // 2 + 1, -(hi // 2) - 1]
        for base in bases:
            for sign in (0.5, -0.5):
                target = rounding_aim(m, float(base), sign)
                landed = m.add(float(base), target - float(base))
                assert not lo <= landed <= hi and abs(landed) < 4 * hi, (dtype, base, sign, target, landed)
                assert m.rounds(landed, 1) or m.rounds(landed, 3)  # and odd steps from there round


def test_a_steered_rounding_run_goes_one_past_the_longest_open_run():
    assert open_rounding(longest=0, current=0) == 33  # one run passes both levels
    assert open_rounding(longest=0, current=5, seen={"rounding run 32"}) == 4  # 5 + 4 = 9 sums that round
    assert open_rounding(longest=40, current=0, seen=set()) is None  # the example has both
    assert open_rounding(longest=10, current=3, seen={"rounding run 8", "rounding run 32"}) == 30  # the example lacks 32


def test_a_steered_churn_runs_one_past_the_largest_open_churn_goal():
    every = {"churn 16", "churn 128", "churn 1024"}
    assert open_churn(most=0, current=0) == 1025  # one churn passes every level
    assert open_churn(most=20, current=5, seen={"churn 16", "churn 1024"}) == 124  # 5 + 124 = 129 started beside it
    assert open_churn(most=20, current=5, seen=every) == 124  # the example lacks it
    assert open_churn(most=20, current=5, seen=every, gaps_only=True) is None
    assert open_churn(most=200, current=0, seen=every) is None  # 1024 only once a campaign
    assert open_churn(most=20, current=20, seen=every) == 109  # the example has 16 already


def test_churn_counts_new_sequences_started_during_a_life_that_then_went_on():
    m = BatcherModel(ModelSpec(name="m", dtype="INT32", strategy="direct", slots_per_instance=2, instances=1,
                               idle_s=1.0, max_batch_size=2, controls=frozenset({"START", "END", "READY", "CORRID"}),
                               corrid_type="UINT64", implicit_state=False), margin_s=0.1)
    m.expect(Request("m", 1, 1, start=True), 0.0)
    for i in range(20):
        m.expect(Request("m", 100 + i, 1, start=True, end=True), 0.01)
    m.expect(Request("m", 1, 1, start=True), 0.02)  # a restart: its life begins again
    m.expect(Request("m", 200, 1, start=True, end=True), 0.03)
    assert m.churn == 0  # nothing went on yet
    m.expect(Request("m", 1, 1), 0.04)
    assert m.churn == 1 and m.churn_of(key_of(1)) == 1
    for i in range(3):  # whole sequences given up by their clients (give_up): they may never have started
        m.expect(Request("m", 300 + i, 1, start=True, end=True), 0.05)
    m.given_up(3)
    assert m.churn_of(key_of(1)) == 1
    c = Coverage()
    c.churned(130)
    assert "churn 128" in c.reached and "churn 1024" not in c.reached


def test_the_tracker_keeps_each_examples_own_goals_apart_from_the_campaigns():
    c = Coverage()
    c.hit("input 0")
    c.depths([70])
    assert {"input 0", "depth 8", "depth 64"} <= c.here
    c.new_example()
    assert c.here == set() and "input 0" in c.reached and "depth 64" in c.reached
    assert c.seen == {"input 0", "depth 8", "depth 64"}  # what steering takes the campaign to have
    c.hit("sum 0")
    c.new_example(shrinking=True)  # a failure is shrinking: its replays steer as it did
    assert "sum 0" in c.reached and "sum 0" not in c.seen


def test_a_start_in_a_full_execution_is_a_goal_only_where_the_model_says_its_rows():
    goal = f"situation: {FULL_START}"
    assert goal not in goals_for(spec(), strings=False, expiry=True)  # statistics only bound live rows
    said = spec(says_live_rows=True)
    assert goal in goals_for(said, strings=False, expiry=True)
    assert goal not in goals_for(spec(says_live_rows=True, max_batch_size=1), strings=False, expiry=True)  # one row
    iterative = goals_for(spec(says_live_rows=True, iterations=3), strings=False, expiry=True)
    assert goal not in iterative and f"situation: {FULL_END}" in iterative  # no START while one runs
    cover = Coverage(*INT32, full_rows=full_rows(said))
    cover.rows_said(4, start=False)  # full, but no START in it
    cover.rows_said(3, start=True)  # a START, but a row short
    assert "live rows >= 4" in cover.reached and goal not in cover.reached
    cover.rows_said(4, start=True)
    assert goal in cover.reached


def test_an_end_in_a_full_execution_is_a_goal_beside_the_start_in_one():
    goal = f"situation: {FULL_END}"
    assert goal not in goals_for(spec(), strings=False, expiry=True)
    assert goal in goals_for(spec(says_live_rows=True), strings=False, expiry=True)
    cover = Coverage(*INT32, full_rows=full_rows(spec(says_live_rows=True)))
    cover.rows_said(4, start=True)  # a full execution, a START in it and no END
    cover.rows_said(3, start=False, end=True)  # an END a row short
    assert goal not in cover.reached
    cover.rows_said(4, start=False, end=True)
    assert goal in cover.reached and f"situation: {FULL_START}" in cover.reached


def test_an_end_in_each_row_of_a_full_execution_is_a_goal_where_the_model_says_each_requests_row():
    said = spec(says_live_rows=True, says_row=True)
    goals = goals_for(said, strings=False, expiry=True)
    assert [g for g in goals if "END in row" in g] == [f"situation: {end_in_row(k)}" for k in range(4)]
    assert not [g for g in goals_for(spec(says_live_rows=True), strings=False, expiry=True) if "END in row" in g]
    cover = Coverage(*INT32, full_rows=full_rows(said))
    cover.rows_said(4, start=False, end=True)  # an END in a full execution, its row not said
    cover.rows_said(3, start=False, end=True, row=0)  # a row short
    cover.rows_said(4, start=False, end=False, row=1)  # no END
    assert not [g for g in cover.reached if "END in row" in g] and f"situation: {FULL_END}" in cover.reached
    cover.rows_said(4, start=False, end=True, row=2)
    assert [g for g in cover.reached if "END in row" in g] == [f"situation: {end_in_row(2)}"]


def test_padding_rows_before_and_between_live_rows_are_goals_under_direct_where_the_model_says_its_rows():
    """Under direct a slot with nothing to run is a padding row: a live row past the execution's
    live count had one before it (one answer shows it); a pad between two live rows shows once
    every live row of the execution answered, their rows spanning more than their count. Goals
    only under direct, where the model says its rows (and, for the hole, its executions)."""
    from fuzz.generator.coverage import PAD_BEFORE_LIVE, PAD_BETWEEN_LIVE

    before, between = f"situation: {PAD_BEFORE_LIVE}", f"situation: {PAD_BETWEEN_LIVE}"
    said = spec(says_live_rows=True, says_row=True, says_execution=True)
    goals = goals_for(said, strings=False, expiry=True)
    assert before in goals and between in goals
    assert between not in goals_for(spec(says_live_rows=True, says_row=True), strings=False, expiry=True)
    assert before not in goals_for(spec(says_live_rows=True, says_row=True, says_execution=True, strategy="oldest"),
                                   strings=False, expiry=True)
    assert before not in goals_for(spec(says_live_rows=True), strings=False, expiry=True)
    two = goals_for(spec(says_live_rows=True, says_row=True, says_execution=True, slots_per_instance=2),
                    strings=False, expiry=True)
    assert before in two and between not in two
    cover = Coverage(*INT32)
    cover.rows_said(2, start=False, row=1)  # rows 0 and 1 live
    cover.rows_said(1, start=False, row=0)
    assert before not in cover.reached
    cover.rows_said(1, start=False, row=1)  # row 0 a pad
    assert before in cover.reached
    cover.ran_in(5, "a", "no flag", 0, 2)
    cover.ran_in(6, "c", "no flag", 2, 2)  # another execution's
    cover.ran_in(7, "a", "no flag", 0, 3)
    cover.ran_in(7, "b", "no flag", 2, 3)  # row 1 not answered yet
    assert between not in cover.reached
    cover.ran_in(7, "c", "no flag", 1, 3)  # rows 0-2, all live
    cover.ran_in(8, "d", "no flag", 1, 2)
    cover.ran_in(8, "e", "no flag", 2, 2)  # rows 1 and 2: the pad before them, none between
    assert between not in cover.reached
    cover.ran_in(5, "c", "no flag", 2, 2)  # rows 0 and 2: row 1 a pad between them
    assert between in cover.reached
    mixed = Coverage(*INT32)  # answers under one serial that disagree on their execution's live rows
    mixed.ran_in(3, "a", "no flag", 0, 2)
    mixed.ran_in(3, "b", "no flag", 2, 3)
    mixed.ran_in(4, "a", "no flag", 0, 2)
    mixed.ran_in(4, "b", "no flag", 0, 2)  # one row said twice
    assert between not in mixed.reached


def test_flags_together_are_what_one_execution_answered_for_two_sequences():
    """Answers with one execution serial ran together: each pair of sequences in it reaches the
    goal of their two flag shapes; a sequence beside itself, or answers of other executions, none."""
    from fuzz.generator.coverage import Coverage, together_goal, together_goals

    cov = Coverage()
    cov.ran_in(7, "a", "START")
    cov.ran_in(8, "b", "END")  # another execution
    assert not any(g.startswith("flags together") for g in cov.reached)
    cov.ran_in(7, "b", "END")
    cov.ran_in(7, "c", "END")
    assert {g for g in cov.reached if g.startswith("flags together")} == \
        {together_goal("END", "START"), together_goal("END", "END")} == \
        {"flags together: START beside END", "flags together: END beside END"}
    spec = ModelSpec(name="m", dtype="INT32", strategy="direct", slots_per_instance=2, instances=1, idle_s=0.5,
                     max_batch_size=2, controls=frozenset({"START", "END", "READY"}), corrid_type=None,
                     implicit_state=False, says_execution=True)
    assert len(together_goals(spec)) == 10
    assert together_goals(attrs.evolve(spec, max_batch_size=0)) == ()  # one request an execution
    assert together_goals(attrs.evolve(spec, says_execution=False)) == ()


def test_live_rows_never_count_past_what_one_execution_can_carry():
    # statistics read while an execution's requests were counted and the execution not yet: a
    # mean of 2 on a model of one row (seen around a crowd) is no execution of two rows
    cover = Coverage(*INT32)
    cover.row_limit = 1
    assert cover.live_rows(inferences=3, executions=2) == 1
    assert "live rows >= 2" not in cover.reached and cover.most_live_rows == 1
    cover.row_limit = 0  # unknown: the mean, as read
    assert cover.live_rows(inferences=3, executions=2) == 2


def test_a_steered_pair_of_flags_runs_together_in_either_alignment_where_a_shape_can_repeat():
    # (restart layers, end layer) of the first and second sequence; the second's layer j runs
    # beside the first's j + 1 (its first request ran alone) or beside its j
    def carried(plan, second_layer):
        (starts1, end1), (starts2, end2) = plan
        shape = {(False, False): "no flag", (True, False): "START", (True, True): "START+END", (False, True): "END"}
        return {shape[(2 in starts1, end1 == 2)], shape[(second_layer in starts2, end2 == second_layer)]}
    for pair, shapes in TOGETHER.items():
        for same in (False, True):
            plan = pair_layers(shapes, same)
            alignments = [carried(plan, layer) for layer in (1, 2)
                          if not any(e is not None and e < layer for _, e in plan[1:])]  # the second still goes on
            assert set(shapes) in alignments, (pair, same, plan)
            if any(s in ("no flag", "START") for s in shapes):
                assert alignments == [set(shapes)] * 2, (pair, plan)  # either alignment carries it
    assert pair_layers(("START", "START"), False) == (((2,), None), ((1, 2), None))
    assert pair_layers(("END", "START"), True) == (((), 2), ((1, 2), None))  # the END on the first
    assert pair_layers(("END", "END"), True) == (((), 2), ((), 2)) and pair_layers(("END", "END"), False)[1] == ((), 1)
