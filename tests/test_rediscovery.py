"""benchmarks.rediscovery's choice of models (pure: no server)."""
from benchmarks.rediscovery import models_for
from fuzz.checker.divergences import by_key


def test_a_divergence_of_every_model_is_fuzzed_where_slots_are_scarce_ample_and_slow():
    picks = models_for(by_key("cancelled-backlog-id-lingers"), "0.4.2")
    slots = [v.total_slots for v in picks]
    assert len(picks) == 3 and slots[0] == 1 and slots[1] == max(slots), [v.name for v in picks]
    assert picks[2].delay_ms > 0 and picks[0].delay_ms == picks[1].delay_ms == 0


def test_a_divergence_of_one_kind_of_model_is_fuzzed_on_that_kind_only():
    picks = models_for(by_key("iterative-backlog-start-stalls"), "0.5.5")
    assert [v.iterations > 0 for v in picks] == [True]  # one iterative default model, no slow one
    assert models_for(by_key("iterative-backlog-start-stalls"), "0.4.2") == []  # 2.39 loads none
