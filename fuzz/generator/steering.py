"""Steering: which choices reach a goal the running example has not reached yet.

Pure. The machine draws an id, a value, a twin family or a run length as before, and beside it a
steer flag and an index from fixed ranges; where the flag says so and some choice is still open,
it takes the open choice the index names instead. So a program draws the same shape of data on
every run (Hypothesis replays and shrinks it without its draws drifting), and its choices follow
the example's own coverage (Coverage.here) and what the campaign had reached when the example
began (Coverage.seen, fixed from the first failure on, so the shrinker's replays steer alike).

Ids at the integer edges are steered only onto the campaign's gaps (not the example's): they are
the same ids in every example (a salt would move them off the edge), so a model that keeps state
per id would carry it from one example into the next, and its failure would need the earlier
example to replay. Steered once a campaign, an edge id is no likelier than a drawn one. Twins
are steered per example: they are made from the example's own (salted) ids.
"""
from __future__ import annotations

import math

from .coverage import (ALIGNED, CAMPAIGN_CHURNS, CAMPAIGN_DEPTHS, CHURNS, DECIMAL_STEPS, DEPTHS, FLAGS, INTEGER_TWINS, MERSENNE,
    MERSENNE_STEPS, MODULUS_FAMILIES, NEIGHBOUR_STEPS, ROUNDING, ROUNDING_RUNS, flags_goal, twin_goal, twin_place)
from .edges import ALIGNED_BITS, fold_place, id_edges, rounding_target, swing_values, swings, value_edges

# The integer twin families (coverage.sibling_family names them) and the steps that make them.
TWIN_STEPS = {
    "2^k apart": (2**32, 2**63, 2**16, 3 * 2**32, 2**8, 2**31),  # 2**31: a 32-bit CORRID's widest
    "neighbours": NEIGHBOUR_STEPS,
    "10^k apart": DECIMAL_STEPS,
    MERSENNE: MERSENNE_STEPS,
}
TWIN_STEP_FAMILIES = tuple(TWIN_STEPS)
ALIGNED_PLACES = tuple(f"to 2^{k}" for k in ALIGNED_BITS)
STEERED_RANGE = 256  # the index of a steered choice is drawn from range(STEERED_RANGE)


def choose(open_items, index: int):
    """The open item `index` names, or None when nothing is open."""
    return open_items[index % len(open_items)] if open_items else None


# A sum target's goals, by (type, repr, range): asked for every target at each steered value (a
# profile: 3 % of a campaign's time), and a target's goals never change. Keyed by repr, so that
# -0.0 and 0, 1 and 1.0 stay apart (they hash alike).
_SUM_GOALS: dict = {}


def _sum_goals(target, lo: float, hi: float) -> tuple:
    key = (type(target), repr(target), lo, hi)
    goals = _SUM_GOALS.get(key)
    if goals is None:
        goals = _SUM_GOALS[key] = tuple(g for e in value_edges(target, lo, hi) for g in (f"sum {e}", f"input {e}"))
    return goals


def open_sums(targets, here, lo: float, hi: float, seen=frozenset()) -> tuple:
    """The sum targets whose sum (or, sent as a START, input) stands on an edge the example has
    not reached: as `sum E` or `input E` goals; those on an edge the campaign had not reached
    (`seen`: Coverage.seen) where there are any."""
    def goals(t):
        return _sum_goals(t, lo, hi)
    return campaign_first([t for t in targets if any(g not in here for g in goals(t))], goals, seen)


def open_twins(kinds, here, seen=frozenset(), gaps_only: bool = False, riders: bool = True) -> tuple:
    """The twin kinds, (family, band) (band None for a string family), the example has not had
    live at once; those the campaign had not had where there are any (`gaps_only`: only those).
    Of ids 2^k apart, only the widest open width: twins that share more low bits are one key to
    every narrower cut too, so the first steered pair already finds a cut of any width (as a
    steered depth goes to the largest level first); the narrower come in the turns after. A width
    stays open while an alignment that rides on it does (`riders`: where the aim can move the older
    id to it, as `alias` does and a sibling of a given id cannot)."""
    goals = _twin_goals if riders else (lambda k: [twin_goal(*k)])
    open_kinds = campaign_first([k for k in dict.fromkeys(kinds) if any(g not in here for g in goals(k))],
                                goals, seen, gaps_only)
    widest = max((_width(p) for f, p in open_kinds if f == "2^k apart"), default=None)
    return tuple(k for k in open_kinds if k[0] != "2^k apart" or _width(k[1]) == widest)


def _twin_goals(kind: tuple) -> list:
    """The goals a steered pair of `kind` can reach: its own, and for ids 2^k apart the alignments
    of k bits or fewer that ride on them (aligned_twin). A width reached whose alignments are not
    stays open: else, once the campaign had every width, steering went only to other families'
    gaps and no aligned pair was ever made (the coverage table's most common gap, 9 of 21 models)."""
    own = [twin_goal(*kind)]
    if kind[0] != "2^k apart":
        return own
    return own + [twin_goal(ALIGNED, a) for a in ALIGNED_PLACES if _width(a) <= _width(kind[1])]


