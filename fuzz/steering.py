"""Steering: which choices reach a goal the running example has not reached yet.

Pure. The machine draws an id, a value, a twin family or a run length as before, and beside it a
steer flag and an index from fixed ranges; where the flag says so and some choice is still open,
it takes the open choice the index names instead. So a program draws the same shape of data on
every run (Hypothesis replays and shrinks it without its draws drifting), and its choices follow
the example's own coverage (Coverage.here), never the campaign's: a stored example replayed by
another worker makes the same program.

Ids at the integer edges are not steered: they are the same ids in every example (a salt would
move them off the edge), so a model that keeps state per id would carry it from one example into
the next, and its failure would need the earlier example to replay. Twins are steered instead:
they are made from the example's own (salted) ids.
"""
from __future__ import annotations

from .coverage import DEPTHS, INTEGER_TWINS, twin_goal
from .edges import value_edges

# The integer twin families (coverage.sibling_family names them) and the steps that make them.
TWIN_STEPS = {
    "2^k apart": (2**32, 2**63, 2**16, 3 * 2**32, 2**8),
    "neighbours": (1, 2),
    "10^k apart": (10**3, 10**6, 10**9),
}
TWIN_STEP_FAMILIES = tuple(TWIN_STEPS)
STEERED_RANGE = 256  # the index of a steered choice is drawn from range(STEERED_RANGE)


def choose(open_items, index: int):
    """The open item `index` names, or None when nothing is open."""
    return open_items[index % len(open_items)] if open_items else None


def open_sums(targets, here, lo: float, hi: float) -> tuple:
    """The sum targets whose sum (or, sent as a START, input) stands on an edge the example has
    not reached: as `sum E` or `input E` goals."""
    out = []
    for t in targets:
        edges = value_edges(t, lo, hi)
        if any(f"sum {e}" not in here or f"input {e}" not in here for e in edges):
            out.append(t)
    return tuple(out)


def open_twins(kinds, here) -> tuple:
    """The twin kinds, (family, band) (band None for a string family), the example has not had
    live at once."""
    return tuple(k for k in dict.fromkeys(kinds) if twin_goal(*k) not in here)


def open_depth(deepest: int, current: int) -> int | None:
    """How many requests a run on a sequence `current` deep takes to pass the shallowest depth goal
    the example (its deepest sequence `deepest` long) has not reached; None when all are."""
    for d in DEPTHS:
        if deepest < d:
            return max(1, d - current)
    return None
