"""The reference model, rule by rule, without a server. Time is passed in explicitly."""
import math

import attrs
import numpy as np
import pytest

from fuzz.harness.client import Request
from fuzz.checker.model import (Window, BATCH_MAX_ERROR, BATCH_ONE_ERROR, DTYPE_ERROR, LONG_ID_ERROR, SHAPE_ERROR,
    START_ERROR, ZERO_ID_ERROR, Ambiguous, Answer, BatcherModel, OutsideContract, Queued, Refusal, key_of,
    normalize_message)
from fuzz.spec import ContractError, ModelSpec, same_sum
from tritonclient.grpc import model_config_pb2 as mc
from modelgen import Variant, model_config

M = "acc"
IDLE = 1.0
MARGIN = 0.1


def spec(capacity=1, instances=1, strategy="direct", max_batch_size=None, dtype="INT32"):
    return ModelSpec(name=M, dtype=dtype, strategy=strategy, slots_per_instance=capacity, instances=instances,
                     idle_s=IDLE, max_batch_size=capacity if max_batch_size is None else max_batch_size,
                     controls=frozenset({"START", "END", "READY", "CORRID"}), corrid_type="UINT64",
                     implicit_state=False)


def R(seq_id, value=1, start=False, end=False, **kw):
    return Request(M, seq_id, value, start=start, end=end, **kw)


@pytest.fixture
def model():
    return BatcherModel(spec(capacity=2), margin_s=MARGIN, prompt_s=1.0)


def test_running_sum_since_start(model):
    assert model.expect(R(7, 3, start=True), 0.0) == Answer(3)
    assert model.expect(R(7, 4), 0.1) == Answer(7)
    assert model.expect(R(7, -10), 0.2) == Answer(-3)


def test_a_sum_the_dtype_cannot_hold_exactly_is_outside_the_contract_not_an_answer(model):
    """The generator fits its values; a program cut short by shrinking may not be (a removed
    request that could not fold). The model refuses to predict what a wrapped INT32 answers, and
    leaves the sequence as it was. An FP32 sum has one answer anywhere (IEEE rounding)."""
    assert model.expect(R(7, 2**31 - 2, start=True), 0.0) == Answer(2**31 - 2)
    with pytest.raises(OutsideContract, match="outside"):
        model.expect(R(7, 2), 0.1)
    assert model.expect(R(7, 1), 0.2) == Answer(2**31 - 1)
    with pytest.raises(OutsideContract):
        model.expect(R(8, -(2**31) - 1, start=True), 0.3)


def test_an_fp32_sum_past_its_exact_range_is_rounded_as_ieee_754_does():
    fp32 = BatcherModel(spec(capacity=1, dtype="FP32"), margin_s=MARGIN, prompt_s=1.0)
    assert fp32.expect(R(9, 2.0**24, start=True, dtype="FP32"), 0.0) == Answer(2.0**24)
    assert fp32.expect(R(9, 1.0, dtype="FP32"), 0.1) == Answer(2.0**24)  # 2**24 + 1 rounds to even
    assert fp32.expect(R(9, 3.0, dtype="FP32"), 0.2) == Answer(2.0**24 + 4)
    assert fp32.expect(R(9, 3.4028234663852886e38, dtype="FP32"), 0.3) == Answer(3.4028234663852886e38)
    assert fp32.expect(R(9, 3.4028234663852886e38, dtype="FP32"), 0.4) == Answer(math.inf)  # overflows
    nan = fp32.expect(R(9, -math.inf, dtype="FP32"), 0.5).value
    assert math.isnan(nan) and same_sum(nan, math.nan) and not same_sum(nan, math.inf)
    assert fp32.expect(R(10, 0.1, start=True, dtype="FP32"), 0.6).value == float(np.float32(0.1))  # queued


def test_each_dtype_sums_in_its_own_width():
    """INT8 to UINT64 are exact within their own range (the generator stays there; past it is no
    promise); FP16 and FP64 round as IEEE does at their own precision, as FP32 does at its."""
    ranges = {"INT8": (-128, 127), "UINT8": (0, 255), "INT16": (-(2**15), 2**15 - 1), "UINT16": (0, 2**16 - 1),
              "UINT32": (0, 2**32 - 1), "UINT64": (0, 2**64 - 1), "FP16": (-2048, 2048), "FP64": (-(2**53), 2**53)}
    for dtype, edges in ranges.items():
        assert spec(dtype=dtype).sum_range == edges, dtype
    fp16 = BatcherModel(spec(capacity=1, dtype="FP16"), margin_s=MARGIN, prompt_s=1.0)
    assert fp16.expect(R(9, 2047.0, start=True, dtype="FP16"), 0.0) == Answer(2047.0)
    assert fp16.expect(R(9, 2.0, dtype="FP16"), 0.1) == Answer(2048.0)  # 2049 rounds to even
    assert fp16.expect(R(9, 65504.0, dtype="FP16"), 0.2) == Answer(math.inf)  # past FP16's largest
    assert fp16.expect(R(10, 0.1, start=True, dtype="FP16"), 0.3).value == float(np.float16(0.1))
    assert (spec(dtype="FP16").fraction_limit, spec(dtype="FP32").fraction_limit) == (256, 2**21)
    fp64 = BatcherModel(spec(capacity=1, dtype="FP64"), margin_s=MARGIN, prompt_s=1.0)
    assert fp64.expect(R(9, 2.0**53, start=True, dtype="FP64"), 0.0) == Answer(2.0**53)
    assert fp64.expect(R(9, 1.0, dtype="FP64"), 0.1) == Answer(2.0**53)
    int8 = BatcherModel(spec(capacity=1, dtype="INT8"), margin_s=MARGIN, prompt_s=1.0)
    assert int8.expect(R(9, 100, start=True, dtype="INT8"), 0.0) == Answer(100)
    with pytest.raises(OutsideContract, match="outside"):
        int8.expect(R(9, 28, dtype="INT8"), 0.1)


def test_a_build_taken_as_carrying_no_state_answers_each_value_on_the_initial_sum():
    """A known divergence taken as built (FuzzSettings.accept): no sum carries over, everything
    else (STARTs, slots, refusals) is as before."""
    m = BatcherModel(attrs.evolve(spec(capacity=1), initial_sum=100), margin_s=MARGIN, prompt_s=1.0,
                     carries_state=False)
    assert m.expect(R(7, 3, start=True), 0.0) == Answer(103)
    assert m.expect(R(7, 4), 0.1) == Answer(104)
    assert m.expect(R(8, 1, start=True), 0.2) == Queued(101)
    assert m.expect(R(9, 1), 0.3).invariant == "start_is_required"


def test_start_is_required_for_unknown_ended_and_expired_ids(model):
    never = model.expect(R(5), 0.0)
    assert never == Refusal("INVALID_ARGUMENT", START_ERROR.format(id=5, model=M), "start_is_required")
    model.expect(R(6, 1, start=True), 0.0)
    model.expect(R(6, 1, end=True), 0.1)
    assert isinstance(model.expect(R(6), 0.2), Refusal)
    model.expect(R(8, 1, start=True), 0.0)
    assert isinstance(model.expect(R(8), IDLE + MARGIN + 0.01), Refusal)  # expired


def test_start_on_live_id_restarts_and_keeps_its_slot():
    m = BatcherModel(spec(capacity=1), MARGIN)
    m.expect(R(1, 5, start=True), 0.0)
    assert m.expect(R(1, 2, start=True), 0.1) == Answer(2)
    assert m.expect(R(1, 3), 0.2) == Answer(5)
    assert m.expect(R(2, 9, start=True), 0.3) == Queued(9)  # still one slot, still held by 1