def _width(place: str) -> int:
    """k of a place "by 2^k" (ids 2^k apart) or "to 2^k" (an alignment)."""
    return int(place.rsplit("2^", 1)[1])


def twin_aim(family: str, place: str, bits: int) -> tuple:
    """(band, steps) that make integer twins of `family` at `place` (coverage.twin_places) on a
    `bits`-wide CORRID: ids 2^k apart from the steps that share that many low bits, anywhere;
    the others from every step below the width, the older id in that band."""
    steps = [s for s in TWIN_STEPS[family] if s < 2**bits]
    if family in MODULUS_FAMILIES:
        steps = [s for s in steps if twin_place(family, 0, s, bits) == place]
        # Ids 2^k - 1 apart from a base whose halves then fold alike too (edges.FOLD): no turn
        # of their own, as the aligned ids ride on ids 2^k apart.
        return (fold_place(steps[0]) if family == MERSENNE and steps else None), steps  # [0]: the modulus
    return place, steps


def aligned_twin(aim: tuple, here) -> str | None:
    """Where steering aims at ids 2^k apart and the example has not had two ids aligned to 2^j
    (j <= k) live at once: the widest such alignment ("to 2^j"), for the older id to be moved to
    (its twin, 2^k or more apart, has the same low j bits, all 0: aligned too). Else None."""
    family, place = aim
    if family != "2^k apart" or place is None:
        return None
    fits = [a for a in ALIGNED_PLACES if _width(a) <= _width(place) and twin_goal(ALIGNED, a) not in here]
    return max(fits, key=_width, default=None)


def open_swings(previous, lo: float, hi: float, here, seen=frozenset()) -> tuple:
    """The swing values from `previous` (edges.swing_values) that swing across a width the example
    has not swung across yet, those the campaign had not where there are any; every swing value
    where none is open. (Drawn by position among three or four, the widest swing's value came one
    time in four, and five of 19 models' `dev` campaigns never swung across 16 bits.)"""
    every = swing_values(previous, lo, hi)

    def goals(v):
        return swings(previous, v, lo, hi)
    return campaign_first([v for v in every if any(g not in here for g in goals(v))], goals, seen) or every


# The flag shapes a sequence can take at two layers running and go on: a restart, or nothing.
REPEATABLE = ("no flag", "START")


def pair_layers(shapes: tuple, same_layer: bool) -> tuple:
    """Where a steered crowd's first two sequences take a pair of flag shapes: for each, (the
    layers it restarts at, the layer it ends at or None). On one stream, the crowd's first request
    mostly runs alone on an idle model and the second sequence's layer j then runs beside the
    first's layer j + 1; where the second's first request is read before the first's next, beside
    its layer j. The first takes its shape at layer 2; the second at layer 1 and, where its shape
    can come twice running (REPEATABLE; the pair is unordered, so such a shape goes to the
    second), at layer 2 too: either way the pair runs together. Where neither shape can, the
    second takes its own at layer 1 or 2 as `same_layer` draws. (With the second's shape at layer
    1 alone, a START beside a START ran together in 1 of 5 steered crowds of two `dev` campaigns
    on 2-slot models.)"""
    first, second = shapes if shapes[1] in REPEATABLE else shapes[::-1]
    layers = (1, 2) if second in REPEATABLE else ((2,) if same_layer else (1,))
    out = []
    for shape, at in ((first, (2,)), (second, layers)):
        starts, ending = FLAGS[shape]
        out.append((at if starts else (), at[-1] if ending else None))
    return tuple(out)


def edge_ids(candidates, bits: int) -> dict:
    """The ids among `candidates` (ints) below 2**bits that stand at an id edge, by its goal
    ("id~2^k", edges.id_edges), in the candidates' order."""
    by_goal: dict = {}
    for i in candidates:
        if 0 < i < 2**bits:
            for goal in id_edges(i):
                by_goal.setdefault(goal, []).append(i)
    return by_goal


def open_id_edges(by_goal: dict, here, seen) -> tuple:
    """The id edges no id the campaign (before the example, `seen`) or the example sent has
    stood at yet."""
    return tuple(g for g in by_goal if g not in here and g not in seen)


def open_start_goals(states, here, seen=frozenset(), gaps_only: bool = False) -> tuple:
    """(shape, id state) of a START, with END or not, that no request of the example had on an
    id in that state, among `states` (those some id stands in now); the campaign's gaps first
    (`gaps_only`: only those)."""
    aims = [(shape, state) for shape in ("START", "START+END") for state in states
            if flags_goal(shape, state) not in here]
    return campaign_first(aims, lambda a: [flags_goal(*a)], seen, gaps_only)


