"""Swarm testing that keeps on the rules a campaign still needs (fuzz/generator/swarm.py). Pure:
tiny machines of no-op rules, run by Hypothesis as a campaign's would be."""
import importlib

from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from fuzz.generator import swarm
from fuzz.generator.swarm import keep_rules_on, needed_rules, reaches

SETTINGS = settings(max_examples=150, stateful_step_count=30, derandomize=True, database=None,
                    deadline=None, suppress_health_check=list(HealthCheck))


def _examples_without(kept: tuple) -> tuple:
    """(examples of 20+ steps in which `build` never ran, such examples) with the rules `kept` on."""
    examples = []

    class Machine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.ran = []
            examples.append(self.ran)
            assert keep_rules_on(self, kept)

        @rule()
        def other(self):
            self.ran.append("other")

        @rule()
        def more(self):
            self.ran.append("more")

        @rule()
        def build(self):
            self.ran.append("build")

    run_state_machine_as_test(Machine, settings=SETTINGS)
    long = [e for e in examples if len(e) >= 20]
    return sum("build" not in e for e in long), len(long)


def test_this_hypothesis_has_the_hook():
    # Without it the swarm is Hypothesis's own and campaigns miss goals again: a new Hypothesis
    # that moved its rule flags fails here, not silently.
    assert swarm.HOOKABLE


def test_a_kept_rule_runs_in_every_long_example():
    without, long = _examples_without(("build",))
    assert long >= 20 and without == 0


def test_without_keeping_the_swarm_turns_the_rule_off_in_some():
    # what the test above would see if keep_rules_on did nothing
    without, long = _examples_without(())
    assert long >= 20 and without >= 3


def test_needed_rules_are_those_whose_goals_the_campaign_lacks():
    @reaches("twins live: ")
    def alias():
        pass

    @reaches("depth ", "churn ")
    def run():
        pass

    def start():
        pass

    reachable = frozenset({"twins live: case", "depth 8", "churn 16", "input 0"})
    assert needed_rules((alias, run, start), reachable, frozenset()) == ("alias", "run")
    assert needed_rules((alias, run, start), reachable, frozenset({"twins live: case", "depth 8"})) == ("run",)
    assert needed_rules((alias, run, start), reachable, reachable) == ()
    # a goal the model cannot reach keeps nothing on
    assert needed_rules((alias,), frozenset({"input 0"}), frozenset()) == ()


def test_every_kept_rule_is_a_rule_and_each_prefix_names_goals_a_model_can_reach():
    # a misspelt prefix would keep its rule on never, and nothing else would say so
    import attrs

    from fuzz.generator.coverage import goals_for
    from fuzz.generator.edges import STRING_FAMILIES
    from fuzz.generator.machine import REACHING, SequenceBatcherMachine
    from fuzz.spec import ModelSpec

    rich = ModelSpec(name="m", dtype="INT32", strategy="direct", slots_per_instance=4, instances=1, idle_s=0.5,
                     max_batch_size=4, controls=frozenset({"START", "END", "READY", "CORRID"}), corrid_type="UINT64",
                     implicit_state=False, says_live_rows=True, says_row=True, says_execution=True)
    goals = {g for dtype in ("INT32", "FP32")  # (the rounding runs are a float model's)
             for g in goals_for(attrs.evolve(rich, dtype=dtype), families=STRING_FAMILIES, strings=True, expiry=True,
                                cancels=True, gives_up=True, witness_vias=("grpc",), cancels_queued=True, again=True,
                                behind_end=True)}
    rules = {name for name, f in vars(SequenceBatcherMachine).items() if hasattr(f, "hypothesis_stateful_rule")}
    assert len(REACHING) >= 9
    for kept in REACHING:
        assert kept.__name__ in rules
        for prefix in kept.reaches:
            assert any(g.startswith(prefix) for g in goals), (kept.__name__, prefix)


def test_rules_are_kept_on_in_a_dev_campaign_and_longer_but_not_in_a_few_short_examples():
    # the profiles are what users run; a test's or a seed's few short examples keep their own draws
    importlib.import_module("fuzz.profiles")  # registers them
    from fuzz.campaign import keeps_rules
    assert keeps_rules(settings.get_profile("dev")) and keeps_rules(settings.get_profile("long"))
    assert not keeps_rules(settings.get_profile("ci"))
    assert not keeps_rules(settings(max_examples=3, stateful_step_count=8))