def test_a_start_right_after_its_id_s_end_counts_as_reused_at_once():
    """Coverage's "reused at once": only where nothing went between the END and the START."""
    m = BatcherModel(spec(capacity=2), MARGIN)
    m.expect(R(1, 5, start=True), 0.0)
    m.expect(R(1, 1, end=True), 0.01)
    assert m.expect(R(1, 2, start=True), 0.02) == Answer(2) and m.reused_at_once == 1
    m.expect(R(1, 1, start=True, end=True), 0.03)  # a restart that ends it: the id is done again
    m.expect(R(2, 1, start=True), 0.04)  # another id between
    m.expect(R(1, 1, start=True), 0.05)
    assert m.reused_at_once == 1
    m.expect(R(1, 1, end=True), 0.06)
    assert isinstance(m.expect(R(1, 1), 0.07), Refusal)  # no START: refused, and it breaks the chain
    m.expect(R(1, 1, start=True), 0.08)
    assert m.reused_at_once == 1
    m.expect(R(1, 1, end=True), 0.09)
    assert isinstance(m.expect(R(1, 1, end=True), 0.10), Refusal)  # an END refused ends nothing
    m.expect(R(1, 1, start=True), 0.11)
    assert m.reused_at_once == 1
    m.expect(R(1, 1, end=True), 0.12)
    m.forget_all()  # a reload between: the server forgot the id anyway
    m.expect(R(1, 1, start=True), 0.13)
    assert m.reused_at_once == 1


def test_a_start_on_the_id_just_ended_that_waits_in_the_backlog_is_not_reused_at_once():
    m = BatcherModel(spec(capacity=1), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    assert m.expect(R(2, 1, start=True), 0.01) == Queued(1)  # 2 waits for the one slot
    m.expect(R(1, 1, end=True), 0.02)  # 2 takes the slot 1 frees
    assert isinstance(m.expect(R(1, 1, start=True), 0.03), Queued)
    assert m.reused_at_once == 0


def test_end_forgets_the_id_and_frees_the_slot_for_the_backlog():
    m = BatcherModel(spec(capacity=1), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    assert m.expect(R(2, 2, start=True), 0.1) == Queued(2)
    assert m.due(key_of(2)) is None  # not let in yet
    assert m.expect(R(1, 1, end=True), 0.2) == Answer(2)
    assert m.due(key_of(2)) == pytest.approx(0.2 + 1.0 + 1.0)
    assert m.served(key_of(2), 0.21) is None
    assert m.expect(R(2, 3), 0.3) == Answer(5)


def test_uint64_and_string_ids_are_distinct(model):
    model.expect(R(5, 1, start=True), 0.0)
    assert model.expect(R("5", 10, start=True), 0.0) == Answer(10)
    assert model.expect(R(5, 1), 0.1) == Answer(2)
    assert model.expect(R("5", 1), 0.1) == Answer(11)
    assert key_of(5) != key_of("5")


def test_idle_expiry_window_is_ambiguous_and_then_certain(model):
    model.expect(R(1, 1, start=True), 0.0)
    assert model.expect(R(1, 1), IDLE - MARGIN - 0.01) == Answer(2)  # just inside: still live
    last = IDLE - MARGIN - 0.01
    inside = model.expect(R(1, 1), last + IDLE)
    assert isinstance(inside, Ambiguous) and inside.until == pytest.approx(last + IDLE + MARGIN)
    assert isinstance(model.expect(R(1, 1), last + IDLE + MARGIN + 0.001), Refusal)


def test_a_late_answer_keeps_the_sequence_possibly_alive_that_much_longer(model):
    # A pipelined request that waited in the server's queue restarts the idle clock when the
    # server takes it, which can be as late as its answer: seen live, a run's next chunk sent
    # past send + idle + late was accepted.
    model.expect(R(1, 1, start=True), 0.0)
    model.answered(key_of(1), 0.6)  # the answer took 0.6 s
    after_send_window = IDLE + MARGIN + 0.05
    inside = model.expect(R(1, 1), after_send_window)
    assert isinstance(inside, Ambiguous) and inside.until == pytest.approx(0.6 + IDLE + MARGIN)
    assert isinstance(model.expect(R(1, 1), 0.6 + IDLE + MARGIN + 0.001), Refusal)


def test_a_sequence_kept_in_use_for_two_windows_is_kept_alive_and_a_restart_makes_it_young(model):
    """Coverage's "kept alive": requests to a sequence two idle windows after its START, though
    it never idled out. A START on its id begins its age again."""
    model.expect(R(1, 1, start=True), 0.0)
    for t in (0.8, 1.6):
        assert model.expect(R(1, 1), t) == Answer(model.seqs[key_of(1)].total)
    assert model.kept_alive == 0
    assert model.expect(R(1, 1, start=True), 1.9) == Answer(1)  # a restart: young again
    assert model.expect(R(1, 1), 2.6) == Answer(2) and model.kept_alive == 0
    assert model.expect(R(1, 1), 3.4) == Answer(3) and model.kept_alive == 0
    assert model.expect(R(1, 1), 4.0) == Answer(4) and model.kept_alive == 1


def test_an_answer_never_narrows_the_expiry_window(model):
    model.expect(R(1, 1, start=True), 0.0)
    model.answered(key_of(1), -5.0)  # an answer time before the send changes nothing
    inside = model.expect(R(1, 1), IDLE)
    assert isinstance(inside, Ambiguous) and inside.until == pytest.approx(IDLE + MARGIN)


def test_capacity_is_slots_times_instances_and_the_backlog_waits():
    m = BatcherModel(spec(capacity=2, instances=2), MARGIN)
    for i in range(4):
        assert m.expect(R(10 + i, i, start=True), 0.0) == Answer(i)
    assert m.expect(R(20, 7, start=True), 0.0) == Queued(7)
    assert m.expect(R(21, 8, start=True), 0.0) == Queued(8)
    assert m.is_backlogged(key_of(20)) and m.is_backlogged(key_of(21))


def test_backlogged_sequences_are_not_reaped_while_waiting():
    m = BatcherModel(spec(capacity=1), MARGIN)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 2, start=True), 0.0)
    for t in (0.5, 0.8):  # keep 1 alive well past 2's own idle deadline
        m.expect(R(1, 1), t)
    m.settle(1.5)
    assert m.is_backlogged(key_of(2))


def test_backlogged_start_admitted_late_is_reaped_from_its_arrival():
    """Seen live on 2.51: the idle clock of a backlogged START runs from its arrival."""
    m = BatcherModel(spec(capacity=1), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 2, start=True), 0.05)
    m.expect(R(1, 1), 0.5)
    m.expect(R(1, 1), 0.9)
    assert m.expect(R(1, 1, end=True), 1.3) == Answer(4)  # 2 waited 1.25 s > IDLE
    assert m.served(key_of(2), 1.31) is None
    assert isinstance(m.expect(R(2, 1), 1.5), Refusal)  # reaped as soon as it got the slot


def test_a_backlogged_start_answered_while_every_slot_is_held_breaks_capacity():
    m = BatcherModel(spec(capacity=1), MARGIN)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 2, start=True), 0.1)
    problem = m.served(key_of(2), 0.2)
    assert problem and "every slot was held" in problem


def test_early_answer_is_accepted_when_a_holder_may_have_expired():
    m = BatcherModel(spec(capacity=1), MARGIN)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 2, start=True), 0.1)
    assert m.served(key_of(2), IDLE - MARGIN + 0.01) is None  # the server reaped 1 first: fine
    assert not m.is_live(key_of(1)) and m.is_live(key_of(2))