def beside_deadline(strikes, index: int) -> int | None:
    """A deadline (us) for calls given up beside spared ones, read off earlier strikes (deadline,
    given up, could be given up): a cancel meets a spared call's execution only where it lands
    while the calls are answered, so a deadline at which some calls were given up and others
    answered (the `index`-th of them), else halfway between the latest at which all were given
    up and the earliest at which none was (or twice the one, half the other). None where the
    strikes say nothing of it: none yet, every one gave all up at once (0 us), none gave any up
    at once, or all were given up later than none was (a stalled machine): the drawn deadline then."""
    mixed = sorted({d for d, given, could in strikes if 0 < given < could})
    if mixed:
        return choose(mixed, index)
    every = [d for d, given, could in strikes if given == could]
    none = [d for d, given, could in strikes if given == 0]
    lo, hi = max(every, default=None), min(none, default=None)
    if hi is not None:
        return (hi + (lo or 0)) // 2 if hi > 0 and (lo is None or lo < hi) else None
    return 2 * lo if lo else None


def campaign_first(open_items, goals, seen, gaps_only: bool = False) -> tuple:
    """The open items with a goal the campaign had not reached (not in `seen`) where there are
    any, else every open item (none, `gaps_only`): a choice among them stays a draw of the
    example's own."""
    wanted = [i for i in open_items if any(g not in seen for g in goals(i))]
    return tuple(wanted or (() if gaps_only else open_items))


# A steered depth or churn goes straight to the largest level the campaign lacks (on its way it
# passes every smaller one). Level by level, a 10-example campaign reached churn 1024 in 3 of 4
# runs. Its cost is bounded where it is sent: a steered run or churn stops after LEVEL_JUMP_S (a
# deep run on a model of 100 ms an execution would take 100 s). Not chosen by the model's measured
# pace: a choice that hangs on timing made a failing example another worker replayed pass.
LEVEL_JUMP_S = 10.0
# A steered choice goes one past its level: at a depth, a counter of 1024 states wraps at the
# 1025th request (a campaign that steered to depth 1024 exactly reached the goal and missed
# count_wraps_at_1024); at a churn, the one more costs a sequence.
PAST = 1


def _open_level(levels: tuple, campaign_only: tuple, goal: str, reached: int, current: int, seen,
                gaps_only: bool = False) -> int | None:
    """How far past `current` a steered choice must go to pass the largest of `levels` the
    campaign (`seen`, as "GOAL LEVEL") lacks, or else (not `gaps_only`) the smallest the example
    (`reached` so far) lacks but one of `campaign_only`, and one past it; None when none is open."""
    gaps = [level for level in levels if reached < level and f"{goal} {level}" not in seen]
    if gaps:
        return max(1, gaps[-1] - current + PAST)
    for level in levels:
        if reached < level and level not in campaign_only and not gaps_only:
            return max(1, level - current + PAST)
    return None


def open_churn(most: int, current: int, seen=frozenset(), gaps_only: bool = False) -> int | None:
    """How many new sequences must come and go beside a live one that has seen `current` start to
    pass the largest churn goal the campaign (`seen`) lacks, or else (not `gaps_only`) the
    smallest the example (its most `most`) has not reached, but a CAMPAIGN_CHURNS one; None when
    none is open."""
    return _open_level(CHURNS, CAMPAIGN_CHURNS, "churn", most, current, seen, gaps_only)


def open_depth(deepest: int, current: int, seen=frozenset()) -> int | None:
    """How many requests a run on a sequence `current` deep takes to pass the deepest depth goal
    the campaign (`seen`) lacks, or else the shallowest the example (its deepest sequence
    `deepest` long) has not reached, but a CAMPAIGN_DEPTHS one; None when none is open. (Going
    through the example's shallower goals first, a 1024-deep run needed four steered runs in one
    example, and a campaign seldom had one.)"""
    return _open_level(DEPTHS, CAMPAIGN_DEPTHS, "depth", deepest, current, seen)


def open_rounding(longest: int, current: int, seen=frozenset()) -> int | None:
    """How many more sums that round a run on a sequence whose last `current` sums rounded must
    send to pass the longest rounding-run goal the campaign (`seen`) lacks, or else the shortest
    the example (its longest run `longest`) has not reached; None when none is open."""
    return _open_level(ROUNDING_RUNS, (), ROUNDING, longest, current, seen)


def rounding_aim(spec, base: float, sign: float) -> float | None:
    """The sum a steered rounding run's first request aims at from `base`: just past where `spec`'s
    float dtype keeps whole numbers exact, of `sign` where it can be, where that request surely
    lands (the value it takes, rounded on the wire, and its sum, rounded, can land on 2**digits
    itself from an odd base of the other sign: still exact); None where no aim does."""
    lo, hi = spec.value_range
    edge = rounding_target(spec.digits)
    for magnitude in (edge, edge + 2, 2 * edge):
        for s in (sign, -sign):
            target = math.copysign(magnitude, s)
            landed = spec.add(base, target - base)
            if math.isfinite(landed) and not lo <= landed <= hi:
                return target
    return None
