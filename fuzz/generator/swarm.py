"""Swarm testing that keeps the rules a campaign still needs.

Hypothesis turns a random share of a machine's rules off in each example (swarm testing: its
FeatureFlags draw a probability per example, then each rule is off with it), so that a rule's
interactions with fewer others come up. A goal that one rule alone builds (twins live at once:
`alias`; a pair of flags in one execution: `crowd`) then rides on that rule being drawn on: in a
`dev` campaign of 10 examples, `alias` ran 3 times in one run and 40 in the next, and the twin
goals reached went from 64 to 86 of 86 with it.

A rule marked `reaches(prefix, ...)` is kept on in every example while the campaign lacks a goal of
its model (Coverage.reachable) named so, as the round of examples began (Coverage.round_seen: one
Hypothesis run must pick the same rules from the same choices, its shrinking included, or its data
tree calls the run flaky and the round ends). Every other rule stays Hypothesis's draw. The flags
are drawn as Hypothesis draws them, kept rules' too, and a kept rule is on whatever its flag drew:
the choices are the ones an unkept swarm makes (Hypothesis's own `enabled` list would force them).
A `dev` campaign is one round: its kept rules are all those of goals it can reach; a `long` one
lets each go back to the swarm from the round after the campaign reached its goals. A campaign
planned smaller than campaign.KEEP_RULES_STEPS keeps none (campaign.keeps_rules).

This reaches into Hypothesis's internals (the flags strategy RuleStrategy draws, and the flags'
`is_enabled` its rule filter asks): where a version has none of that shape, `keep_rules_on` does
nothing and says so (False), and the swarm is Hypothesis's as it was.
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
    return "at_least_one_of" in inspect.signature(FeatureFlags.__init__).parameters \
        and callable(getattr(FeatureFlags, "is_enabled", None))


HOOKABLE = _hookable()


class _KeptOnFlags:
    """Hypothesis's rule flags (`drawn`), each asked as it would be; the `kept` rules on whatever
    theirs drew."""

    def __init__(self, drawn, kept):
        self.drawn, self.kept = drawn, kept

    def is_enabled(self, name) -> bool:
        return self.drawn.is_enabled(name) or name in self.kept  # drawn first: the same choices

    def __repr__(self) -> str:
        return f"{self.drawn!r}, kept on: {sorted(self.kept)}"


if HOOKABLE:
    class _KeptOn(FeatureStrategy):
        """Hypothesis's rule flags, with the rules `names` on."""

        def __init__(self, names, at_least_one_of):
            super().__init__(at_least_one_of=at_least_one_of)
            self.names = frozenset(names)

        def do_draw(self, data):
            return _KeptOnFlags(super().do_draw(data), self.names)


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