def restart_late(m: BatcherModel, answered_at: float) -> None:
    """Restarts sequence 1 (from START 1 at 0) a moment before its idle window opens, with 5; its
    answer comes at `answered_at`."""
    assert m.expect(R(1, 5, start=True), IDLE - MARGIN - 0.01) == Answer(5)
    m.answered(key_of(1), answered_at)


def test_a_restart_answered_after_its_sequence_could_expire_may_have_come_after_the_reaper():
    """Seen in CI (2-core, loaded): 1 restarted a moment before its idle window, 2 waiting. The
    restart reached the server after the reaper took 1, so 2 got the slot, and the restart,
    a new START then, got it next (2 had waited past its own deadline: reaped at once; probed
    live on 2.51). The restart's answer is the same either way; 2's early answer settles it."""
    m = BatcherModel(spec(capacity=1), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    assert m.expect(R(2, 2, start=True), 0.05) == Queued(2)
    restart_late(m, answered_at=IDLE + 0.04)  # answered after 1's window opened: it may have come late
    assert m.served(key_of(2), IDLE + 0.01) is None
    assert m.is_live(key_of(1)) and not m.is_live(key_of(2))
    assert m.expect(R(1, 1), IDLE + 0.1) == Answer(6)
    assert isinstance(m.expect(R(2, 1), IDLE + 0.1), Refusal)  # reaped once it had run


def test_a_restart_answered_before_its_sequence_could_expire_held_the_slot():
    m = BatcherModel(spec(capacity=1), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 2, start=True), 0.05)
    m.expect(R(1, 5, start=True), IDLE - MARGIN - 0.02)
    m.answered(key_of(1), IDLE - MARGIN - 0.01)  # it surely arrived before the reaper could act
    problem = m.served(key_of(2), IDLE + 0.01)
    assert problem and "every slot was held" in problem


def test_a_late_restart_needs_a_slot_to_free_by_its_answer():
    """2 has not waited out its own deadline when it is let in, so it holds the slot: the
    restart of 1, answered meanwhile, cannot have had a slot, and 2's answer breaks capacity."""
    m = BatcherModel(spec(capacity=1), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 2, start=True), 0.6)
    restart_late(m, answered_at=IDLE + 0.04)
    problem = m.served(key_of(2), IDLE + 0.01)
    assert problem and "every slot was held" in problem


def test_a_late_restart_explains_no_start_queued_after_it_was_answered():
    """The restart's risk is over for STARTs queued after its answer: a START+END queued later
    and answered while the restarted sequence holds the only slot breaks capacity."""
    m = BatcherModel(spec(capacity=1), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    restart_late(m, answered_at=IDLE + 0.04)
    for t in (1.2, 1.4, 1.6):
        m.expect(R(1, 1), t)
        m.answered(key_of(1), t + 0.01)
    assert m.expect(R(2, 2, start=True, end=True), 1.7) == Queued(2)
    problem = m.served(key_of(2), 1.75)
    assert problem and "every slot was held" in problem


def test_a_late_restart_queues_behind_the_starts_sent_before_it():
    """A START queued before the restart was sent would have had the next slot before it: the
    restart cannot have taken the slot 2 freed, so 2's early answer is still a finding."""
    m = BatcherModel(spec(capacity=1), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 2, start=True), 0.05)
    m.expect(R(3, 3, start=True), 0.5)
    restart_late(m, answered_at=IDLE + 0.3)
    problem = m.served(key_of(2), IDLE + 0.01)
    assert problem and "every slot was held" in problem


def test_slots_pass_down_the_backlog_in_a_chain():
    m = BatcherModel(spec(capacity=1), MARGIN)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 2, start=True), 0.0)
    m.expect(R(3, 3, start=True), 0.0)
    # 1 expires near IDLE; 2 is then let in but already past its own deadline, so it goes at once
    # and 3 takes the slot: 3 answered before 2 was seen is still a legal schedule.
    assert m.served(key_of(3), IDLE + 0.05) is None


def test_a_start_and_end_let_in_passes_its_slot_on_at_once():
    """Seen live (Triton 2.51, the release matrix's seed run): 1 ends; the backlogged START+END 2
    runs in the freed slot and ends; 3 takes that slot long before 2's idle deadline, and its
    answer can come back before 2's. The slot 2 held freed when 2 ran, not when it would expire."""
    m = BatcherModel(spec(capacity=1), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    assert m.expect(R(2, 2, start=True, end=True), 0.1) == Queued(2)
    assert m.expect(R(3, 3, start=True), 0.2) == Queued(3)
    m.expect(R(1, 0, end=True), 0.3)
    assert m.served(key_of(3), 0.31) is None  # 2 ran in between, unseen yet
    assert m.served(key_of(2), 0.32) is None
    assert m.is_live(key_of(3)) and not m.is_live(key_of(2))


def test_cancelled_backlogged_start_takes_no_slot_and_its_place_lingers():
    m = BatcherModel(spec(capacity=1), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 2, start=True), 0.1)
    m.expect(R(3, 3, start=True), 0.2)
    m.cancelled(key_of(2))
    assert m.lingering(key_of(2)) and not m.is_live(key_of(2))
    m.expect(R(1, 0, end=True), 0.3)
    assert not m.lingering(key_of(2))  # dropped when the slot freed
    assert m.due(key_of(3)) is not None  # 3, not the cancelled 2, got the slot


def test_a_slot_freed_before_a_cancel_surely_arrived_may_have_let_the_start_in():
    """Seen on a loaded 2-core CI: a slot freed 0.1 s after the cancelled START's stream closed,
    and the START ran. Until the cancel surely reached the server, the START may take a freed
    slot (and hold it till its idle timeout, answered to nobody); its id is not asked again."""
    m = BatcherModel(spec(capacity=1), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 2, start=True), 0.1)
    m.expect(R(3, 3, start=True), 0.2)
    m.cancelled(key_of(2), settles_at=1.3)
    assert isinstance(m.expect(R(2, 5), 0.3), Ambiguous)  # asked again: only once the cancel is there
    m.expect(R(1, 0, end=True), 0.4)  # frees the slot before then
    assert m.due(key_of(3)) is None and key_of(2) not in m.live_keys()  # 2 may hold it: 3 waits
    assert m.surely_backlogged_until(key_of(3)) <= 0.4 + MARGIN  # or 2 did not: 3 may be in at once
    assert isinstance(m.expect(R(2, 5), 0.5), Ambiguous)  # its sum depends on which
    m.settle(0.4 + m.spec.idle_s + 3.0)  # 2's window surely over: 3 is let in
    assert m.due(key_of(3)) is not None


def test_a_start_that_may_have_run_is_ended_once_its_cancel_surely_came():
    """The ends of examples waited out such a START's idle window (seconds a time); once its
    cancel has surely come, an END tells whether it ran, and frees the slot either way."""
    m = BatcherModel(spec(capacity=1), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 2, start=True), 0.1)
    m.cancelled(key_of(2), settles_at=1.3)
    m.expect(R(1, 0, end=True), 0.4)  # the slot frees before the cancel surely came: 2 may have run
    assert m.maybe_ran_until(key_of(2)) == 1.3 and m.is_spent(key_of(2)) and not m.free_slots()
    assert m.settled_maybe_ran(1.0) == [] and m.settled_maybe_ran(1.3) == [key_of(2)]
    m.end_maybe_ran(key_of(2), Window(1.4, 1.45))
    assert m.maybe_ran_until(key_of(2)) is None and key_of(2) not in m.seqs and m.free_slots() == 1
    assert m.settled_maybe_ran(2.0) == []


