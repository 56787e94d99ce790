"""stats_agree's checker: the statistics extension's rise held to what the clients saw (pure)."""
import attrs
from tritonclient.grpc import service_pb2

from fuzz.checker.server_stats import Duration, Lenience, Snapshot, Tally, judge
from fuzz.values import Outcome

MS = 1_000_000


def served(n, ms=2, batches=None, inferences=None, executions=None):
    """The rise of `n` requests answered one a batch, `ms` each, a quarter of it queued."""
    return Snapshot(inferences if inferences is not None else n, executions if executions is not None else n,
                    success=Duration(n, n * ms * MS), queue=Duration(n, n * ms * MS // 4),
                    compute_infer=Duration(n, n * ms * MS // 2), batches=batches or ((1, n),))


def tally(answered=0, errors=0, cancelled=0, partials=0):
    t = Tally()
    for _ in range(answered):
        t.saw(Outcome(value=1))
    for _ in range(errors):
        t.saw(Outcome(status="INVALID_ARGUMENT", message="no START"))
    for _ in range(cancelled):
        t.saw(Outcome(status="CANCELLED"))
    t.runs += partials
    return t


def test_what_the_clients_saw_holds():
    assert judge(served(5), tally(answered=5, errors=3), 1.0, 4) is None


def test_refusals_count_nowhere_and_cancels_either_way():
    # the batcher's refusals are neither successes nor failures; a cancelled request may be either
    assert judge(served(5), tally(answered=4, errors=2, cancelled=1), 1.0, 4) is None
    failed = attrs.evolve(served(4), fail=Duration(1, MS))
    assert judge(failed, tally(answered=4, cancelled=1), 1.0, 4) is None


def test_an_iterative_start_is_one_request_of_many_executions():
    # every build counts a rescheduled request's executions as successes: one per execution
    rise = attrs.evolve(served(9), batches=((1, 9),))
    assert judge(rise, tally(answered=3, partials=6), 1.0, 4) is None
    per_request = attrs.evolve(rise, success=Duration(3, 12 * MS))
    assert judge(per_request, tally(answered=3, partials=6), 1.0, 4) is None
    too_many = attrs.evolve(rise, success=Duration(10, 6 * MS))
    assert "success count rose by 10" in judge(too_many, tally(answered=3, partials=6), 1.0, 4)


def test_leniences_of_divergences_taken_as_built():
    doubled = attrs.evolve(served(2), fail=Duration(6, MS))
    assert "fail count rose by 6" in judge(doubled, tally(answered=2, errors=3), 1.0, 4)
    assert judge(doubled, tally(answered=2, errors=3), 1.0, 4, Lenience(fails_per_error=2)) is None
    # 2.51's iterative release: one failure per START answered, its duration hours long
    released = attrs.evolve(served(6), fail=Duration(2, 3 * 3600 * 10**9))
    assert "fail count rose by 2" in judge(released, tally(answered=2, partials=4), 1.0, 4)
    assert judge(released, tally(answered=2, partials=4), 1.0, 4, Lenience(fails_per_answer=1)) is None


def test_counts_must_match_the_answers():
    assert "inference_count rose by 6" in judge(served(6), tally(answered=5), 1.0, 4)
    assert "inference_count rose by 4" in judge(served(4), tally(answered=5), 1.0, 4)
    assert "fail count rose by 2" in judge(attrs.evolve(served(3), fail=Duration(2, MS)),
                                           tally(answered=3, errors=1), 1.0, 4)


def test_cumulative_figures_only_grow():
    fell = attrs.evolve(served(2), queue=Duration(-1, -MS))
    assert "queue fell" in judge(fell, tally(answered=2), 1.0, 4)


def test_a_duration_longer_than_the_stretch_is_nonsense():
    nonsense = attrs.evolve(served(2), fail=Duration(1, 2**63 - 1))
    assert "fail duration rose by" in judge(nonsense, tally(answered=2, errors=1), 1.0, 4)
    assert "success duration" in judge(served(2, ms=600), tally(answered=2), 0.5, 4)
    assert judge(served(2, ms=400), tally(answered=2), 0.5, 4) is None


def test_parts_of_a_request_fit_in_it():
    queued_long = attrs.evolve(served(2), queue=Duration(2, 5 * MS))
    assert "queue duration rose by 5.000 ms" in judge(queued_long, tally(answered=2), 1.0, 4)


def test_executions_carry_one_to_max_batch_size_inferences():
    assert judge(served(8, executions=2), tally(answered=8), 1.0, 4) is None
    assert "execution_count rose by 1 for 8" in judge(served(8, executions=1), tally(answered=8), 1.0, 4)
    assert "execution_count rose by 9 for 8" in judge(served(8, executions=9), tally(answered=8), 1.0, 4)
    assert judge(served(2, executions=2), tally(answered=2), 1.0, 0) is None  # no batching: one each


def test_a_snapshot_sums_versions_and_batch_sizes():
    stats = service_pb2.ModelStatisticsResponse()
    for version, (n, size) in enumerate([(3, 1), (4, 2)], start=1):
        m = stats.model_stats.add(name="m", version=str(version), inference_count=n, execution_count=n)
        m.inference_stats.success.count, m.inference_stats.success.ns = n, n * MS
        m.batch_stats.add(batch_size=size).compute_infer.count = n
    snap = Snapshot.of(stats.model_stats)
    assert (snap.inference_count, snap.execution_count, snap.success) == (7, 7, Duration(7, 7 * MS))
    assert snap.batches == ((1, 3), (2, 4))
    rise = snap.rise_since(attrs.evolve(snap, inference_count=5, batches=((1, 1),)))
    assert rise.inference_count == 2 and rise.batches == ((1, 2), (2, 4)) and rise.success == Duration()


def test_a_wrapped_sum_of_nonsense_durations_is_what_the_lenience_takes():
    wrapped = attrs.evolve(served(6), fail=Duration(2, -129 * MS))
    assert "fail fell" in judge(wrapped, tally(answered=2, partials=4), 1.0, 4)
    assert judge(wrapped, tally(answered=2, partials=4), 1.0, 4, Lenience(fails_per_answer=1)) is None
    fewer = attrs.evolve(wrapped, fail=Duration(-1, 0))
    assert "fail fell" in judge(fewer, tally(answered=2, partials=4), 1.0, 4, Lenience(fails_per_answer=1))
