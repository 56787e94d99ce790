"""Swarm testing that keeps the rules a campaign still needs.

Hypothesis turns a random share of a machine's rules off in each example (swarm testing: its
FeatureFlags draw a probability per example, then each rule is off with it), so that a rule's
interactions with fewer others come up. A goal that one rule alone builds (twins live at once:
`alias`; a pair of flags in one execution: `crowd`) then rides on that rule being drawn on: in a
`dev` campaign of 10 examples, `alias` ran 3 times in one run and 40 in the next, and the twin
goals reached went from 64 to 86 of 86 with it.

A rule marked `reaches(prefix, ...)` is kept on in every example while the campaign lacks a goal of
its model (Coverage.reachable) named so (Coverage.seen: fixed for the example and its shrinking, so
its replays draw the same choices). Every other rule stays Hypothesis's draw. The flags are
Hypothesis's own, with its `enabled` list: a kept rule still takes its choice in the sequence,
forced on, so the program's draws have the same shape either way.

This reaches into Hypothesis's internals (the flags strategy RuleStrategy draws): where a version
has none of that shape, `keep_rules_on` does nothing and says so (False), and the swarm is
Hypothesis's as it was.
"""
from __future__ import annotations

import inspect

from hypothesis import strategies as st

try:
    from hypothesis.strategies._internal.featureflags import FeatureFlags, FeatureStrategy
except ImportError:  # pragma: no cover - another Hypothesis
    FeatureFlags = FeatureStrategy = None


def reaches(*prefixes: str):
    """Marks a rule as the one that builds the goals named with `prefixes` (see the module)."""
    def mark(rule_function):
        rule_function.reaches = prefixes
        return rule_function
    return mark


def needed_rules(rules, reachable, seen) -> tuple:
    """The names of `rules` (functions) marked `reaches` with a goal among `reachable` not in `seen`."""
    return tuple(r.__name__ for r in rules
                 if any(g.startswith(getattr(r, "reaches", ())) and g not in seen for g in reachable))


def _hookable() -> bool:
    if FeatureStrategy is None:
        return False
    params = inspect.signature(FeatureFlags.__init__).parameters
    return "enabled" in params and "at_least_one_of" in params


HOOKABLE = _hookable()


if HOOKABLE:
    class _KeptOn(FeatureStrategy):
        """Hypothesis's rule flags, with the `names` forced on."""

        def __init__(self, names, at_least_one_of):
            super().__init__(at_least_one_of=at_least_one_of)
            self.names = tuple(names)

        def do_draw(self, data):
            return FeatureFlags(data, enabled=self.names, at_least_one_of=self._at_least_one_of)


def keep_rules_on(machine, names) -> bool:
    """Keeps the rules `names` of `machine` (a RuleBasedStateMachine, just made) on in its
    example. False where this Hypothesis offers no such hook (the swarm is then its own)."""
    strategy = getattr(machine, "_rules_strategy", None)
    if not HOOKABLE or strategy is None or not hasattr(strategy, "enabled_rules_strategy"):
        return False
    if names:
        every = frozenset(r.function.__name__ for r in strategy.rules)
        strategy.enabled_rules_strategy = st.shared(_KeptOn(names, every), key=("enabled rules", machine))
    return True