def test_a_start_that_may_have_run_and_was_put_out_for_a_late_reaped_one_is_not_ended_again():
    """A reviewer's case: A expires, its slot may go to M (cancelled, unsettled); G expires, its
    slot to T; G answered after all puts out the earliest holder, M. M must leave maybe_ran too
    (a KeyError at every drain of the example after). And a maybe-ran START whose slot came from a
    sequence the model let expire is not ended while that ghost stands: the server may not have
    freed the slot, and an END would join M in its backlog."""
    m = BatcherModel(spec(capacity=2), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 2, start=True), 0.0)
    m.expect(R(1, 1), 0.5)
    m.expect(R(2, 1), 0.85)
    m.expect(R(3, 3, start=True), 0.95)
    m.expect(R(4, 4, start=True), 1.0)
    m.cancelled(key_of(3), settles_at=2.02)
    m.settle(1.65)  # A expired: its slot may have gone to M
    assert key_of(3) in m.maybe_ran and m.settled_maybe_ran(2.03) == []  # A's ghost stands
    m.settle(2.01)  # G expired: its slot to T
    m.served(key_of(4), 2.015)
    assert m.unreaped(key_of(2), 1, sent=1.99) is not None
    assert key_of(3) not in m.maybe_ran and key_of(3) not in m.seqs
    assert m.settled_maybe_ran(2.03) == []


@pytest.mark.parametrize("settles_at", [5.0, 0.5])
def test_a_start_behind_a_cancelled_one_is_served_whether_or_not_the_cancel_came_first(settles_at):
    """B waits behind A, whose cancel may be on its way (or came, unseen by settle): B answered
    once X idled out is no finding, and B holds the slot."""
    m = BatcherModel(spec(capacity=1), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 2, start=True), 0.1)
    m.expect(R(3, 3, start=True), 0.2)
    m.cancelled(key_of(2), settles_at=settles_at)
    assert m.served(key_of(3), 1.0) is None
    assert m.is_live(key_of(3)) and key_of(3) not in m.backlog


def test_a_late_reaped_sequence_whose_slot_a_cancelled_start_may_have_taken_revives():
    """X settled as expired, its slot to A, cancelled and unsettled (may have run): X answered
    after all means its slot never freed, so A never ran."""
    m = BatcherModel(spec(capacity=1), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 2, start=True), 0.1)
    m.cancelled(key_of(2), settles_at=5.0)
    m.settle(1.2)
    assert key_of(2) in m.maybe_ran and key_of(1) in m.ghosts
    assert m.unreaped(key_of(1), 5, sent=1.15) == Answer(6)
    assert not m.is_live(key_of(2)) and m.is_live(key_of(1))

def test_a_cancel_that_surely_arrived_before_a_slot_freed_ends_its_sequence():
    m = BatcherModel(spec(capacity=1), MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 2, start=True), 0.1)
    m.expect(R(3, 3, start=True), 0.2)
    m.cancelled(key_of(2), settles_at=0.5)
    assert m.lingering(key_of(2))
    m.expect(R(1, 0, end=True), 0.6)
    assert m.due(key_of(3)) is not None  # 3, not the cancelled 2, got the slot
    assert not m.lingering(key_of(2))
    assert isinstance(m.expect(R(2, 5), 0.7), Refusal)  # the sequence is over


@pytest.mark.parametrize("req, message", [
    (R(0, start=True), ZERO_ID_ERROR.format(model=M)),
    (R("", start=True), ZERO_ID_ERROR.format(model=M)),
    (R(1, start=True, batch=2), BATCH_ONE_ERROR.format(model=M)),
    (R(1, start=True, batch=5), BATCH_MAX_ERROR.format(max=2, model=M)),
    (R(1, start=True, dtype="FP32"), DTYPE_ERROR.format(sent="FP32", model=M, want="INT32")),
    (R("x" * 129, start=True), LONG_ID_ERROR),
])
def test_malformed_requests_are_refused_and_leave_state_alone(model, req, message):
    model.expect(R(1, 5, start=True), 0.0)
    got = model.expect(req, 0.1)
    assert isinstance(got, Refusal) and got.message == message and got.invariant == "invalid_is_refused"
    assert model.expect(R(1, 1), 0.2) == Answer(6)


def test_a_model_without_a_batch_dimension_takes_input_as_1_and_refuses_2():
    nb = spec(capacity=2, strategy="oldest", max_batch_size=0)
    m = BatcherModel(nb, margin_s=MARGIN, prompt_s=1.0)
    req = nb.request(1, 5, start=True)
    assert req.shape == (1,) and req.dtype == "INT32" and req.model == M
    assert m.expect(req, 0.0) == Answer(5)
    got = m.expect(nb.request(1, 1, batch=2), 0.1)
    assert isinstance(got, Refusal) and got.invariant == "invalid_is_refused"
    assert got.message == SHAPE_ERROR.format(model=M, got="[2]")
    # the dtype check comes first, as in Triton's request normalization
    assert m.expect(nb.request(1, 1, batch=2, dtype="FP32"), 0.2).message.startswith("inference input 'INPUT' data-type")
    assert m.expect(nb.request(1, 1), 0.3) == Answer(6)
    assert spec(capacity=2).request(1, 1, batch=2).shape == (2, 1)


def test_longest_allowed_string_id_is_accepted(model):
    assert model.expect(R("x" * 128, 1, start=True), 0.0) == Answer(1)


def test_request_id_prefix_is_not_part_of_the_promise():
    assert normalize_message("[request id: r8] inference request batch-size must be <= 1 for 'm'") == \
        "inference request batch-size must be <= 1 for 'm'"


def test_spec_from_generated_configs():
    s = ModelSpec.from_config(model_config(Variant("corrid", "oldest", 4, 2, "fp32", "string",
                                                   ("START", "END", "READY", "CORRID"), idle_us=250_000)))
    assert (s.strategy, s.capacity, s.dtype, s.idle_s, s.corrid_type) == ("oldest", 8, "FP32", 0.25, "STRING")
    for dtype in ("int8", "uint16", "uint64", "fp16", "fp64"):
        assert ModelSpec.from_config(model_config(Variant("slot", "direct", 1, 1, dtype))).dtype == dtype.upper()
    s = ModelSpec.from_config(model_config(Variant("implicit", "direct", 2, 1)))
    assert s.implicit_state and s.capacity == 2 and s.controls == {"START", "READY"}


def test_spec_of_an_ensemble_is_its_stateful_steps_under_the_ensembles_name():
    from modelgen.config import configs

    v = Variant("slot", "oldest", 1, 1, "int32", controls=("START", "END", "READY"), ensemble=True)
    cfgs = configs(v)
    s = ModelSpec.of_ensemble(cfgs[v.name], {v.step_name: cfgs[v.step_name]})
    assert (s.name, s.step, s.batcher, s.strategy, s.capacity, s.flavour) == \
        (v.name, v.step_name, v.step_name, "oldest", 1, "slot")
    assert s.request(5, 1).model == v.name  # requests go to the ensemble
    with pytest.raises(ContractError, match="exactly one step that is a sequence model"):
        ModelSpec.of_ensemble(cfgs[v.name], {})


