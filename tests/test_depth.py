"""How deep a program went (fuzz/generator/depth.py), counted by the reference model: pure, no server."""
from collections import Counter

import hypothesis.strategies as st
from hypothesis import given

from fuzz.generator.depth import DepthSummary
from fuzz.checker.model import Answer, BatcherModel, Queued

from .test_model import R, spec


def test_a_sequence_is_counted_once_it_ends_with_every_request_it_took():
    model = BatcherModel(spec(capacity=2), margin_s=0.1, prompt_s=1.0)
    model.expect(R(1, start=True), 0.0)
    for i in range(9):
        model.expect(R(1), 0.01 * (i + 1))
    assert model.depth.lengths == []  # still running
    model.expect(R(1, end=True), 0.2)
    assert model.depth.lengths == [11]


def test_a_restart_ends_the_old_sequence_and_starts_counting_again():
    model = BatcherModel(spec(capacity=2), margin_s=0.1, prompt_s=1.0)
    model.expect(R(1, start=True), 0.0)
    model.expect(R(1), 0.1)
    model.expect(R(1, start=True), 0.2)
    model.expect(R(1, end=True), 0.3)
    assert model.depth.lengths == [2, 2]


def test_expiry_then_a_new_sequence_in_that_slot_is_one_reuse_cycle():
    model = BatcherModel(spec(capacity=1), margin_s=0.1, prompt_s=1.0, late_s=0.2)
    model.expect(R(1, start=True), 0.0)
    model.expect(R(1), 0.1)
    # idle 1 s: expired for certain after 0.1 + 1 + 0.2
    assert model.expect(R(2, start=True), 1.5) == Answer(1)
    assert model.depth.lengths == [2]
    assert model.depth.reuse_cycles == 1
    model.expect(R(2, end=True), 1.6)  # END frees the slot: not an expiry
    model.expect(R(3, start=True), 1.7)
    assert model.depth.reuse_cycles == 1


def test_a_start_let_in_from_the_backlog_after_an_expiry_is_a_reuse_cycle():
    model = BatcherModel(spec(capacity=1), margin_s=0.1, prompt_s=1.0, late_s=0.2)
    model.expect(R(1, start=True), 0.0)
    assert model.expect(R(2, start=True), 0.1) == Queued(1)
    model.settle(1.5)  # 1 expired: 2 is let in
    assert model.depth.reuse_cycles == 1 and model.depth.lengths == [1]


def test_summary_median_tail_and_histogram():
    d = DepthSummary.of([1, 2, 3, 8, 9, 16, 130], reuse_cycles=30, wall_s=30.0)
    assert (d.sequences, d.median, d.longest, d.cycles_per_min) == (7, 8, 130, 60.0)
    assert dict(d.histogram) == {"1": 1, "2-3": 2, "4-7": 0, "8-15": 2, "16-31": 1, "32-63": 0, "64-127": 0,
                                 "128+": 1}
    assert DepthSummary.of([], 0, 0.0).line().startswith("sequence lengths: median 0")
    assert DepthSummary.from_json(__import__("attrs").asdict(d)) == d


@given(st.lists(st.integers(1, 300), max_size=60))
def test_a_tally_of_lengths_summarises_as_the_sorted_lengths_say(lengths):
    # A campaign keeps a Counter (bounded by the distinct lengths), read here against the plain
    # definitions on the sorted list.
    d, xs, n = DepthSummary.of(Counter(lengths), 0, 1.0), sorted(lengths), len(lengths)
    median = 0 if not n else xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    assert (d.sequences, d.median, d.p90, d.longest) == (n, median, xs[min(n - 1, int(0.9 * n))] if n else 0,
                                                        max(xs, default=0))
    assert sum(c for _, c in d.histogram) == n
    assert dict(d.histogram)["1"] == xs.count(1) and dict(d.histogram)["128+"] == sum(x >= 128 for x in xs)