def test_spec_of_a_split_ensemble_answers_each_request_once_per_chunk():
    from modelgen import split_variants
    from modelgen.config import configs

    v = split_variants()[0]
    cfgs = configs(v)
    s = ModelSpec.of_ensemble(cfgs[v.name], {n: cfgs[n] for n in (v.split_name, v.step_name)})
    assert (s.chunks, s.decoupled, s.batcher) == (2, True, v.step_name)
    assert "cut into 2 chunks" in s.describe()
    # a front step that does not say how many chunks it cuts a request into is not taken
    front = cfgs[v.split_name]
    del front.parameters["CHUNKS"]
    with pytest.raises(ContractError, match="parameter CHUNKS"):
        ModelSpec.of_ensemble(cfgs[v.name], {n: cfgs[n] for n in (v.split_name, v.step_name)})
    # every answer comes once per chunk: the running sum, twice (the second chunk carries 0)
    m = BatcherModel(s, margin_s=0.05)
    assert m.expect(s.request(7, 5, start=True), 0.0) == Answer(5, partials=(5,))
    assert m.expect(s.request(7, -2), 0.01) == Answer(3, partials=(3,))
    assert m.expect(s.request(7, 1, end=True), 0.02) == Answer(4, partials=(4,))


def test_spec_knows_decoupled_models_and_32_bit_corrids():
    d = ModelSpec.from_config(model_config(Variant("corrid", "direct", 2, 1, controls=("START", "CORRID"),
                                                   decoupled=True)))
    assert d.decoupled and d.id_bits == 64 and not d.step
    for corrid_type, bits in (("int32", 32), ("uint32", 32), ("int64", 64), ("uint64", 64), ("string", 64)):
        s = ModelSpec.from_config(model_config(Variant("corrid", "direct", 2, 1, corrid_type=corrid_type,
                                                       controls=("START", "CORRID"))))
        assert (s.corrid_type, s.id_bits) == (corrid_type.upper(), bits)


def test_spec_reads_an_initial_state_from_data_and_sums_start_there():
    v = Variant("implicit", "direct", 2, 1, "fp32", backend="onnx", initial_sum=7, same_buffer=True)
    s = ModelSpec.from_config(model_config(v))
    assert s.initial_sum == 7.0 and isinstance(s.initial_sum, float) and "from 7" in s.describe()
    assert s.value_range == (-(2**24) + 7, 2**24 - 7)  # a START's sum, 7 + its value, stays exact
    assert ModelSpec.from_config(model_config(Variant("implicit", "direct", 2, 1))).initial_sum == 0
    m = BatcherModel(s, margin_s=MARGIN, prompt_s=1.0)
    assert m.expect(R(1, 3, start=True, dtype="FP32"), 0.0) == Answer(10)
    assert m.expect(R(1, 4, dtype="FP32"), 0.1) == Answer(14)
    assert m.expect(R(1, -1, start=True, dtype="FP32"), 0.2) == Answer(6)  # a restart starts there again
    assert m.expect(R(2, 1, start=True, dtype="FP32"), 0.3) == Answer(8)
    assert m.expect(R(3, 2, start=True, dtype="FP32"), 0.4) == Queued(9)  # backlogged: answered later, from 7 too
    # The file cannot be read over the API: without INITIAL_SUM the fuzzer cannot know the sums.
    cfg = model_config(v)
    del cfg.parameters["INITIAL_SUM"]
    with pytest.raises(ContractError, match="data file 'initial_sum'.*parameter INITIAL_SUM, an integer; got 'none'"):
        ModelSpec.from_config(cfg)
    cfg.parameters["INITIAL_SUM"].string_value = "seven"
    with pytest.raises(ContractError, match="got 'seven'"):
        ModelSpec.from_config(cfg)
    # within an eighth of the dtype's range (FP16: 256), and none on an unsigned state
    cfg = model_config(Variant("implicit", "oldest", 2, 1, "fp16", "uint64", ("START", "END", "READY", "CORRID"),
                               initial_sum=300))
    with pytest.raises(ContractError, match=r"INITIAL_SUM 300 is past \+-256, where sums from it stay exact in FP16"):
        ModelSpec.from_config(cfg)
    cfg.parameters["INITIAL_SUM"].string_value = "200"
    assert ModelSpec.from_config(cfg).value_range == (-1848.0, 1848.0)
    cfg = model_config(Variant("implicit", "oldest", 2, 1, "uint8", "uint64", ("START", "END", "READY", "CORRID"),
                               initial_sum=7))
    with pytest.raises(ContractError, match="INITIAL_SUM 7 on a UINT8 state: .* starts from 0 only"):
        ModelSpec.from_config(cfg)


def test_spec_refuses_models_outside_the_contract():
    cfg = model_config(Variant("slot", "direct", 1, 1))
    cfg.output[0].name = "OUT"
    with pytest.raises(ContractError, match="no output named OUTPUT"):
        ModelSpec.from_config(cfg)
    cfg = model_config(Variant("slot", "direct", 1, 1))
    cfg.input[0].data_type = cfg.output[0].data_type = mc.TYPE_BOOL
    with pytest.raises(ContractError, match="one data type of INT8, INT16, .*FP64, got TYPE_BOOL and TYPE_BOOL"):
        ModelSpec.from_config(cfg)
    cfg = model_config(Variant("slot", "direct", 1, 1))
    cfg.ClearField("sequence_batching")
    with pytest.raises(ContractError, match="no sequence_batching"):
        ModelSpec.from_config(cfg)


def test_two_starts_queued_close_together_may_be_let_in_either_way_round():
    # Seen live on a loaded machine: B queued 50 ms after A, on another connection, got the slot
    # that the END freed; the model had let A in. The order they reached the server is unknown.
    m = BatcherModel(spec(capacity=1), margin_s=MARGIN, prompt_s=1.0)
    m.expect(R(1, 1, start=True), 0.0)
    assert m.expect(R(2, 5, start=True), 0.10) == Queued(5)
    assert m.expect(R(3, 7, start=True), 0.15) == Queued(7)
    m.expect(R(1, 0, end=True), 0.20)  # frees the slot: the model lets 2 in
    assert m.due(key_of(2)) is not None and m.due(key_of(3)) is None
    assert m.served(key_of(3), 0.21) is None  # 3 got it: fine, and now the model knows
    assert m.due(key_of(2)) is None and m.is_backlogged(key_of(2))
    assert m.expect(R(3, 1), 0.3) == Answer(8)
    m.expect(R(3, 0, end=True), 0.35)
    assert m.served(key_of(2), 0.36) is None  # then 2, when 3 ended


def test_a_start_queued_just_after_another_may_overtake_it_in_the_backlog():
    """Seen in a 30-minute campaign, 21 workers on two cores: B queued, C queued 50 ms later on
    another connection, and C was answered as soon as the holder's idle window opened, B not yet:
    C had reached the server first. Neither was let in by the model yet (the window was open)."""
    m = BatcherModel(spec(capacity=1), margin_s=MARGIN, prompt_s=1.0, order_s=0.5)
    m.expect(R(1, 1, start=True), 0.0)
    assert m.expect(R(2, 5, start=True), 0.10) == Queued(5)
    assert m.expect(R(3, 7, start=True), 0.15) == Queued(7)
    assert m.served(key_of(3), IDLE - MARGIN + 0.05) is None
    assert m.is_backlogged(key_of(2)) and m.is_live(key_of(3)) and not m.is_live(key_of(1))
    assert m.expect(R(3, 1), IDLE) == Answer(8)


def test_a_start_queued_long_after_another_may_not_overtake_it():
    m = BatcherModel(spec(capacity=1), margin_s=MARGIN, prompt_s=1.0, order_s=0.5)
    m.expect(R(1, 1, start=True), 0.0)
    m.expect(R(2, 5, start=True), 0.10)
    m.expect(R(3, 7, start=True), 0.70)  # 0.6 s later: surely behind 2
    m.expect(R(1, 0, end=True), 0.75)
    assert "every slot was held" in m.served(key_of(3), 0.76)


def test_a_request_answer_says_when_its_sequence_may_be_reaped_before_it_arrives():
    """A request sent inside the idle window can reach the server after it on a loaded machine:
    its Answer names the earliest reap before it, and a START refusal answered past that moment
    is settled as an expiry (fuzz/harness/engine.py calls it indeterminate)."""
    model = BatcherModel(spec(capacity=1), margin_s=MARGIN, prompt_s=1.0)
    assert model.expect(R(7, 3, start=True), 0.0).at_risk_from == float("inf")
    first = model.expect(R(7, 4), 0.5)
    assert first.at_risk_from == pytest.approx(IDLE - MARGIN)
    # Pipelined behind it, unanswered: the same risk (if the first came too late, so did this one).
    assert model.expect(R(7, 1), 0.5).at_risk_from == pytest.approx(IDLE - MARGIN)
    model.answered(key_of(7), 0.51)  # it arrived alive: the next request's risk is its own window
    assert model.expect(R(7, 1), 0.6).at_risk_from == pytest.approx(0.5 + IDLE - MARGIN)
    model.reaped_first(key_of(7), 1.45)  # that last one was refused, answered at 1.45
    assert model.expect(R(7, 1), 1.46) == Refusal("INVALID_ARGUMENT", START_ERROR.format(id=7, model=M),
                                                  "start_is_required")
    assert model.expect(R(8, 1, start=True), 1.46) == Answer(1)  # the one slot is free


def test_a_sequence_let_expire_at_its_late_edge_may_still_answer():
    """The late edge of the idle window is an assumption about the reaper's schedule: a request
    to an id the model let expire, answered as the sequence's next request, is settled as a late
    reaper (fuzz/harness/engine.py calls it indeterminate) and the sequence runs on, pipelined requests
    included; a refusal settles it the other way."""
    model = BatcherModel(spec(capacity=1), margin_s=MARGIN, prompt_s=1.0)
    model.expect(R(7, 3, start=True), 0.0)
    refused = Refusal("INVALID_ARGUMENT", START_ERROR.format(id=7, model=M), "start_is_required")
    assert model.expect(R(7, 4), 2.0) == refused
    assert model.expect(R(7, 1), 2.0) == refused  # pipelined behind it
    assert model.unreaped(key_of(7), 4, 2.0) == Answer(7)
    assert model.unreaped(key_of(7), 1, 2.0) == Answer(8)
    assert model.expect(R(7, 2), 2.1) == Answer(10)
    assert model.expect(R(8, 1, start=True), 2.2) == Queued(1)  # it holds the one slot again
    model = BatcherModel(spec(capacity=1), margin_s=MARGIN, prompt_s=1.0)
    model.expect(R(9, 1, start=True), 0.0)
    assert model.expect(R(9, 1), 5.0) == Refusal("INVALID_ARGUMENT", START_ERROR.format(id=9, model=M),
                                                 "start_is_required")
    model.reaped(key_of(9))
    assert model.unreaped(key_of(9), 1, 5.0) is None  # seen refused: gone for certain


def test_a_late_reaped_sequence_takes_its_slot_back_from_the_backlog():
    model = BatcherModel(spec(capacity=1), margin_s=MARGIN, prompt_s=1.0)
    model.expect(R(1, 1, start=True), 0.0)
    assert model.expect(R(2, 5, start=True), 0.1) == Queued(5)
    assert isinstance(model.expect(R(1, 1), 2.0), Refusal)  # 1 expired; 2 let into its slot
    assert model.due(key_of(2)) is not None
    assert model.unreaped(key_of(1), 1, 2.0) == Answer(2)
    assert model.is_backlogged(key_of(2)) and model.due(key_of(2)) is None  # back at the front


def test_a_late_reaped_sequence_cannot_answer_once_its_slot_was_seen_taken():
    model = BatcherModel(spec(capacity=1), margin_s=MARGIN, prompt_s=1.0)
    model.expect(R(1, 1, start=True), 0.0)
    model.expect(R(2, 5, start=True), 0.1)
    assert isinstance(model.expect(R(1, 1), 2.0), Refusal)
    assert model.served(key_of(2), 2.01) is None  # the server let 2 in: 1 was reaped
    assert model.unreaped(key_of(1), 1, 2.02) is None


def test_a_start_queued_on_a_late_reaped_id_may_restart_it_in_its_slot():
    model = BatcherModel(spec(capacity=1), margin_s=MARGIN, prompt_s=1.0)
    model.expect(R(1, 1, start=True), 0.0)
    model.expect(R(2, 5, start=True), 0.5)
    assert model.expect(R(1, 9, start=True), 1.2) == Queued(9)  # 1 expired, 2 let into its slot
    assert model.served(key_of(1), 1.21) is None  # the server still held 1: restarted in its slot
    assert model.is_backlogged(key_of(2))
    assert model.expect(R(1, 1), 1.3) == Answer(10)


def test_a_start_in_the_backlog_waits_for_an_answer_until_it_is_let_in():
    m = BatcherModel(spec(capacity=1), margin_s=MARGIN, prompt_s=1.0)
    m.expect(R(1, start=True), 0.0)
    assert isinstance(m.expect(R(2, start=True), 0.1), Queued)
    assert m.waits_for_an_answer(key_of(2)) and not m.waits_for_an_answer(key_of(1))
    assert not m.waits_for_an_answer(key_of(3))
    with pytest.raises(ValueError, match="generator error"):
        m.expect(R(2, 1), 0.2)


def test_free_slots_counts_what_a_start_takes_at_once(model):
    assert model.free_slots() == 2
    model.expect(R(1, 1, start=True), 0.0)
    assert model.free_slots() == 1
    model.expect(R(2 + 2**32, 1, start=True), 0.1)  # equal to 2 modulo 2**32: a distinct sequence
    assert model.free_slots() == 0
    assert model.expect(R(2, 4, start=True), 0.2) == Queued(4)
    assert model.free_slots() == 0  # the backlog goes first
    model.expect(R(1, 0, end=True), 0.3)
    assert model.free_slots() == 0  # 2 took the slot 1 freed
    assert model.expect(R(2 + 2**32, 1), 0.4) == Answer(2)


def test_a_start_end_let_in_from_the_backlog_passes_its_slot_on_at_once():
    model = BatcherModel(spec(capacity=2), margin_s=MARGIN, prompt_s=1.0)
    model.expect(R(1, 1, start=True), 0.0)
    model.expect(R(4, 1, start=True), 0.0)
    assert model.expect(R(2, 2, start=True, end=True), 0.1) == Queued(2)
    assert model.expect(R(3, 3, start=True), 0.2) == Queued(3)
    model.expect(R(1, 0, end=True), 0.3)  # 2 let into 1's slot
    model.expect(R(4, 0, end=True), 0.5)  # 3 let into 4's slot, as the model sees it
    # The server ran 2 (START+END) and gave its slot to 3 before 4's END was sent.
    assert model.served(key_of(3), 0.4) is None
    assert model.served(key_of(2), 0.45) is None
    assert model.free_slots() == 1 and model.expect(R(3, 1), 0.6) == Answer(4)


def test_a_start_served_before_any_slot_could_free_still_breaks_capacity():
    model = BatcherModel(spec(capacity=1), margin_s=MARGIN, prompt_s=1.0)
    model.expect(R(1, 1, start=True), 0.0)
    assert model.expect(R(3, 3, start=True), 0.2) == Queued(3)
    model.expect(R(1, 0, end=True), 0.5)
    assert "before the slot it took could have been free" in model.served(key_of(3), 0.4)


def test_a_start_end_whose_answer_came_first_may_have_passed_its_slot_on():
    """As seen live: the START+END's answer is checked first, its slot goes to no one in the
    model (the next START was already let into another slot), then that START's answer shows
    it had the START+END's slot."""
    model = BatcherModel(spec(capacity=2), margin_s=MARGIN, prompt_s=1.0)
    model.expect(R(1, 1, start=True), 0.0)
    model.expect(R(4, 1, start=True), 0.0)
    model.expect(R(2, 2, start=True, end=True), 0.1)
    model.expect(R(3, 3, start=True), 0.2)
    model.expect(R(1, 0, end=True), 0.3)
    model.expect(R(4, 0, end=True), 0.5)
    assert model.served(key_of(2), 0.45) is None
    assert model.served(key_of(3), 0.4) is None
    assert model.passed_on == []  # used up: a second early START could not take it too


def test_an_end_answered_by_a_late_reaped_sequence_ends_it_and_frees_its_slot():
    """Seen live (30 minutes at -n 12, one slot): the END revived the sequence, which the model
    then kept running, and the next START, served at once, looked like a capacity breach."""
    model = BatcherModel(spec(capacity=1), margin_s=MARGIN, prompt_s=1.0)
    model.expect(R(1, 1, start=True), 0.0)
    assert isinstance(model.expect(R(1, 1, end=True), 2.0), Refusal)
    assert model.unreaped(key_of(1), 1, 2.0, end=True) == Answer(2)
    assert not model.is_live(key_of(1)) and model.free_slots() == 1
    assert model.expect(R(2, 5, start=True), 2.1) == Answer(5)


def test_a_start_that_must_wait_past_its_timeout_is_refused_and_its_id_forgotten():
    """L0_sequence_batcher's request timeouts: the reaper fails a START waiting in the backlog
    once its timeout has passed, unless a slot frees first (then it gets in, timeout or not)."""
    from fuzz.checker.model import TIMEOUT_ERROR
    m = BatcherModel(spec(capacity=1), MARGIN, late_s=0.2)
    m.expect(R(1, 1, start=True), 0.0)  # holds the slot until at least IDLE - MARGIN
    timed_out = m.expect(R(2, 5, start=True, timeout_us=20_000), 0.1)
    assert timed_out == Refusal("UNAVAILABLE", TIMEOUT_ERROR, "timeouts_respected")
    assert not m.is_live(key_of(2)) and not m.backlog
    assert isinstance(m.expect(R(2, 1), 0.2), Refusal)  # forgotten: the START-flag error
    # A timeout that ends near the slot's earliest release: which comes first decides.
    near = m.expect(R(3, 5, start=True, timeout_us=700_000), 0.1)
    assert isinstance(near, Ambiguous) and near.until == pytest.approx(IDLE + 0.2)
    # A free slot: the START gets in, its timeout unread.
    m.expect(R(1, 1, end=True), 0.3)
    assert m.expect(R(4, 5, start=True, timeout_us=1), 0.4) == Answer(5)


def test_a_timed_out_start_answered_before_its_timeout_breaks_timeouts_respected():
    from fuzz.checker.invariants import check_prompt
    from fuzz.checker.model import TIMEOUT_ERROR
    from fuzz.values import Outcome
    req, exp = R(2, 5, start=True, timeout_us=20_000), Refusal("UNAVAILABLE", TIMEOUT_ERROR, "timeouts_respected")
    on_time = Outcome(status="UNAVAILABLE", message=TIMEOUT_ERROR, latency_s=0.0203)
    assert check_prompt(req, exp, on_time, "grpc").violation is None
    early = check_prompt(req, exp, Outcome(status="UNAVAILABLE", message=TIMEOUT_ERROR, latency_s=0.005), "grpc")
    assert early.violation.invariant == "timeouts_respected" and "before its timeout of 20 ms" in early.violation.detail


def iterative_spec(iterations=3):
    v = Variant("corrid", "direct", 2, 1, "int32", "uint64", ("START", "END", "READY", "CORRID"), decoupled=True,
                iterations=iterations)
    return ModelSpec.from_config(model_config(v))


def test_an_iterative_start_answers_each_execution_and_ends_its_sequence():
    """iterative_sequence: a START without END runs `iterations` times in its slot, answering each
    running sum, and its last release ends the sequence; one with END is not rescheduled."""
    s = iterative_spec()
    assert s.iterations == 3 and "iterative (3 executions per START)" in s.describe()
    m = BatcherModel(s, margin_s=MARGIN, prompt_s=1.0)
    assert m.expect(R(1, 5, start=True), 0.0) == Answer(15, partials=(5, 10))
    assert not m.is_live(key_of(1)) and key_of(1) in m.spent  # its id is left alone from now on
    assert m.expect(R(2, 4, start=True, end=True), 0.1) == Answer(4)
    # with END: its id is free again, but marked, for the builds that stall a START on it soon
    # after (iterative-start-after-start-end-stalls, the engine's guard)
    assert key_of(2) not in m.spent and key_of(2) in m.started_and_ended
    # (the views the engine asks: spent, and with the guard spent or started and ended)
    assert m.is_spent(key_of(1)) and not m.is_spent(key_of(2)) and m.is_spent(key_of(2), start_end_too=True)
    assert not m.is_spent(key_of(3), start_end_too=True) and m.maybe_ran_until(key_of(1)) is None
    assert m.expect(R(3, 1), 0.2) == Refusal("INVALID_ARGUMENT", START_ERROR.format(id=3, model=s.name),
                                             "start_is_required")
    # An iterative START's sum is its value `iterations` times: values are kept to a third.
    assert s.value_range == (-(2**31) // 3 + 1, (2**31 - 1) // 3)


def test_iterative_starts_sent_together_each_take_a_slot_that_frees_with_its_last_answer():
    """A burst of iterative STARTs: the model releases each sequence as it is sent (its slot frees
    with its final answer, as a START+END's does), so none waits in the backlog."""
    m = BatcherModel(iterative_spec(2), margin_s=MARGIN, prompt_s=1.0)
    assert [m.expect(R(i, i, start=True), 0.0) for i in (10, 11, 12)] == [
        Answer(20, partials=(10,)), Answer(22, partials=(11,)), Answer(24, partials=(12,))]
    assert m.free_slots() == 2 and not m.backlog


def test_spec_reads_iterations_only_from_a_decoupled_iterative_model():
    cfg = model_config(Variant("corrid", "direct", 2, 1, decoupled=True, iterations=4,
                               controls=("START", "CORRID")))
    assert ModelSpec.from_config(cfg).iterations == 4
    assert ModelSpec.from_config(model_config(Variant("corrid", "direct", 2, 1, controls=("START", "CORRID")))
                                 ).iterations == 0
    for mutate, got in ((lambda c: c.parameters["ITERATIONS"].__setattr__("string_value", "many"), "'many'"),
                        (lambda c: c.parameters.__delitem__("ITERATIONS"), "'none'"),
                        (lambda c: c.model_transaction_policy.__setattr__("decoupled", False), "not decoupled")):
        bad = model_config(Variant("corrid", "direct", 2, 1, decoupled=True, iterations=4,
                                   controls=("START", "CORRID")))
        mutate(bad)
        with pytest.raises(ContractError, match=f"iterative sequence.*{got}"):
            ModelSpec.from_config(bad)


def test_answers_before_the_final_one_are_checked_too():
    from fuzz.checker.invariants import check_prompt, check_served
    from fuzz.values import Outcome

    req, exp = R(1, 5, start=True), Answer(15, partials=(5, 10))
    assert check_prompt(req, exp, Outcome(value=15, partials=(5, 10)), "stream").violation is None
    wrong = check_prompt(req, exp, Outcome(value=15, partials=(7, 7)), "stream")
    assert wrong.violation.invariant == "sums_match" and "before the final answer" in str(wrong.violation)
    assert (wrong.expected, wrong.got) == ("OUTPUT=15 after [5, 10]", "OUTPUT=15 after [7, 7]")
    assert check_prompt(req, exp, Outcome(value=15), "stream").violation is not None  # answered once
    backlogged = Queued(15, partials=(5, 10))
    assert check_served(req, backlogged, Outcome(value=15, partials=(5, 10)), None).violation is None
    assert check_served(req, backlogged, Outcome(value=15, partials=(5,)), None).violation is not None


def test_a_shared_request_refused_an_idle_timeout_after_the_others_went_is_indeterminate():
    """share_sequence sends requests of one sequence at once on several connections. One refused
    for want of START while the others ran is a finding, unless it was answered once an idle
    window counted from their send could have opened: on a loaded machine it can reach the
    server that late (seen: 19 campaigns on two cores). The others must still be an order's sums,
    and a refusal of another kind is never excused."""
    import time
    from types import SimpleNamespace

    from fuzz.harness.sharing import Shared, Sharing
    from fuzz.values import Outcome

    def judged(ago, first=Outcome(4), message=START_ERROR.format(id=7, model=M), latency=0.0, went_after=None,
               first_went_after=None):
        model = BatcherModel(spec(capacity=1), margin_s=MARGIN, prompt_s=1.0)
        sharing = SimpleNamespace(engine=SimpleNamespace(spec=model.spec, model=model))
        at = time.monotonic() - ago
        if first_went_after is not None:
            first = attrs.evolve(first, sent_at=at + first_went_after)
        shared = Shared(3, sent=[(0, R(7, 1), None, "stream"), (1, R(7, 2), None, "stream")], times=[at, at])
        refused = Outcome(status="INVALID_ARGUMENT", message=message, latency_s=latency,
                          sent_at=None if went_after is None else at + went_after)
        return shared, Sharing._refused_after_expiry(sharing, shared, [first, refused])
    assert judged(0.05)[1] is None  # answered at once: it was refused while its sequence ran
    shared, opens = judged(IDLE)
    assert opens == pytest.approx(shared.sent_at + IDLE - MARGIN)
    assert judged(IDLE, first=Outcome(99))[1] is None  # the one answered is no running sum
    assert judged(IDLE, message="some other error")[1] is None
    # checked late, but its own latency says the refusal came at once: it stands
    assert judged(IDLE, latency=0.01)[1] is None and judged(IDLE, latency=IDLE)[1] is not None
    # its request went out (the client's reading) long after the group's time for it, its
    # connection not ready (a stalled machine): refused at once, but after the window opened
    assert judged(IDLE, latency=0.01, went_after=IDLE)[1] is not None
    assert judged(IDLE, latency=0.01, went_after=0.01)[1] is None
    # the one answered went later still: the sequence was alive when it came, and the refusal
    # came before an idle window counted from then could open: it stands
    assert judged(2 * IDLE, latency=0.01, went_after=IDLE, first_went_after=1.5 * IDLE)[1] is None


def _ghost_and_holder(holder_at: float, queued_at: float, let_in_at: float) -> BatcherModel:
    """Two slots: 1 started at 0.0 and let expire at its late edge (1.15), its slot given to 2
    (queued at `queued_at`), answered at `let_in_at`; 3, started at `holder_at`, holds the other."""
    model = BatcherModel(spec(capacity=2), margin_s=MARGIN, prompt_s=1.0)
    model.expect(R(1, 1, start=True), 0.0)  # the ghost-to-be: window [0.9, 1.1]
    model.expect(R(3, 10, start=True), holder_at)  # window [holder_at + 0.9, holder_at + 1.1]
    assert model.expect(R(2, 5, start=True), queued_at) == Queued(5)
    model.settle(1.15)  # 1 expired at its late edge; 2 let into its slot
    assert model.served(key_of(2), let_in_at) is None
    return model


def test_a_late_reaped_sequence_whose_slot_was_seen_taken_may_have_lent_another_one():
    """A starved reaper can be late for one sequence and on time for another: the START the model
    let into a ghost's slot was answered, yet the ghost answers too. Another holder whose idle
    window had opened by that START's answer may have been reaped instead: it becomes the ghost
    (its own answer would settle it the same way); with no such holder, the answer breaks
    capacity."""
    model = _ghost_and_holder(holder_at=0.3, queued_at=0.4, let_in_at=1.25)  # 3's window [1.2, 1.4]
    assert isinstance(model.expect(R(1, 1), 1.3), Refusal)
    assert model.unreaped(key_of(1), 1, 1.3) == Answer(2)  # 3 (open since 1.2) lent its slot to 2
    assert not model.is_live(key_of(3))
    assert isinstance(model.expect(R(3, 1), 1.35), Refusal)
    assert model.unreaped(key_of(3), 1, 1.35) is None  # 1, 2 and 3 alive in two slots: no
    # Without a holder whose window had opened by the START's answer, nothing is lent.
    model = _ghost_and_holder(holder_at=0.5, queued_at=0.6, let_in_at=1.2)  # 3's window [1.4, 1.6]
    assert isinstance(model.expect(R(1, 1), 1.3), Refusal)
    assert model.unreaped(key_of(1), 1, 1.3) is None
    assert model.is_live(key_of(3))
    # A slot that went to no backlogged START (one that found it free took it): the ghost's answer
    # breaks capacity, whatever windows have opened since.
    model = BatcherModel(spec(capacity=1), margin_s=MARGIN, prompt_s=1.0)
    model.expect(R(1, 1, start=True), 0.0)
    model.settle(1.2)
    assert model.expect(R(2, 1, start=True), 1.2) == Answer(1)
    assert isinstance(model.expect(R(1, 1), 2.15), Refusal)
    assert model.unreaped(key_of(1), 1, 2.15) is None
    # A START on a holder's live id later does not move when the START let in got its slot.
    model = _ghost_and_holder(holder_at=0.35, queued_at=0.4, let_in_at=1.2)  # 3's window [1.25, 1.45]
    assert model.expect(R(2, 1, start=True), 1.27) == Answer(1)  # 2 restarts
    assert isinstance(model.expect(R(1, 1), 1.3), Refusal)
    assert model.unreaped(key_of(1), 1, 1.3) is None  # 3 opened at 1.25, after 2 was let in at 1.2


def test_a_start_asked_about_while_its_answer_is_ambiguous_leaves_the_model_as_it_was():
    """Every slot held, one holder inside its idle window: the START is not sent (it waits), so
    asking about it changes nothing that a send would: the count of new sequences, the one just
    ended (a START of its id at once is still that), the last send (a quiet model's gap)."""
    m = BatcherModel(spec(capacity=1), margin_s=MARGIN, prompt_s=1.0)
    assert m.expect(R(1, 3, start=True, end=True), 0.0) == Answer(3)
    assert m.expect(R(2, 4, start=True), 0.1) == Answer(4)
    before = (m.starts, m.last_sent)
    held = m.expect(R(3, 5, start=True), 0.1 + IDLE)
    assert isinstance(held, Ambiguous) and held.or_a_slot
    assert (m.starts, m.last_sent) == before
    assert m.expect(R(3, 5, start=True), held.until + 0.01) == Answer(5)
    assert m.starts == before[0] + 1
