"""The generator: a Hypothesis RuleBasedStateMachine of clients using one model's sequences.

Its rules draw what clients do (start, continue, end, run, let expire, cancel, misuse...) and hand
each request to the engine (engine.py), which the corpus replay drives too: the engine asks the
reference model what must happen, sends, checks and logs. The rules only choose.
"""
from __future__ import annotations

import itertools
import math
import random
import string
import sys
import time

import attrs
import hypothesis.strategies as st
from hypothesis import assume
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from .. import nemesis
from .edges import (STRING_FAMILIES, FloatTarget, SumTarget, Wide, wide_targets, wide_values,
    WideTarget, core_targets, exact_range, into_place, is_fraction, power_targets, rounding_target, stands_at, string_twin)
from .coverage import (CANCELLED_BESIDE, CANCELLED_ID_AGAIN, CANCELLED_QUEUED, CANCELLED_RUNNING, EXPIRY_REUSE, FLAG_SHAPES, FLAGS, FULL_END, FULL_START, ID_STATES, KEPT_ALIVE, LONG_LIFE, MERSENNE_STEPS,
    MODULUS_FAMILIES, NEGATIVES, PIPELINED_RESTART, SCALE_FACTORS, SCALED, QUIET, REUSED_AT_ONCE, START_BEHIND_END, TOGETHER, end_in_row, flags_goal, full_rows, live_row_goals,
    sibling_family, swept_goal, together_goals, twin_goal, twin_places, twins_of)
from .steering import (LEVEL_JUMP_S, STEERED_RANGE, TWIN_STEP_FAMILIES, TWIN_STEPS, beside_deadline, campaign_first, choose, edge_ids, open_churn, open_depth, open_rounding, pair_layers, rounding_aim,
    aligned_twin, open_id_edges, open_start_goals, open_sums, open_swings, open_twins, twin_aim)
from .swarm import keep_rules_on, needed_rules, reaches
from ..checker.divergences import steered_around
from ..checker.verdicts import DECOUPLED_CANCEL_CRASH, FINAL_ALONE_CRASH
from ..harness.engine import FuzzSettings, RunStats, StepRecord  # noqa: F401 - re-exported for drivers and tests
from ..harness.engine import Engine, Fault, Setup, Stale, event
from ..harness.cancelling import LateCancel
from ..harness.closing import send_then_half_close
from ..checker.model import KEPT_WINDOWS, LONG_LIFE_S, MAX_STRING_ID, Answer, clip_id, key_of, too_long
from ..spec import ModelSpec


ID_ALPHABET = string.ascii_letters + string.digits + "-_.:/"
SPECIAL_IDS = (1, 2, 2**8 - 1, 2**8, 2**8 + 1, 2**16 - 1, 2**16, 2**16 + 1, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
               2**32 + 1, 2**53 - 1, 2**53, 2**53 + 1, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1)
# Ids of a magnitude band of their own, from 2^8 to 2^30 (salted_id keeps each in its band): what
# a model's fast path for small ids (a dense table, a narrower column) holds, which an id salted
# past 2^40 never reaches. Each power-of-two band alike.
BANDED_IDS = st.builds(lambda k, low: (1 << k) | (low % (1 << k)), st.integers(8, 29), st.integers(0, 2**29 - 1))
# Requests in one `run`: mostly around L0_sequence_stress's normal(16, 8), with a tail past 100
# and one past 256 and 512 (where an 8- or 9-bit counter wraps). Hypothesis shrinks it toward 1.
RUN_LENGTHS = st.one_of(st.integers(1, 32), st.integers(1, 32), st.integers(33, 250), st.integers(251, 530))
RUN_CHUNK = 32  # requests of a run in flight at once
# Whether a fresh run is one START+END with a new sequence on its id pipelined right behind it: 1 in 8
# (not a run steered deep).
AGAIN = st.sampled_from([False] * 7 + [True])
AT_ONCE = st.sampled_from([False] * 3 + [True])  # an END followed by a START on its id, at once
# How many short sequences one `churn` runs beside a live one (unsteered), and their shape.
CHURN_SIZES = st.sampled_from([2, 5, 12, 40])
CHURN_SHAPES = st.sampled_from(("START+END", "START, END"))
# The value every request of a churn's short sequences carries, 2 churns in 3 (else each its own
# drawn one): sequences alike in content, 0 above all (an empty chunk), which a cache or dedup keyed
# by content, or a path a value takes (an empty final chunk taken for a keep-alive, its entry never
# freed), treats as one, or leaks with each. A campaign runs few churns (a dozen in a `dev` one).
CHURN_ALIKE = st.sampled_from([None, None, 0, 0, 1, -1])
# Where a run restarts its sequence with a START among its pipelined requests (a fraction of
# the run's length; None, most runs: nowhere)
RESTART_AT = st.sampled_from((None, None, None, 0.0, 0.5, 0.9))
SALT_STRIDE = 0x16A09E667F3BD  # odd, ~2**40.5: per-example id shifts differ in their low bits
ID_CHOICES = ("fresh", "reuse", "sibling")
PICK = st.integers(0, 15)  # an index into whatever list it picks from (_pick)
# An odd multiple of 2**p: equal modulo every power of two up to 2**p, so a large p collides under
# every narrower truncation too. 2**32 and 2**63 twice as often: an id cut to 32 bits is the
# likeliest collision (Triton itself cuts the id to its low 32 bits for an INT32 or UINT32 CORRID
# control); a small p collides only under a key that drops the low bits.
# Besides, neighbours (1, 2 apart: a key that drops the low bits, or a float64 above 2**53) and
# decimal shards (10**k apart: a key cut to its leading digits, or sharded modulo 10**k), and
# Mersenne numbers 2**k - 1 apart (a key reduced modulo one: Python's hash of an int).
SIBLING_STEPS = st.one_of(
    st.builds(lambda k, p: k * 2**p, st.sampled_from([1, 3]), st.sampled_from([3, 8, 16, 32, 32, 63, 63])),
    st.sampled_from([1, 2, 10**3, 10**6, 10**9, *MERSENNE_STEPS]))
# Requests each client of a `crowd` pipelines: as many for every client, so that their queues
# stay full together (executions then carry a row of each) and drain together.
CROWD_DEPTHS = st.integers(2, 24)
# A value that brings a sum (a START's, or a running sequence's) to another live sequence's: two
# sequences of one state, which a store that interns, dedups or caches by content makes one.
OTHER_SUM = "another live sequence's sum"
# A value that swings from its sequence's last input (edges.swing_values: its negation, or a
# narrower width's far end on its other side), where a codec of neighbours' differences breaks.
SWING = "a swing from the sequence's last input"


class Swing(int):
    """A drawn SWING: 0 as a number, which _fit, where it knows the sequence, makes the index-th
    of its swing values (no last input: 0)."""

    def __new__(cls, index: int):
        swing = super().__new__(cls, 0)
        swing.index = index
        return swing
# The magnitude of a crowd's values: small, wide, or each -1, 0 or 1 (a model that takes 0 or +-1
# for "none", an empty chunk or a flag, in a row of a shared execution: a sparse path, a skip).
CROWD_SCALES = st.sampled_from([100, 2**20, 1])
# How alike a crowd's values are: each its own (None), every sequence's j-th request one value
# ("rows": rows of one execution alike but for their sequence), or every request one value ("all":
# executions one after another alike too, what a cache keyed by a batch's content answers again).
CROWD_ALIKE = st.sampled_from([None, None, "rows", "all"])
# When cancel_pipelined cancels: None, at once behind a witness (the request behind still queued
# on a slow model), or with no witness, this many times the first's latency after the request
# behind can run (the first answered and it sent), when it runs (on a 20 ms model: from 0 to about
# 10 ms after, 0 as the first ends, often before the one behind starts; on a fast one, each of 0,
# 0.1, 0.25 and 0.5 found it running in 8 or 9 of 10 groups).
CANCEL_LATE = st.sampled_from((None, None, None, 0, 0.1, 0.25, 0.5))
RUNNING_LATE = (0.25, 0.5)  # those that land while it runs: steered while the campaign has had none
# How many requests go behind the first, back to back on the client's stream (one queue, in their
# order). A fast model runs one behind in a millisecond, long before the cancel comes (which waits
# for the witness to get there: 15 of 15 groups on the one-slot model cancelled nothing); queued,
# it runs 0.5 ms a request, so 64 are gone in the 35 ms the cancel takes, and a queue that lasts
# takes hundreds. Each queue is held to QUEUE_BUDGET_S at the model's pace (its median latency, a
# few times a queued request's: the witness behind it must come within the prompt bound); while
# no witness has been swept on the campaign's transport, as deep as that.
BEHIND_DEPTHS = st.sampled_from((1, 1, 1, 4, 16))
DEEP_BEHIND = 256
QUEUE_BUDGET_S = 0.25
GIVE_UP_MAX_US = 100_000  # give_up_beside's longest deadline: a slow model's cancels land within it
GIVE_UP_SLOTS = 3  # the free slots give_up_beside needs (see the rule)
BESIDE_TIMES = (1.25, 1.5)  # its deadlines (typical latencies) that land as the calls behind the first run
# The per-request `timeout` (microseconds) on a request of a running sequence: Triton checks it
# only while a sequence waits in the backlog, so a sequence that holds a slot answers it however
# short it is (core r24.10: the direct batcher never reads it, the oldest strategy's dynamic
# batcher has no queue policy). A new sequence's START gets one in start_with_timeout only, where
# it surely waits in the backlog until the timeout passes.
REQUEST_TIMEOUTS = st.sampled_from([None, None, None, 1, 1000, 1_000_000])
# The `timeout` (microseconds) of start_with_timeout's START, which waits in the backlog: from the
# shortest Triton takes to a few batches' time.
START_TIMEOUTS = st.sampled_from([1, 1000, 20_000])
# Requests a `start` sends after its START, back to back: most sequences go a few deep.
START_MORE = st.integers(0, 24)
# Who goes on in one of alias's rounds. The older sequence alone comes first, so Hypothesis can
# shrink the twin's turns away: a bug that only needs one deep sequence then shrinks to it (plus
# the twin's START), not to two interleaved ones it cannot turn into a `start`.
# "older ends": the older sequence ENDs and its twin goes on, once: where twins share a key, a table
# slot or a hash chain, deleting one is what loses the other (no tombstone, a pair popped).
TURNS = st.sampled_from(("older", "both", "both", "older ends"))
# Steering (fuzz/generator/steering.py): a flag and an index drawn beside a choice; the flag's top value
# (1 in 4, or 1 in 8 for a run's length: a deep run costs hundreds of requests; 1 in 2 for a
# twin: a model has up to 18 twin goals and a campaign few alias steps, and an unsteered twin
# stands wherever salting put its id, seldom below 2**32) takes the open choice the index
# names. All shrink to 0: an unsteered choice.
STEER_TOP, STEER_DEPTH_TOP = 3, 7
# The share of the shrink budget Hypothesis gets for a first failure the checker named a known
# divergence as it saw it (a START that overtook its id's END: 30 s of shrinking a race on every
# CORRID model, in a 30-s campaign, left none to fuzz on past it).
KNOWN_SHRINK_SHARE = 1 / 4
STEER_TWIN_FROM = 2
# Steering onto a goal the campaign has not reached at all (an id edge, a START's shape, a twin
# kind) takes the flag's values from here up: 3 in 4. It stops once the campaign has the goal, so
# it costs a campaign a few choices, where per-example steering costs each example its own.
STEER_GAP_FROM = 1
STEER = st.integers(0, STEER_TOP)
STEER_DEPTH = st.integers(0, STEER_DEPTH_TOP)
STEER_INDEX = st.integers(0, STEERED_RANGE - 1)
STEER_AND_INDEX = st.tuples(STEER, STEER_INDEX)  # one draw where two would do (see Plan.value_and_steer)
# What a request on a live sequence does, by its flags (coverage.FLAG_SHAPES).
LIVE_ACTIONS = {"START": "restart", "START+END": "restart and end", "no flag": "continue", "END": "end"}
# Further twins one `alias` starts after the first, each of another family, on the same sequence.
MORE_TWINS = st.integers(0, 4)
# A server fault (a restart or a reload: seconds each) is skipped while the campaign's server
# faults so far took more than this share of its wall time: between them it fuzzes at its rate.
FAULT_SHARE = 0.25
# Waits for idle windows longer than FuzzSettings.max_wait_s end their examples with seconds of
# idling: they are taken while such ends took at most this share of the campaign's wall time.
WAIT_SHARE = 0.1
# Waits of every client mid-example for sequences left to expire to free slots, where only time
# can (no slot free and nothing live, so rules could only skip; or an alias needs two slots):
# at most this many per example, and only where a window is short (not rationed). Counted per
# example, not as a share of the campaign's time: a shrink's replays of an example must decide to
# wait as the example did (a share did not, and Hypothesis found the failure flaky).
STUCK_WAITS = 3
# More such waits where a rule is to build a goal the campaign has not reached (an alias's pair of
# twins, a crowd's steered pair of flags) and only time can free the slots it needs: on a 2-slot
# model sequences left to expire hold them most of the time (seen: 35 of 44 aliases of a `dev`
# campaign found no room, every example's waits spent). Fixed for an example and its shrinking as
# STUCK_WAITS is (what the campaign lacks is read from Coverage.seen), so its replays wait alike.
GAP_WAITS = 3
LONG_PAUSE_S = 0.5  # a pause longer than this is such a wait too (on the 2 s models: up to 1.3 s)
# Whether a pause goes on pausing until its sequence is kept alive (coverage.KEPT_ALIVE): now and
# then, or where the campaign has not kept one alive yet (steered).
KEEP_GOING = st.sampled_from([False, False, False, True])
KEEP_FRACTION = 0.6  # of what is left of the window, at least, between the requests that keep it going
HUSH = st.sampled_from([False] * 7 + [True])  # a pause every client waits out, the model quiet
HUSH_FRACTION = 0.9  # of what is left of the window: how long such a pause is, at least


def salted_id(seq_id: int, salt: int) -> int:
    """`seq_id` shifted by the example's salt times an odd stride: the same shift for the whole
    example, so ids that collide modulo a power of two still do; by an odd stride, so ids of
    different examples rarely do (with 2**40 they all collided modulo 2**32, and a model keying
    state by a truncated id leaked it from one example into the next, which no replay of one
    example reproduces). From 2**8 to 2**30 and from 2**40 on the shift wraps within the id's own
    power-of-two band, so an id stays as large (its magnitude band, where a float64, a 32-bit cut
    or a small id's fast path tells it apart, is the point of drawing it); unsalted, a shrinker's
    consecutive replays sent the same large ids. The ids below 2**8 and from 2**30 to 2**40 move
    by the shift itself (past 2**40), and the boundary ids of SPECIAL_IDS but 1 and 2 are sent as
    they are. Below 2**30 a band wraps around its boundary ids: a salted id never lands on one
    (in a band of 256, it would 1 time in 128, in some replays of an example and not others); so
    there, ids equal modulo 2**p stay equal only where the shift did not wrap them."""
    if seq_id in SPECIAL_IDS and seq_id > 2:
        return seq_id
    if seq_id < 2**8 or 2**30 <= seq_id < 2**40:
        return (seq_id + salt * SALT_STRIDE) % 2**63
    top = 1 << (seq_id.bit_length() - 1)
    if seq_id >= 2**40:
        return top | ((seq_id - top + salt * SALT_STRIDE) % top)
    lo, hi = top, 2 * top  # the band but for the boundary ids at its ends
    while lo in SPECIAL_IDS:
        lo += 1
    while hi - 1 in SPECIAL_IDS:
        hi -= 1
    return lo + (seq_id - lo + salt * SALT_STRIDE) % (hi - lo)


def id_strategy(spec: ModelSpec, version: str | None, find=frozenset()):
    """Ids small and large, around every integer boundary, colliding modulo powers of two, and
    strings; uint64 and string ids are distinct sequences, so both come up."""
    colliding = st.builds(lambda base, k, p: (base + k * 2**p) % 2**64 or 1,
                          st.integers(1, 8), st.integers(1, 3), st.sampled_from([8, 16, 32, 63]))
    # Past 2**53 a float64 no longer tells neighbours apart (an id through a JSON number): large ids
    # come up as often as small ones, so twins there come up too.
    ints = st.one_of(st.integers(1, 12), st.sampled_from(SPECIAL_IDS), colliding, st.integers(1, 2**64 - 1),
                     st.integers(2**53, 2**64 - 1), BANDED_IDS)
    if not string_ids_allowed(spec, version, find):
        return ints
    strings = st.text(ID_ALPHABET, min_size=1, max_size=MAX_STRING_ID)
    return st.one_of(ints, ints, strings)


def sibling(seq_id, step: int, bits: int = 64) -> int | None:
    """An id equal to `seq_id` modulo `step`'s power of two, below 2**bits (None for a string id,
    or when the step wraps it back onto itself). A Mersenne step does not wrap: it goes down
    instead, so that the ids are that far apart as numbers (a wrap moves them 2**bits, which is
    no multiple of 2^k - 1)."""
    if not isinstance(seq_id, int):
        return None
    if step in MERSENNE_STEPS and seq_id + step >= 2**bits:
        return seq_id - step if seq_id - step > 0 else None
    twin = (seq_id + step) % 2**bits
    return twin if twin not in (0, seq_id) else None


def _other_typed(seq_id):
    """5 for "5" and "5" for 5; None for a string that names no uint64."""
    if isinstance(seq_id, int):
        return str(seq_id)
    return int(seq_id) if seq_id.isdigit() and 0 < int(seq_id) < 2**64 else None


def negation(seq_id, bits: int = 64) -> int | None:
    """The integer id that is `seq_id`'s negation on a `bits`-wide CORRID (2^bits - id): None for a
    string id, or one that is its own (2^(bits-1))."""
    if not isinstance(seq_id, int):
        return None
    twin = -seq_id % 2**bits
    return twin if twin not in (0, seq_id) else None


def scaled(seq_id, step: int, bits: int = 64) -> int | None:
    """The integer id that is `seq_id` times a factor of SCALE_FACTORS (the drawn step picks it),
    or divided by it where the product does not fit `bits`: None for a string id, or where
    neither does."""
    if not isinstance(seq_id, int):
        return None
    factor = SCALE_FACTORS[step.bit_length() % len(SCALE_FACTORS)]
    if seq_id * factor < 2**bits:
        return seq_id * factor
    return seq_id // factor if seq_id % factor == 0 else None


def _twin(seq_id, family: str):
    """An id of `seq_id`'s family other than itself: its other-typed twin (5 and "5"), or a member
    of one of edges.STRING_FAMILIES (an integer id's as its decimal string); None if it has none."""
    if family == "other type":
        return _other_typed(seq_id)
    return string_twin(str(seq_id), family)


def twin_families(spec: ModelSpec, version: str | None, find=frozenset()) -> tuple:
    """The string-id families `alias` may make twins of on this model and build: none where string
    ids are guarded, and no embedded NUL where the build cuts ids there (`find`: no guard)."""
    if not string_ids_allowed(spec, version, find):
        return ()
    nul = any(d.no_nul_ids for d in steered_around(spec, version, find))
    return tuple(f for f in STRING_FAMILIES if not (nul and f == "embedded NUL"))


def string_ids_allowed(spec: ModelSpec, version: str | None, find=frozenset()) -> bool:
    return not any(d.no_string_ids for d in steered_around(spec, version, find))


def lets_idle_out(rule_function):
    """Marks a rule that leaves a sequence to idle out, or gone without its END (a cancel that
    ends it): the model never hears of its end, so what it keeps for it (a table row, a ring
    entry, a cache line) it may keep for good, and a bug of that bookkeeping hides from then on.
    A clean round's machine leaves such rules out (make_machine; fuzz/campaign.py)."""
    rule_function.lets_idle_out = True
    return rule_function


def when(enabled):
    """Defines a rule only on the machines whose plan satisfies `enabled` (a fault the campaign
    asked for, a model the rule fits). A rule whose precondition is always false would still take
    part in Hypothesis's rule choice: the shrinker's simplest choice (rule 0) is then refused and
    redrawn, so steps take draws of varying length and deleting one misaligns the rest of the
    program, which stops shrinking. make_machine leaves such a rule out of the class instead."""
    def mark(rule_function):
        rule_function.enabled_when = enabled
        return rule_function
    return mark


@attrs.frozen
class Plan:
    """What one model's machine draws from, fixed for its campaign: the engine's Setup, and the
    ids, transports, values and twin kinds that the model and the build allow."""
    setup: Setup
    ids: st.SearchStrategy  # fresh ids of the model's CORRID type (id_strategy)
    # (fresh id, ID_CHOICES, which used id, sibling of which, sibling step, steer, steered edge):
    # _id's one draw. Each data.draw saves and compares the global random state (Hypothesis's
    # check that strategies leave it alone): five draws an id cost a step a tenth of its time.
    id_draw: st.SearchStrategy
    edge_ids: dict = attrs.field(eq=False)  # id edge goal -> the SPECIAL_IDS at it (steering.edge_ids)
    client_draw: st.SearchStrategy  # which client, among all (mapped onto the idle ones)
    via_draw: st.SearchStrategy
    strings_ok: bool  # string ids may be sent (a uint64 CORRID with the guard on: not)
    families: tuple  # twin families an alias draws from
    after_cancel_vias: tuple
    witness_vias: tuple  # cancel_pipelined's witness: unary gRPC, or a stream where it may go
    backlog_bursts: bool  # an iterative burst may go past the free slots
    value_and_steer: st.SearchStrategy  # (value, steer, steered index): one draw (see _value)
    sum_targets: tuple  # sums on an edge of the dtype (edges.core_targets, power_targets)
    twin_kinds: tuple  # (family, place): an integer family once per place, a string family once

    # What the rules read of the setup, by name
    spec = property(lambda self: self.setup.spec)
    settings = property(lambda self: self.setup.settings)
    stats = property(lambda self: self.setup.stats)
    server = property(lambda self: self.setup.server)
    n_clients = property(lambda self: self.setup.n_clients)
    proxied = property(lambda self: self.setup.proxied)
    as_value = property(lambda self: self.setup.as_value)
    faults = property(lambda self: self.settings.nemesis)
    lo_sum = property(lambda self: self.spec.value_range[0])
    hi_sum = property(lambda self: self.spec.value_range[1])
    floating = property(lambda self: self.spec.is_float)
    # A drawn sum target: FP16, FP32 and FP64 sums are floats
    target = property(lambda self: FloatTarget if self.floating else SumTarget)

    @property
    def small(self) -> int:
        """The bound of the small values sent where the server picks the order of requests (or
        a cancel may leave some out): 100, less on a narrow dtype (INT8: 15), so that any sum
        of a few of them from a sum 4 times that far from the dtype's edges stays exact."""
        return max(1, min(100, (self.hi_sum - self.lo_sum) // 16))
    crowd_max = property(lambda self: max(2, self.spec.capacity))  # sequences in one crowd: up to every slot

    @property
    def full_batch_ok(self) -> bool:
        """The DELAY_SCHEDULER hook holds the direct strategy's batcher threads (the oldest
        strategy batches through its own dynamic batcher); every client must be free to send a
        full batch."""
        spec = self.spec
        return "full_batch" in self.faults and spec.strategy == "direct" and self.n_clients >= spec.capacity

    @classmethod
    def of(cls, server, spec: ModelSpec, settings: FuzzSettings = FuzzSettings(),
           stats: RunStats | None = None) -> "Plan":
        why_not = nemesis.unsupported(settings.nemesis, server)
        if why_not:
            raise ValueError(why_not)
        setup = Setup.of(server, spec, settings, stats)
        version = getattr(server, "version", None)
        strings_ok = string_ids_allowed(spec, version, settings.find_known)
        families = ("other type", "other type") + twin_families(spec, version, settings.find_known)
        lo_sum, hi_sum = spec.value_range
        floating = spec.is_float
        target = FloatTarget if floating else SumTarget
        # Values: small ones, any in range, and ones that bring a running sum onto an edge of the
        # dtype (edges.core_targets and power_targets: a START sent with one lands there); a float
        # model (FP16, FP32, FP64) also gets quarters, which every sum keeps exactly below its
        # fraction limit (FP32: edges.FRACTION_LIMIT).
        # 0 and +-1 among the small ones: a value a careless model takes for "none" or a flag; and
        # OTHER_SUM (_value): what brings a sum to another live sequence's; SWING (_fit): what
        # swings from the sequence's last input.
        values = [st.one_of(st.integers(-100, 100), st.sampled_from((0, 1, -1, OTHER_SUM, SWING))), st.integers(lo_sum, hi_sum)] + [
            st.sampled_from(targets).map(lambda t: t if t is OTHER_SUM else target(t - spec.initial_sum))
            for targets in ((*core_targets(lo_sum, hi_sum, floating, spec.fraction_limit), OTHER_SUM),
                            power_targets(lo_sum, hi_sum))]
        if floating:  # quarters, and now and then (1 in 40 draws) a value past where sums stay exact
            quarters = st.integers(-400, 400).map(lambda q: q * 0.25)
            values.append(st.one_of(*[quarters] * 7, st.sampled_from(wide_values(spec.digits, spec.largest)).map(Wide)))
        ids = id_strategy(spec, version, settings.find_known)
        vias = ("stream", "stream", "grpc") + (("http",) if server.http_url and not spec.decoupled else ())
        return cls(
            setup=setup, ids=ids,
            id_draw=st.tuples(ids, st.sampled_from(ID_CHOICES), PICK, PICK, SIBLING_STEPS, STEER, STEER_INDEX),
            edge_ids=edge_ids(SPECIAL_IDS, spec.id_bits),
            client_draw=st.integers(0, setup.n_clients - 1), via_draw=st.sampled_from(vias),
            strings_ok=strings_ok, families=families,
            after_cancel_vias=("grpc",) + (("http",) if server.http_url else ()),
            # The witness, the request a cancel sweeps up, on a stream only where the build is not
            # known to lose its error there (swept-request-error-lost-on-stream), or the campaign
            # is to find that (find_known)
            witness_vias=("grpc",) + (() if setup.guarded("swept-request-error-lost-on-stream") else ("stream",)),
            # Whether an iterative burst may go past the free slots (not where the backlogged START stalls)
            backlog_bursts=not setup.guarded("iterative-backlog-start-stalls"),
            # One draw where three would do: each data.draw saves and restores the global random
            # state (Hypothesis's check that strategies leave it alone), a tenth of the fuzzer's CPU.
            value_and_steer=st.tuples(st.one_of(*values), STEER, STEER_INDEX),
            sum_targets=core_targets(lo_sum, hi_sum, floating, spec.fraction_limit) + power_targets(lo_sum, hi_sum)
            + (tuple(WideTarget(t) for t in wide_targets(spec.digits, spec.largest)) if floating else ()),
            twin_kinds=tuple((f, p) for f in TWIN_STEP_FAMILIES for p in twin_places(f, spec.id_bits)) +
            ((NEGATIVES, None), (SCALED, None)) + (tuple((f, None) for f in families) if strings_ok else ()))


class SequenceBatcherMachine(RuleBasedStateMachine):
    """Its rules choose what clients do; its engine (one per example) sends and checks. The class
    is every model's: make_machine gives a subclass its plan (what the model and build allow)."""

    plan: Plan
    left_out: tuple = ()
    expiry_ok: bool = True

    def __init__(self):
        RuleBasedStateMachine.__init__(self)
        stats = self.plan.stats
        budget = self.plan.settings.shrink_budget_s * (KNOWN_SHRINK_SHARE if stats.first_known_as else 1)
        if stats.first_failure_s is not None and time.monotonic() - stats.started - stats.first_failure_s > budget:
            # A failure that depends on the server's history can keep Hypothesis shrinking for
            # minutes of live replays. Past the budget every attempt is rejected at once; the
            # campaign then reports the shortest program it saw, flagged as not shrunk reliably.
            # A known divergence the checker named as it saw it gets a share of it: it is
            # reported to stay visible (then fuzzed on past), not reduced as far as a finding.
            event("shrink budget spent")
            stats.shrink_stopped = True
            assume(False)
        stats.examples += 1
        self.engine = Engine(self.plan.setup, salt=stats.examples)
        if stats.first_failure_s is None:
            stats.waits_spent = self._waits_had_their_share(rationed=True)
            stats.final_alone_then = stats.final_alone
        self.twin_steps: set = set()  # integer twin steps steering took in this example
        self.crowd_steered = False  # a crowd of this example was steered onto every slot
        self.behind_end_steered = False  # a run of this example was steered to send a START behind its END
        self.stuck_waits = 0  # waits of every client for windows to free slots (STUCK_WAITS)
        cov = stats.coverage
        keep_rules_on(self, needed_rules(REACHING, cov.reachable, cov.round_seen))

    def _value(self, data):
        """Drawn from a fixed range (see the rules' note); _fit keeps the running sum in range.
        Steered: a sum target on an edge of the dtype this example's sums or inputs have not
        stood on yet."""
        value, steer, index = data.draw(self.plan.value_and_steer, label="value, steer, steered value")
        cov = self.engine.stats.coverage
        plan = self.plan
        aim = choose(open_sums(plan.sum_targets, cov.here, plan.lo_sum, plan.hi_sum, cov.seen), index) \
            if steer == STEER_TOP else None
        if aim is not None:
            return (WideTarget if isinstance(aim, WideTarget) else self.plan.target)(aim - self.plan.spec.initial_sum)
        if isinstance(value, (SumTarget, FloatTarget, Wide)):
            return value
        if value is SWING:
            return Swing(index)
        if value is OTHER_SUM:
            # (a sum past the exact range, where a Wide value left one, is not aimed at: a START
            # sent with it would not stay exact)
            sums = [t for t in map(self.engine.model.total, self.engine.live())
                    if math.isfinite(t) and self.plan.lo_sum <= t <= self.plan.hi_sum]
            if sums:
                return self.plan.target(sums[index % len(sums)] - self.plan.spec.initial_sum)
            value = 0
        # Many rules send a START as drawn: a plain value stays in the model's value range, where
        # a START's sum stays exact too (INT8 iterating 3 times: -42..42), and comes unsigned on an
        # unsigned model (its sums still go down: _fit makes a sum target of a running
        # sequence's next value a difference).
        value = abs(value) if self.plan.lo_sum >= 0 else value
        return self.plan.as_value(min(max(value, self.plan.lo_sum), self.plan.hi_sum))

    def _fit(self, value, total, seq_id=None):
        """The value clamped so that it and total + value stay where the model's dtype is exact
        (a sum with a fraction: narrower); a drawn sum target becomes what brings total there,
        a Swing one of the swing values from `seq_id`'s last input."""
        if isinstance(value, Swing):
            cov = self.engine.stats.coverage
            previous = cov.last_input.get(seq_id)
            swung = open_swings(previous, self.plan.lo_sum, self.plan.hi_sum, cov.here, cov.seen) \
                if previous is not None else ()
            value = swung[value.index % len(swung)] if swung else 0
        wide = isinstance(value, (Wide, WideTarget))
        aimed = isinstance(value, (SumTarget, FloatTarget))
        if aimed:
            value = value + self.plan.spec.initial_sum - total
        # Past the range on a float model on purpose (a NaN sum is in no range); an integer sum
        # past it (a START of the range's top on a model whose initial sum narrows the range)
        # is clamped back below
        if wide or (self.plan.floating and not self.plan.lo_sum <= total <= self.plan.hi_sum):
            if not (wide or aimed) and math.isfinite(total):
                # Past the exact range a plain value keeps the sum there, by a small odd step away
                # from 0: each such sum rounds (IEEE: ModelSpec.add), and a model that keeps its
                # state at another precision, or rounds another way, drifts from the right answer
                # only over several of them (an FP16 sum kept in float32: the third). A sum target
                # still brings it back.
                value = math.copysign(2 * (abs(int(value)) % 8) + 1, total)
            return self.plan.as_value(value)  # past the exact range on purpose: IEEE rounds it (ModelSpec.add)
        if is_fraction(value) and not is_fraction(total) and abs(total) > self.plan.spec.fraction_limit:
            value = float(round(value))  # the fraction would not survive on so large a sum
        lo, hi = exact_range(self.plan.lo_sum, self.plan.hi_sum, is_fraction(value) or is_fraction(total),
                             self.plan.spec.fraction_limit)
        return self.plan.as_value(min(max(value, lo, lo - total), hi, hi - total))

    def _next_of(self, key, value, **flags):
        """The next request of the live sequence `key`: `value` fitted to its running sum."""
        return self.plan.spec.request(key[1], self._fit(value, self.engine.model.total(key), key[1]), **flags)

    # Requests whose order the server picks (or which a cancel may leave out) can make any sum
    # of a few of them: small values (|v| <= Plan.small, 100 on most dtypes; none below 0 on
    # an unsigned one), on a sum at least 4 times that from the dtype's edges, keep every such
    # sum exact.
    def _small(self, value):
        value = value if math.isfinite(value) else 0
        small = self.plan.small
        lowest = 0 if self.plan.lo_sum >= 0 else -small
        return self.plan.as_value(max(lowest, min(small, int(value))))  # whole: exact on any sum a float model holds

    def _queue_that_lasts(self) -> int:
        """The most requests behind cancel_pipelined's first that the model runs within
        QUEUE_BUDGET_S at its measured pace (one before any was measured: a slow model's witness
        behind a deep queue would wait past the prompt bound)."""
        pace = self.engine.stats.lag.typical()
        return 1 if pace <= 0 else max(1, min(DEEP_BEHIND, int(QUEUE_BUDGET_S / pace)))

    def _near_edge(self, key, requests: int = 4, ones: int = 0) -> bool:
        """Within `requests` small values (_small) and `ones` more of where the sum stops being exact: the dtype's edge,
        or for a sum with a fraction the narrower one (ModelSpec.fraction_limit) where it still
        keeps it."""
        total = self.engine.model.total(key)
        if self.plan.floating and math.isfinite(total) and total * 4 != math.floor(total * 4):
            return True  # (a Wide value's: sums rebuilt from an answer by subtraction would not be exact)
        lo, hi = exact_range(self.plan.lo_sum, self.plan.hi_sum, is_fraction(total), self.plan.spec.fraction_limit)
        margin = requests * self.plan.small + ones
        return not lo + margin <= total <= hi - margin

    def _live_until(self, moment: float) -> list:
        """The live sequences whose idle window cannot open before `moment`: requests sent to them
        meanwhile are never ambiguous."""
        return [k for k in self.engine.live() if self.engine.model.expiry_of(k).lo > moment]

    def _group_near_edge(self, key, deep: int) -> bool:
        """A cancel group's sums could leave the exact range: its first, witness and next request
        (small values), and its queue behind, one small value or `deep` ones."""
        return self._near_edge(key, 3 + (deep == 1), deep if deep > 1 else 0)

    # -- rules: what clients do -------------------------------------------------------------
    # Which sequences are live, and which clients wait on the backlog, depends on timing. So
    # every rule draws the same shape of data whatever the state (indexes and values from
    # fixed ranges) and maps it onto the state at run time, doing nothing when nothing fits.
    # Hypothesis then replays and shrinks a program without its draws drifting.

    def _client(self, data) -> int | None:
        idle = self.engine.idle_clients()
        pick = data.draw(self.plan.client_draw, label="client")
        return idle[pick % len(idle)] if idle else None

    def _last_idle(self, client) -> bool:
        """`client` is the only one free. It must stay free: were it to wait on the backlog or
        for a window too, nothing could happen until a sequence idled out, and the example's
        remaining steps would all be skipped (on a 2-slot, 500 ms model, 70 % of a campaign's
        steps were). It goes on with the live sequences instead, which frees slots."""
        return self.engine.idle_clients() == [client]

    def _stalls(self, client, seq_id) -> bool:
        """A START of `seq_id` from the last free client would wait in the backlog."""
        self.engine.model.settle(time.monotonic())
        return self._last_idle(client) and not self.engine.model.is_live(key_of(seq_id)) and not self.engine.model.free_slots()

    def _pick(self, data, items, label):
        i = data.draw(PICK, label=label)
        return items[i % len(items)] if items else None

    def _fresh(self, seq_id):
        """The id made unique to this example (salted_id), every boundary id of SPECIAL_IDS
        but 1 and 2 left as it is."""
        if isinstance(seq_id, str):
            return clip_id(f"{self.engine.salt}.{seq_id}")
        return salted_id(seq_id, self.engine.salt) % 2**self.plan.spec.id_bits or 1  # a 32-bit CORRID keeps only the low bits

    def _id(self, data, among=None):
        """A fresh id, one from `among` (default: every id used so far), or a sibling of a used
        integer id: equal to it modulo 2**p, the collision a truncated or hashed id makes
        (a fresh draw rarely lands on one). One draw (see Plan.id_draw). Steered, a fresh id
        stands at an id edge the campaign has not reached (steering.open_id_edges), and a
        sibling makes twins of a kind the example has not had live at once."""
        raw, how, which, of, step, steer, index = data.draw(
            self.plan.id_draw, label="id, id choice, which id, sibling of, step, steer, steered choice")
        if how == "fresh" and steer >= STEER_GAP_FROM:
            cov, by_goal = self.engine.stats.coverage, self.plan.edge_ids
            edge = choose(open_id_edges(by_goal, cov.here, cov.seen), index)
            raw = raw if edge is None else choose(by_goal[edge], index // len(by_goal))
        fresh = self._fresh(raw)
        pool = self.engine.used_ids if among is None else among
        reused = pool[which % len(pool)] if pool else None
        # A sibling of a live id, when there is one: the collision shows while both are live.
        live = [k[1] for k in self.engine.live()] or self.engine.used_ids
        base = live[of % len(live)] if live else None
        steered = None
        if how == "sibling" and steer >= STEER_GAP_FROM and base is not None:
            steered = self._steered_twin(base, step, index, gaps_only=steer < STEER_TOP)
        twin = steered if steered is not None else sibling(base, step, self.plan.spec.id_bits)
        if how == "reuse" and reused is not None:
            return reused
        return twin if how == "sibling" and twin is not None else fresh

    def _steered_twin(self, base, step: int, index: int, gaps_only: bool):
        """A twin of `base` of a kind (family, place) the example has not had live at once
        (`gaps_only`: nor the campaign), of any family `alias` makes, where `base` stands in the
        kind's band; None where none is open or the twin is in use. A sibling needs only the one
        slot its START takes: on a 2-slot model `alias`'s pairs seldom find two, and where the
        swarm (Hypothesis turns a random share of the rules off in each example) leaves `alias`
        out of most examples, a campaign had no other way to string twins (seen: 3 aliases in a
        `dev` campaign, 20 of 28 twin goals missed)."""
        cov = self.engine.stats.coverage
        kinds = [k for k in self.plan.twin_kinds if self._has_twin(base, *k, step)]
        aim = choose(open_twins(kinds, cov.here, cov.seen, gaps_only, riders=False), index)
        if aim is None:
            return None
        if aim[0] in TWIN_STEPS:
            step = choose(twin_aim(*aim, self.plan.spec.id_bits)[1], index // len(kinds)) or step
        twin = self._twin_of(base, aim[0], step)
        return twin if twin is not None and key_of(twin) != key_of(base) and self._free(twin) else None

    def _has_twin(self, base, family: str, place: str | None, step: int) -> bool:
        """Whether `base` has a twin of `family` at `place`: an integer step family's where it
        stands in the place's band (a modulus family's anywhere); any other where it has one
        ("5" has no case variant; a negation or a multiple is an integer's)."""
        if family in TWIN_STEPS:
            return isinstance(base, int) and (family in MODULUS_FAMILIES or stands_at(base, place))
        return self._twin_of(base, family, step) is not None

    def _via(self, data) -> str:
        return data.draw(self.plan.via_draw, label="via")

    def _lacks(self, situation: str) -> bool:
        """Whether the campaign had not reached `situation` when the example began (what steering
        toward it reads: Coverage.seen, fixed for the example and its shrinking)."""
        return f"situation: {situation}" not in self.engine.stats.coverage.seen

    def _skip(self, why: str):
        event(f"skipped: {why}")
        self._stuck_wait(self.engine.wait_while_stuck)

    def _stuck_wait(self, wait, *args, gap: bool = False) -> float:
        """Every client waits for a window to pass (the engine's `wait`, where only time can
        help), within STUCK_WAITS per example (GAP_WAITS more for a campaign's `gap`) and where
        a window is short."""
        if self.plan.setup.expiry_rationed or self.stuck_waits >= STUCK_WAITS + (GAP_WAITS if gap else 0):
            return 0.0
        waited = wait(*args)
        self.stuck_waits += waited > 0
        self.engine.stats.stuck_s += waited
        return waited

    def _faults_had_their_share(self) -> bool:
        spent = sum(self.engine.stats.fault_s.values())
        return spent > FAULT_SHARE * (time.monotonic() - self.engine.stats.started)

    def _waits_had_their_share(self, rationed: bool | None = None) -> bool:
        """A long wait is waited out at the example's end (the others have finished); `rationed`:
        whether this wait counts as a long one (default: whether the model's idle window does)."""
        rationed = self.plan.setup.expiry_rationed if rationed is None else rationed
        return rationed and self.engine.stats.wait_s > WAIT_SHARE * (time.monotonic() - self.engine.stats.started)

    def _fits_the_campaign(self, wait_s: float) -> bool:
        """Whether a wait steered outside the share of waits (the first sequence kept alive, a long
        life: once a campaign each) fits in that share of the whole campaign: a timed campaign of
        20 s spent 4 s keeping one alive and 10 s on a long life. A campaign bounded by examples,
        not time, always has room."""
        stats = self.engine.stats
        return wait_s <= WAIT_SHARE * (stats.stop_at - stats.started)

    def _steered_start(self, seq_id, end: bool, index: int, gaps_only: bool) -> tuple:
        """(id, END or not) of a START steered onto a shape (START, START+END) and an id state
        (fresh, live, done) no request of the example had yet (`gaps_only`: nor the campaign;
        steering.open_start_goals): the drawn id where it stands so, else one of the example's
        ids that does."""
        engine = self.engine
        usable = [i for i in engine.used_ids if not engine.blocked(i)]
        # An iterative sequence takes no request while it runs (its live ids are no goal)
        ids = {"fresh": [seq_id] if engine.id_state(seq_id) == "fresh" else [],
               "live": [] if self.plan.spec.iterations else [k[1] for k in engine.live()],
               "done": [i for i in usable if engine.id_state(i) == "done"]}
        cov = engine.stats.coverage
        aims = open_start_goals([s for s in ID_STATES if ids[s]], cov.here, cov.seen, gaps_only)
        aim = choose(aims, index)
        if aim is None:
            return seq_id, end
        shape, state = aim
        pool = ids[state]
        return (seq_id if seq_id in pool else choose(pool, index // len(aims))), FLAGS[shape][1]

    @rule(data=st.data())
    def start(self, data):
        """A client starts a sequence (sometimes start-and-end in one request) and usually goes
        on with it for a few requests back to back on its stream, as a streaming client does:
        sequences are deep from the start, not only in `run`. Shrinks to the START alone."""
        client, seq_id = self._client(data), self._id(data)
        end = data.draw(st.sampled_from([False] * 9 + [True]), label="start-and-end")
        value, via = self._value(data), self._via(data)
        steer, index = data.draw(STEER_AND_INDEX, label="steer start, steered start")
        if steer >= STEER_GAP_FROM:
            seq_id, end = self._steered_start(seq_id, end, index, gaps_only=steer < STEER_TOP)
        more = data.draw(START_MORE, label="more requests")
        # Only when there are more: every choice costs the shrinker live replays, and a
        # sequence's values rarely matter, so a START shrunk to itself draws no seed at all.
        seed = data.draw(st.integers(0, 255), label="values seed") if more else 0
        if client is None or self.engine.blocked(seq_id):
            return self._skip("start: no idle client or id busy")
        if self._stalls(client, seq_id):
            return self._skip("start: the last free client would wait on the backlog")
        req = self.plan.spec.request(seq_id, value, start=True, end=end)
        began = time.monotonic()
        exp = self.engine.send(client, req, via, "start")
        if more and not end and isinstance(exp, Answer):
            self._go_on(client, seq_id, exp.value, more, random.Random(seed), scale=100, end=False,
                        latency=time.monotonic() - began, action="continue")

    @rule(data=st.data())
    def continue_(self, data):
        """A client sends the next request of a live sequence."""
        self._next_of_live(data, end=False, start=False, action="continue")

    @rule(data=st.data())
    def end(self, data):
        """A client ends a live sequence; now and then (1 in 4, and until the campaign has had
        one) it starts its next sequence on the same id at once, as a client that keeps one
        correlation id does: nothing the model kept of the ended sequence may reach the new one
        (a cleanup deferred past the END's execution, a cache keyed by id; the sixteenth
        hold-out missed such a cleanup without it)."""
        sent = self._next_of_live(data, end=True, start=False, action="end")
        cov = self.engine.stats.coverage
        goal = f"situation: {REUSED_AT_ONCE}"  # steered: until the campaign, or the example, has had one
        again = data.draw(AT_ONCE, label="its id again at once") or (goal not in cov.seen and goal not in cov.here)
        value = self._value(data)
        if not again or sent is None or self.plan.spec.iterations or self.engine.start_end_guard:
            return
        client, req, via, exp = sent
        seq_id = req.seq_id
        if not isinstance(exp, Answer) or self.engine.model.is_live(key_of(seq_id)) or self.engine.blocked(seq_id) \
                or self._stalls(client, seq_id):
            return
        start = self.plan.spec.request(seq_id, self._fit(value, self.plan.spec.initial_sum), start=True)
        self.engine.send(client, start, via, "start its id again at once")
        if self.engine.model.reused_at_once:
            cov.situation(REUSED_AT_ONCE)  # now, not at the example's end: steering stops here

    @rule(data=st.data())
    def restart(self, data):
        """A client sends START on an id that is still live: state restarts, slot kept;
        sometimes with END too, which restarts and ends it in one request."""
        end = data.draw(st.sampled_from([False, False, False, True]), label="restart-and-end")
        self._next_of_live(data, end=end, start=True, action=LIVE_ACTIONS["START+END" if end else "START"])

    @reaches("depth ", "rounding run ", f"situation: {PIPELINED_RESTART}", f"situation: {START_BEHIND_END}")
    @rule(data=st.data())
    def run(self, data):
        """A client runs one sequence for k requests back to back on its stream: a fresh START
        and k - 1 more, or k more of a live sequence; the last one sometimes ENDs it. Deep
        sequences are where state corruption that builds up over many requests shows."""
        client = self._client(data)
        fresh = data.draw(st.booleans(), label="fresh sequence")
        key = self._pick(data, self.engine.live(), "sequence")
        seq_id = self._fresh(data.draw(self.plan.ids, label="id"))
        k = data.draw(RUN_LENGTHS, label="requests")
        seed = data.draw(st.integers(0, 2**32 - 1), label="values seed")
        scale = data.draw(st.sampled_from([100, 2**20]), label="value scale")
        end = data.draw(st.sampled_from([False, False, True]), label="end at the last")
        # Steered only where the drawn length is past 1: the shrinker, dropping the steer, is left
        # a run that still sends a second request (a steered 1025-deep run over a drawn length of
        # 1 could not shrink, and a known divergence, which is not cut further, kept all of it).
        steer = data.draw(STEER_DEPTH, label="steer depth")
        deeper = steer == STEER_DEPTH_TOP and k > 1
        # (and another 1 in 8 of a float model's runs to sums that round one after another)
        rounding = steer == STEER_DEPTH_TOP - 1 and k > 1 and self.engine.stats.coverage.rounds is not None
        restart_at = data.draw(RESTART_AT, label="restart at (a fraction of the run)")
        again = data.draw(AGAIN, label="a new sequence on its id right behind its END")
        if client is None:
            return self._skip("run: no idle client")
        if deeper:  # one past a depth goal not reached (steering.open_depth), in one life: no restart
            current = self.engine.model.requests_of(key) if key is not None and not fresh else 0
            k = open_depth(self._deepest(), current, self.engine.stats.coverage.seen) or k
            restart_at = None
        aim = None
        if rounding:  # past a rounding-run goal not reached (steering.open_rounding), in one life
            cov, plan = self.engine.stats.coverage, self.plan
            live = key is not None and not fresh
            total = self.engine.model.total(key) if live else plan.spec.initial_sum
            # (a sum at inf or NaN, or far past the exact range, where an odd step no longer moves
            # it, rounds nothing more: the run starts a fresh sequence instead)
            far = not math.isfinite(total) or abs(total) > 2 * rounding_target(plan.spec.digits)
            past = live and not far and not plan.lo_sum <= total <= plan.hi_sum
            more = open_rounding(cov.longest_rounding, cov.rounding.get(key[1], 0) if past else 0, cov.seen)
            rounding = more is not None
            if rounding:
                fresh = fresh or (live and far)
                k, restart_at = max(k, more + 1), None
                # its first request brings the sum past where its dtype is exact (unless it is
                # there already), from where _fit keeps it there by odd steps that each round
                if not past:
                    base = total if live and not fresh else plan.spec.initial_sum
                    target = rounding_aim(plan.spec, base, seed % 2 - 0.5)
                    aim = None if target is None else WideTarget(target - plan.spec.initial_sum)
        if fresh or key is None:
            if self.engine.blocked(seq_id):
                return self._skip("run: id busy")
            if self._stalls(client, seq_id):
                return self._skip("run: the last free client would wait on the backlog")
            total, start = self.plan.spec.initial_sum, True
        else:
            seq_id, total, start = key[1], self.engine.model.total(key), False
        values = random.Random(seed)
        first = self.plan.spec.request(seq_id, self._fit(values.randint(-scale, scale) if aim is None else aim, total),
                                       start=start, end=end and k == 1)
        # Its id again: where the run ENDs a sequence of several, a START right behind that END (a
        # client that keeps one correlation id; steered once an example, ending the run for it; not
        # on an iterative model, whose sequence is its START); else, of a fresh one, one START+END
        # and a START.
        behind_ok = k > 1 and not (deeper or rounding) and not self.plan.spec.iterations and self.plan.spec.capacity > 1 and \
            self.engine.setup.start_behind_its_end_ok
        if behind_ok and not self.behind_end_steered:
            self.behind_end_steered = again = end = True
        behind_end = again and end and behind_ok
        if behind_end:
            restart_at = None  # (its END must not be a START+END)
        if again and start and not behind_end and not (deeper or rounding) and not self.engine.start_end_guard \
                and not self.engine.start_behind_end_guard:  # one START+END, and its id again
            return self._again_behind_end(client, attrs.evolve(first, end=True), values)
        began = time.monotonic()
        exp = self.engine.send(client, first, "stream", f"run 1/{k}")
        if isinstance(exp, Answer):  # else queued in the backlog, parked, or refused: it stops here
            self._go_on(client, seq_id, exp.value, k - 1, values, scale, end, time.monotonic() - began,
                        action="run", numbered=(1, k), restart_at=None if restart_at is None else int(restart_at * (k - 1)),
                        stop_after_s=LEVEL_JUMP_S if deeper or rounding else None, start_behind=behind_end)

    @when(lambda plan: not plan.spec.iterations and plan.spec.capacity > 1)
    @reaches("churn ")
    @rule(data=st.data())
    def churn(self, data):
        """While one sequence lives, a client runs short sequences on fresh ids back to back on its
        stream (each a START+END, or a START and its END), the live one going on after each chunk
        of them: a model that keeps its sums in a bounded cache or table (evicting, rehashing,
        recycling entries as ids come and go) loses the live one's."""
        client = self._client(data)
        key = self._pick(data, self.engine.live(), "sequence")
        n = data.draw(CHURN_SIZES, label="sequences")
        shape = data.draw(CHURN_SHAPES, label="each sequence")
        raw = data.draw(self.plan.ids, label="first id")
        seed = data.draw(st.integers(0, 2**32 - 1), label="values seed")
        steer = data.draw(STEER_DEPTH, label="steer churn")
        alike = data.draw(CHURN_ALIKE, label="alike sequences")
        if client is None:
            return self._skip("churn: no idle client")
        model = self.engine.model
        if not self._make_room(client, "stream", key, self._small(seed % 201 - 100), 1 if key is not None else 2):
            return self._skip("churn: no free slot beside the sequence that lives through it")
        steered = steer >= STEER_DEPTH_TOP // 2
        if steered:  # past a churn goal not reached (steering.open_churn): 1 in 8, 1 in 2
            aimed = open_churn(model.churn, model.churn_of(key) if key is not None else 0,  # for the campaign's
                               self.engine.stats.coverage.seen, gaps_only=steer < STEER_DEPTH_TOP)
            # Aimed at a campaign's gap, each a START, then its END: a table whose entries come and
            # go with ids churns only with sequences it stores, and a model that drops a sum at END
            # may never store a START+END's. Ids from one on, beside the live one's: some pair is m
            # apart for every m up to the churn's length, where a table of m buckets makes them one.
            # Aimed at the example's own (the top flag), as drawn: one-request sequences too.
            if aimed:
                n, shape = aimed, shape if steer == STEER_DEPTH_TOP else "START, END"
        values = random.Random(seed)
        ids = self._churn_ids(raw, n + (key is None))
        if key is None and ids:  # a fresh sequence lives through it
            keeper = ids.pop(0)
            start = self.plan.spec.request(keeper, self._fit(values.randint(-100, 100), self.plan.spec.initial_sum),
                                           start=True)
            if not isinstance(self.engine.send(client, start, "stream", "churn: a sequence to live through it"), Answer):
                return
            key = key_of(keeper)
        reqs = []
        for seq_id in ids:
            first = self._fit(values.randint(-100, 100) if alike is None else alike, self.plan.spec.initial_sum)
            reqs.append(self.plan.spec.request(seq_id, first, start=True, end=shape == "START+END"))
            if shape != "START+END":
                then = self._fit(values.randint(-100, 100) if alike is None else alike,
                                 self.plan.spec.initial_sum + first)
                reqs.append(self.plan.spec.request(seq_id, then, end=True))
        if not reqs:
            return self._skip("churn: no fresh ids")
        began = time.monotonic()
        if not isinstance(self.engine.send(client, reqs[0], "stream", f"churn 1/{len(reqs)}"), Answer):
            return
        latency = max(time.monotonic() - began, 1e-4)
        chunk = self._chunk_size(latency)
        i = 1
        while i < len(reqs):
            if self.engine.budget_spent():
                return event(f"churn: stopped after {i} of {len(reqs)}, the campaign's budget is spent")
            if steered and time.monotonic() - began > LEVEL_JUMP_S:
                return event(f"churn: a steered churn stopped after {i} of {len(reqs)}, at {LEVEL_JUMP_S:g} s")
            self.engine.collect()
            self.engine.end_aging(keep=key)  # (every chunk before was answered)
            sent = []
            for j in range(i, min(len(reqs), i + chunk)):
                item = self.engine.send_nowait(client, reqs[j], f"churn {j + 1}/{len(reqs)}")
                if item is None or not isinstance(item[2], Answer):
                    return self.engine.check_sent(sent + [item] if item else sent, latency)
                sent.append(item)
            if key not in self.engine.live():
                return self.engine.check_sent(sent, latency)
            item = self.engine.send_nowait(client, self._next_of(key, values.randint(-100, 100)),
                                           "churn: the live sequence goes on")
            self.engine.check_sent(sent + [item] if item else sent, latency)
            if item is None or not isinstance(item[2], Answer):
                return
            i += len(sent)
        event(f"churn: {len(ids)} sequences came and went beside a live one")

    def _churn_ids(self, raw, n: int) -> list:
        """Up to `n` distinct fresh ids from `raw` on, none in use: consecutive integers from the
        salted `raw` (salted one by one, a run crossing a band boundary would scatter)."""
        if isinstance(raw, str) and self.plan.spec.corrid_type != "STRING":
            raw = int.from_bytes(raw.encode()[:7], "big") or 1  # ids of the model's own type
        base = self._fresh(raw) if isinstance(raw, int) else None
        out = []
        for i in range(2 * n):
            seq_id = (base + i) % 2**self.plan.spec.id_bits if base is not None else self._fresh(f"{raw}~{i}")
            if seq_id not in out and seq_id not in (0, "") and not self.engine.blocked(seq_id) \
                    and not self.engine.model.is_live(key_of(seq_id)) and not too_long(seq_id):
                out.append(seq_id)
            if len(out) == n:
                break
        return out

    def _again_behind_end(self, client, first, values):
        """A one-request sequence (START+END) and a new sequence on its id (a START) pipelined
        right behind it on one stream: the START may reach the batcher before the END has been
        released, while the id still holds its slot; it must start afresh all the same (an
        iterative model's stalled on some builds: iterative-start-after-start-end-stalls)."""
        item = self.engine.send_nowait(client, first, "run 1/1")
        if item is None or not isinstance(item[2], Answer):
            return self.engine.check_sent([item] if item else [])
        then = self.plan.spec.request(first.seq_id, self._fit(values.randint(-100, 100), self.plan.spec.initial_sum),
                                      start=True)
        second = self.engine.send_nowait(client, then, "a new sequence on its id, right behind its END")
        self.engine.check_sent([item] + ([second] if second else []))

    def _deepest(self) -> int:
        """The most requests one sequence of this example has had: ended, or live and free to send on."""
        return max([*self.engine.model.depth.lengths, *map(self.engine.model.requests_of, self.engine.live())], default=0)

    def _go_on(self, client, seq_id, total, n, values, scale, end, latency, action, numbered=(0, 0),
               restart_at: int | None = None, stop_after_s: float | None = None, start_behind: bool = False):
        """Sends the next n requests of a sequence pipelined on the client's stream, a chunk at
        a time; the last one ENDs it if `end`, and the one at `restart_at` (0: the first) is a
        START on it, restarting the live sequence behind the requests queued before it; with
        `start_behind`, a new sequence's START on its id goes right behind that END. The
        stream keeps their order, and requests already queued run even if the sequence idles
        out meanwhile (TRITON_NOTES), so every answer is the model's. A chunk is kept to a
        fraction of the idle timeout at the latency the first request saw (a slow model gets
        one request at a time)."""
        if self.plan.spec.iterations:
            # An iterative sequence is its START (its last release ends it): nothing follows.
            return event(f"{action}: nothing after an iterative START, which ends its sequence")
        done, k = numbered
        label = (lambda i: f"{action} {done + i + 1}/{k}") if k else (lambda i: f"{action} ({i + 1} of {n})")

        def nth(i, total):
            restart = i == restart_at
            value = self._fit(values.randint(-scale, scale), self.plan.spec.initial_sum if restart else total)
            return self.plan.spec.request(seq_id, value, start=restart, end=end and i == n - 1)

        latency = max(latency, 1e-4)
        chunk = self._chunk_size(latency)
        i, began = 0, time.monotonic()
        while i < n:
            if i and self.engine.budget_spent():
                return event(f"{action}: stopped after {i} of {n}, the campaign's budget is spent")
            if i and stop_after_s is not None and time.monotonic() - began > stop_after_s:
                return event(f"{action}: a steered run stopped after {i} of {n}, at {stop_after_s:g} s")
            self.engine.collect()
            self.engine.end_aging(keep=key_of(seq_id))  # (every chunk before was answered)
            sent = []
            # Where a START follows the END, the END and the request before it go in a chunk of
            # their own: that one runs while the END and the START wait, and the next execution
            # can carry both (behind more of its sequence, the END would run after the START's).
            upto = min(n, i + chunk, n - 2 if start_behind and end and i < n - 2 else n)
            for j in range(i, upto):
                item = self.engine.send_nowait(client, nth(j, total), label(j))
                if item is None or not isinstance(item[2], Answer):
                    # A slow chunk brought the sequence to its idle window (parked: only this
                    # client waits) or past it (refused): the run stops here.
                    self.engine.check_sent(sent + [item] if item else sent, latency)
                    return
                total = item[2].value
                sent.append(item)
            behind = self._start_behind_end(client, seq_id, values, scale) if start_behind and end and \
                i + len(sent) == n else []
            self.engine.check_sent(sent + behind, latency)
            if behind and isinstance(behind[0][2], Answer):  # let in at once, and answered right
                self.engine.stats.coverage.situation(START_BEHIND_END)
            if restart_at is not None and i <= restart_at < i + len(sent):  # answered right (else check_sent raised)
                self.engine.stats.coverage.situation(PIPELINED_RESTART)
            i += len(sent)
        event(f"{action}: {n} more requests pipelined")

    def _start_behind_end(self, client, seq_id, values, scale) -> list:
        """A new sequence's START on `seq_id`, sent right behind its END on the client's stream,
        neither waited for: each sequence must keep its own sum, whichever the server runs first (a
        START let into the backlog waits for a slot: collect() checks it). Its item, for check_sent."""
        # Not 0: a new sequence that starts from the initial sum answers the overtaken END as a
        # state reset before it would (verdicts.start_ran_first could not tell them apart).
        value = self._fit(values.randint(-scale, scale), self.plan.spec.initial_sum) or \
            self._fit(self.plan.as_value(1), self.plan.spec.initial_sum) or self.plan.as_value(-1)
        start = self.plan.spec.request(seq_id, value, start=True)
        # Only where a slot besides the END's is free: else the server holds the START in the
        # backlog until the END has run (nothing to share an execution with), and another model's
        # Python backend can die as such a START is let in (iterative-beside-backlog-crash: a
        # clean-clone CI lost its shared server so, beside two one-slot models).
        self.engine.model.settle(time.monotonic())
        if self.engine.blocked(seq_id) or self.engine.model.free_slots() < 2:
            return []
        item = self.engine.send_nowait(client, start, "a new sequence on its id, right behind its END")
        # (None: into the backlog, or held back: it runs after the END, in a slot the END frees)
        return [item] if item is not None else []

    def _chunk_size(self, latency: float) -> int:
        """Requests pipelined on one stream before their answers are read: a fraction of the idle
        timeout at `latency` (a slow model gets one at a time)."""
        return max(1, min(RUN_CHUNK, int(0.2 * self.plan.spec.idle_s / latency)))

    def _next_of_live(self, data, *, end, start, action):
        """A request on a live sequence with these flags; steered, with the flags (coverage's
        request shapes) no request on a live id of this example has had yet. (client, request,
        how it went, what the model expected) where one was sent."""
        client = self._client(data)
        key = self._pick(data, self.engine.live(), "sequence")
        value, via = self._value(data), self._via(data)
        timeout = data.draw(REQUEST_TIMEOUTS, label="timeout (us)")
        steer, index = data.draw(STEER, label="steer flags"), data.draw(STEER_INDEX, label="steered flags")
        if client is None or key is None:
            return self._skip(f"{action}: no idle client or no live sequence")
        if steer == STEER_TOP:
            cov = self.engine.stats.coverage
            shapes = [f for f in FLAG_SHAPES if flags_goal(f, "live") not in cov.here]
            shape = choose(campaign_first(shapes, lambda f: [flags_goal(f, "live")], cov.seen), index)
            if shape is not None:
                start, end = FLAGS[shape]
                action = LIVE_ACTIONS[shape]
        total = self.plan.spec.initial_sum if start else self.engine.model.total(key)
        req = self.plan.spec.request(key[1], self._fit(value, total, key[1]), start=start, end=end, timeout_us=timeout)
        return client, req, via, self.engine.send(client, req, via, action)

    @rule(data=st.data())
    def send_without_start(self, data):
        """A client continues an id with no live sequence: never seen, ended, expired, cancelled."""
        client = self._client(data)
        dead = [i for i in self.engine.used_ids if not self.engine.model.is_live(key_of(i))]
        seq_id = self._id(data, among=dead)
        end = data.draw(st.booleans(), label="end")
        value, via = self._value(data), self._via(data)
        if client is None or self.engine.model.is_live(key_of(seq_id)) or self.engine.blocked(seq_id):
            return self._skip("send without START: no idle client or id live")
        req = self.plan.spec.request(seq_id, value, end=end)
        self.engine.send(client, req, via, "send without START")

    @rule(data=st.data())
    def misuse(self, data):
        """A malformed request: id 0 or "", wrong dtype, batch > 1, over-long string id. It
        must be refused without disturbing the live sequence it names."""
        client = self._client(data)
        live_ids = [k[1] for k in self.engine.live()]
        target = self._id(data, among=live_ids)
        kind = data.draw(st.sampled_from(["zero id", "empty id", "wrong dtype", "batch 2", "long id"]),
                         label="misuse")
        start = data.draw(st.booleans(), label="start")
        length = data.draw(st.integers(MAX_STRING_ID + 1, 300), label="long id length")
        value, via = self._value(data), self._via(data)
        fields = dict(seq_id=target, start=start, dtype=self.plan.spec.dtype)
        if kind == "zero id":
            fields["seq_id"] = 0
        elif kind == "empty id":
            fields["seq_id"] = ""
        elif kind == "wrong dtype":
            fields["dtype"] = "FP32" if self.plan.spec.dtype == "INT32" else "INT32"
        elif kind == "batch 2":
            fields["batch"] = 2
        else:
            fields["seq_id"] = "L" * length
        if client is None or self.engine.blocked(fields["seq_id"]):
            return self._skip("misuse: no idle client or id busy")
        if self.plan.spec.iterations and fields["seq_id"] in (0, ""):
            # The core's iterative sequencer gives an id-less request an id and START of its
            # own (tests/test_iterative.py pins what comes of it).
            return self._skip("misuse: an iterative model takes an id-less request as a sequence")
        # (a value past int32 would not cast to an integer dtype: the misuse is the request's shape)
        req = self.plan.spec.request(value=value if math.isfinite(value) and abs(value) < 2**31 else 1.0, **fields)
        self.engine.send(client, req, via, f"misuse ({kind})")

    @when(lambda plan: not plan.spec.iterations)  # it goes on with sequences an iterative START has ended
    @reaches("twins live: ")
    @rule(data=st.data())
    def alias(self, data):
        """A client starts a sequence whose id aliases a live one, a twin of one family: its
        other-typed twin (5 and "5"), an integer equal to it modulo a power of two, a neighbour
        or 10**k away (what a truncated, hashed or float id makes one key), or a string id's
        case variant, look-alike, ... (edges.STRING_FAMILIES); then a client sends on the older
        one, sometimes starts more twins of it of other families, one after another, and goes
        on with the older one and the last twin in turn for a few more rounds. They are
        distinct sequences: each keeps its own sum. Where no live sequence has a twin of the
        family, a fresh one is started first, so the rule alone is the whole collision (START
        a, START b, a's next), which is what it shrinks to."""
        client = self._client(data)
        key = self._pick(data, self.engine.live(), "sequence")
        fresh = self._fresh(data.draw(self.plan.ids, label="id"))
        first = self._twin_draw(data)
        more = [self._twin_draw(data) for _ in range(data.draw(MORE_TWINS, label="more twins"))]
        values = [self._value(data) for _ in range(3)]
        via = self._via(data)
        rounds = data.draw(START_MORE, label="more rounds")
        turns = [data.draw(TURNS, label=f"round {i + 1}") for i in range(rounds)]
        seed = data.draw(st.integers(0, 255), label="values seed") if rounds else 0
        if client is None:
            return self._skip("alias: no idle client")
        kind, band, step = self._twin_kind(first)
        found = self._alias_base(key, fresh, kind, band, step)
        if found is None:
            return self._skip(f"alias: no id with a free twin ({kind})")
        base, twin = found
        older = key_of(base)
        cov = self.engine.stats.coverage
        gap = any(twin_goal(*k) not in cov.seen for k in twins_of(base, twin, self.plan.spec.id_bits))
        # Both must hold slots at once for their states to meet; a START queued behind the
        # backlog is `start`'s case. Live sequences end first to make room (on a small model
        # the slots are full most of the time).
        needed = 1 if self.engine.model.is_live(older) else 2
        if not self._make_room(client, via, older, values[0], needed, gap):
            return self._skip("alias: no free slot for both")
        if not self.engine.model.is_live(older):
            if not isinstance(self.engine.send(client, self.plan.spec.request(base, values[0], start=True), via, "start"), Answer):
                return
        if not self._start_twin(client, via, base, twin, kind, values[1], values[2]):
            return
        for raw in more:
            kind, _, step = self._twin_kind(raw)  # twins of the same id: its band
            other = self._twin_of(base, kind, step)
            if other is None or not self._free(other):
                continue
            if not self.engine.model.free_slots():  # the last twin makes room for the next
                last = key_of(twin)
                end = self.plan.spec.request(twin, self._fit(values[0], self.engine.model.total(last)), end=True)
                if last not in self.engine.live() or not isinstance(self.engine.send(client, end, via, "end the twin"), Answer):
                    return
                self.engine.model.settle(time.monotonic())
                if not self.engine.model.free_slots():
                    return
            if not self._start_twin(client, via, base, other, kind, values[1], values[2]):
                return
            twin = other
        self._take_turns(client, via, twin, base, turns, random.Random(seed))

    def _twin_draw(self, data) -> tuple:
        """What names a twin family, drawn in the same shape whatever is open: an other-typed or
        string twin or not, which string family, which integer step, and the steering."""
        other_type = self.plan.strings_ok and data.draw(st.booleans(), label="other-typed twin")
        family = data.draw(st.sampled_from(self.plan.families), label="twin family") if other_type else ""
        step = data.draw(SIBLING_STEPS, label="sibling step")
        return family, step, data.draw(STEER, label="steer twin"), data.draw(STEER_INDEX, label="steered twin")

    def _twin_kind(self, raw) -> tuple:
        """(family, band, integer step) for a drawn twin: steered, a family (an integer one at
        a place, coverage.twin_places) this example has not had live at once yet, as often as
        there is one (an integer family's step from the index); band None: wherever the id
        stands."""
        family, step, steer, index = raw
        cov = self.engine.stats.coverage
        aim = choose(open_twins(self.plan.twin_kinds, cov.here, cov.seen), index) if steer >= STEER_TWIN_FROM else None
        if aim is not None and aim[0] in TWIN_STEPS:  # a step of its place, a new one first
            band, steps = twin_aim(*aim, self.plan.spec.id_bits)
            step = choose([s for s in steps if s not in self.twin_steps] or steps, index // len(self.plan.twin_kinds))
            self.twin_steps.add(step)
            # Ids 2^k apart are made aligned to 2^k too where the example lacks that (the base moved
            # there: its twin then has the same low bits all 0), not in turns of their own (the
            # other families' turns would come fewer).
            aligned = aligned_twin(aim, cov.here)
            return aim[0], aligned or band, step
        if aim is not None:
            return aim[0], None, step
        return family or sibling_family(step), None, step

    def _twin_of(self, base, kind: str, step: int):
        if kind == NEGATIVES:
            return negation(base, self.plan.spec.id_bits)
        if kind == SCALED:
            return scaled(base, step, self.plan.spec.id_bits)
        return sibling(base, step, self.plan.spec.id_bits) if kind in TWIN_STEPS else _twin(base, kind)

    def _free(self, seq_id) -> bool:
        """No sequence of `seq_id` live or on its way: a START on it would begin a new one."""
        key = key_of(seq_id)
        return not self.engine.blocked(seq_id) and not self.engine.model.is_live(key) and not self.engine.model.is_ghost(key)

    def _alias_base(self, key, fresh, kind: str, band: str | None, step: int):
        """(id, its twin of `kind`): the live sequence's id where it has a free twin (and stands
        in `band`, if given), else a fresh id that has one (drawn, or a string or an integer
        made for it: "5" has no case variant, a string no integer twin; moved into `band`)."""
        ours = [key[1]] if key is not None and (band is None or stands_at(key[1], band)) else []
        made = [fresh, self._fresh("Seq"), self._fresh(5)]
        if band is not None:  # the integers among them ("Seq" is none; the made 5 always is)
            made = [into_place(i, band) for i in made if isinstance(i, int)]
        for base in ours + made:
            twin = self._twin_of(base, kind, step)
            if twin is None or key_of(twin) == key_of(base) or not self._free(twin):
                continue
            if (key is not None and base == key[1]) or self._free(base):
                return base, twin
        return None

    def _make_room(self, client, via, keep, value, needed: int, gap: bool = False) -> bool:
        """Ends live sequences other than `keep` until `needed` slots are free; where sequences
        left to expire hold them (on a small model, most of the time: seen, 63 of 69 churns of a
        2-slot campaign found no room), every client waits for those (_stuck_wait) and it tries
        again (GAP_WAITS more times for a `gap`, a goal the campaign lacks). False where it
        cannot, or where `keep`, live before, idled out meanwhile (seen once in CI: a churn's
        keeper reaped during the wait, then a KeyError)."""
        was_live = keep is not None and keep in self.engine.live()
        made = self._end_for_room(client, via, keep, value, needed) or \
            (self._stuck_wait(self.engine.wait_for_slots, needed, keep, gap=gap) > 0 and
             self._end_for_room(client, via, keep, value, needed))
        return made and not (was_live and keep not in self.engine.live())

    def _end_for_room(self, client, via, keep, value, needed: int) -> bool:
        """Ends live sequences other than `keep` until `needed` slots are free (a slot an END
        frees while STARTs wait in the backlog goes to the first of them: then one more);
        False where it cannot (nothing else to end, or an END is not answered at once)."""
        self.engine.model.settle(time.monotonic())
        while self.engine.model.free_slots() < needed:
            others = [k for k in self.engine.live() if k != keep]
            if not others:
                return False
            end = self._next_of(others[0], value, end=True)
            if not isinstance(self.engine.send(client, end, via, "end another sequence to make room"), Answer):
                return False
            self.engine.model.settle(time.monotonic())
        return True

    def _start_twin(self, client, via, base, twin, kind: str, value, next_value) -> bool:
        """START `twin` while `base` is live, then the next request of `base`: True where both
        were answered at once and `base` is still live."""
        older = key_of(base)
        if older not in self.engine.live():  # it idled out since (a starved machine: seen, a KeyError)
            return False
        # The twin starts from a sum the older one does not have, so a mix-up of the two always
        # shows, whatever the values shrink to (with both at 0 it would not, and Hypothesis
        # could not drop a step that made them differ). A sum target is fitted first: with a
        # non-zero initial sum its value alone can lie past the model's range.
        value = self._fit(value, self.plan.spec.initial_sum) if isinstance(value, (SumTarget, FloatTarget)) else value
        if self.plan.spec.initial_sum + value == self.engine.model.total(older):
            value = self.plan.as_value(value - 1 if value > 0 else value + 1)  # toward 0: stays in range
        action = {"other type": "start the other-typed twin"}.get(kind, f"start its twin ({kind})")
        second = self.plan.spec.request(twin, value, start=True)
        if not isinstance(self.engine.send(client, second, via, action), Answer) or older not in self.engine.live():
            return False
        req = self.plan.spec.request(base, self._fit(next_value, self.engine.model.total(older)))
        return isinstance(self.engine.send(client, req, via, "continue the aliased sequence"), Answer)

    def _take_turns(self, client, via, twin, base, turns, values):
        """The alias and the aliased sequence, one request each per round (or the older one
        alone), until one of them is no longer live or a request is not answered at once."""
        both, rounds = ((twin, "its alias"), (base, "the aliased sequence")), len(turns)
        for i, who in enumerate(turns):
            if who == "older ends":
                return self._end_one_twin(client, via, base, twin, values)
            for seq_id, whose in both if who == "both" else both[1:]:
                key = key_of(seq_id)
                if key not in self.engine.live():
                    return
                req = self.plan.spec.request(seq_id, self._fit(values.randint(-100, 100), self.engine.model.total(key)))
                if not isinstance(self.engine.send(client, req, via, f"continue {whose} ({i + 1} of {rounds})"), Answer):
                    return

    def _end_one_twin(self, client, via, older, twin, values):
        """The older twin ENDs, then the other goes on: its sum must be its own still."""
        for seq_id, end, what in ((older, True, "end the aliased sequence"), (twin, False, "its alias goes on")):
            key = key_of(seq_id)
            if key not in self.engine.live():
                return
            req = self.plan.spec.request(seq_id, self._fit(values.randint(-100, 100), self.engine.model.total(key)),
                                         end=end)
            if not isinstance(self.engine.send(client, req, via, what), Answer):
                return

    @when(lambda plan: not plan.spec.iterations)  # an iterative START ends its own sequence
    @rule(data=st.data())
    def queue_behind_full(self, data):
        """Fresh STARTs take every free slot, one more START waits in the backlog, then a
        client ends one of the live sequences: the slot it frees must go to the waiting START,
        which must be answered with its own sum (the backlog drains as slots free). Where the
        slots are full already, it is the one START and the END."""
        fresh = [self._fresh(data.draw(self.plan.ids, label="id")) for _ in range(self.plan.spec.capacity + 1)]
        values = [self._value(data) for _ in range(self.plan.spec.capacity + 2)]
        which = data.draw(st.integers(0, 15), label="which sequence ends")
        self.engine.collect()
        clients = self.engine.idle_clients()
        self.engine.model.settle(time.monotonic())
        if len(clients) < 2 or self.engine.pending or self.engine.model.has_backlog():
            return self._skip("queue behind full: fewer than two idle clients, or the backlog waits")
        new = [i for n, i in enumerate(fresh) if self._free(i) and key_of(i) not in map(key_of, fresh[:n])]
        free = self.engine.model.free_slots()
        fill, queued = new[:free], new[free:][:1]
        if not queued or not (self.engine.live() or fill):
            return self._skip("queue behind full: no fresh id left to queue, or nothing to end")
        for seq_id, value in zip(fill, values):
            if not isinstance(self.engine.send(clients[0], self.plan.spec.request(seq_id, value, start=True), "stream",
                                        "start (to fill every slot)"), Answer):
                return
        self.engine.model.settle(time.monotonic())
        if self.engine.model.free_slots():
            return self._skip("queue behind full: a slot is still free")
        self.engine.send(clients[-1], self.plan.spec.request(queued[0], values[-2], start=True), "stream",
                  "start (every slot held: into the backlog)")
        live = self.engine.live()
        if not live:
            return  # the START waits for a sequence left to expire
        key = live[which % len(live)]
        self.engine.send(clients[0], self._next_of(key, values[-1], end=True),
                  "stream", "end a sequence (its slot goes to the backlog)")

    @lets_idle_out
    @rule(data=st.data())
    def abandon_stream(self, data):
        """A client closes its stream and goes away; its sequences stay live until they time out."""
        client = self._client(data)
        if client is None:
            return self._skip("abandon: no idle client")
        self.engine.close_stream(client)

    @when(lambda plan: not plan.spec.iterations)  # an iterative model's sequences are single STARTs
    @rule(data=st.data())
    def half_close(self, data):
        """A client sends the next requests of live sequences back to back on its stream and
        closes its side of the stream before they are answered: each must still be answered, as
        if the stream stayed open, and the sequences go on (fuzz/harness/closing.py)."""
        client = self._client(data)
        size = data.draw(st.integers(1, 4), label="requests in flight")
        ends = data.draw(st.lists(st.booleans(), min_size=size, max_size=size), label="ends")
        values = [self._value(data) for _ in range(size)]
        first = data.draw(st.integers(0, 2**16), label="first sequence")
        now = time.monotonic()
        keys = self._live_until(now + self.plan.settings.wire_s)
        if client is None or not keys:
            return self._skip("half close: no idle client or no live sequence")
        keys = [keys[(first + i) % len(keys)] for i in range(min(size, len(keys)))]  # distinct sequences
        reqs = [self._next_of(key, value, end=end) for key, value, end in zip(keys, values, ends)]
        try:
            send_then_half_close(self.engine, client, reqs, "send, then close its side of the stream")
        except Stale as late:
            self._skip(f"half close: {late}")

    @when(lambda plan: not plan.setup.guarded("cancel-not-honoured"))
    @reaches("situation: cancelled in the backlog", "situation: cancelled id sent to again")
    @lets_idle_out
    @rule(data=st.data())
    def cancel(self, data):
        """A client whose START waits in the backlog cancels it (stop_stream(cancel_requests=True)),
        and may then send to its id without START, as cancel_pipelined's `after` does: the
        sequence must be over (cancel_ends_sequence's other half). Not where the build keeps the
        cancelled START's id until a slot frees (cancelled-backlog-id-lingers, guarded)."""
        now = time.monotonic()
        choices = sorted(c for c, p in self.engine.pending.items()
                         if self.engine.model.surely_backlogged_until(key_of(p.request.seq_id)) > now + 0.2
                         and now > p.sent_at + self.plan.settings.wire_s)  # it has reached the backlog
        client = self._pick(data, choices, "client")
        again = data.draw(st.booleans(), label="then its id again")
        steer = data.draw(STEER, label="steer its id again")
        value, via = self._value(data), self._via(data)
        new_id, starter = self._fresh(data.draw(self.plan.ids, label="id")), self._client(data)
        # Until a campaign has cancelled a START in the backlog, 3 in 4 of these steps put one
        # there when every slot is held and none can free soon (cancel otherwise waits for one).
        if client is None and steer >= STEER_GAP_FROM and self._lacks(CANCELLED_QUEUED) and not self.plan.spec.iterations:
            client = self._queue_to_cancel(starter, new_id, value)
        if client is None:
            return self._skip("cancel: nothing surely in the backlog")
        # Until a campaign has sent to a cancelled id whose backlog place may still be there, 7 in 8 do.
        again = again or (steer >= STEER_GAP_FROM and self._lacks(CANCELLED_ID_AGAIN))
        seq_id = self.engine.pending[client].request.seq_id
        self.engine.cancel_queued(client)
        key = key_of(seq_id)
        model = self.engine.model
        if again and not self.plan.setup.lingering_guard and (model.cancel_unsettled(key) is not None or (
                not model.is_live(key) and not self.engine.blocked(seq_id))):  # the model holds it till the cancel settles
            self.engine.send(client, self.plan.spec.request(seq_id, self._small(value)), via,
                             "its id again, without START")

    def _queue_to_cancel(self, client, seq_id, value):
        """Sends a START of a fresh sequence from `client` while every slot is held by a live
        sequence that cannot idle out for a while: it waits in the backlog. The client, once it
        has surely reached it (None, sending nothing, where it would not)."""
        model, now = self.engine.model, time.monotonic()
        model.settle(now)
        wire = self.plan.settings.wire_s
        if client is None or self._last_idle(client) or self._unusable(seq_id) or \
                self.plan.spec.idle_s - self.engine.margin < wire + 0.3 or not self._fill_slots(client, seq_id, value):
            return None
        if model.free_slots() or not model.running_keys() or model.soonest_expiry() < time.monotonic() + wire + 0.25:
            return None
        self.engine.send(client, self.plan.spec.request(seq_id, self._small(value), start=True), "stream",
                         "start, every slot held (to cancel)")
        if client not in self.engine.pending:
            return None
        self.engine.wait_out(wire, "the START reaches the backlog")  # (the cancel rule's own bound; replayed too)
        return client if self.engine.model.surely_backlogged_until(key_of(seq_id)) > time.monotonic() + 0.2 else None

    def _unusable(self, seq_id) -> bool:
        """A fresh START cannot go to `seq_id` now: not _free, or a cancelled START's place lingers."""
        return not self._free(seq_id) or self.engine.model.lingering(key_of(seq_id))

    def _fill_slots(self, starter, seq_id, value) -> bool:
        """Every free slot taken by a fresh sequence (ids next to `seq_id`) from an idle client
        other than `starter`, one client kept idle besides. False where there are too few."""
        model = self.engine.model
        need = 0 if model.has_backlog() else model.free_slots()
        others = [c for c in self.engine.idle_clients() if c != starter]
        if need > len(others) - 1:
            return False
        for i, c in enumerate(others[:need]):
            sid = clip_id(f"{i}.{seq_id}") if isinstance(seq_id, str) else sibling(seq_id, i + 1, self.plan.spec.id_bits)
            if sid is None or self._unusable(sid):
                return False
            self.engine.send(c, self.plan.spec.request(sid, self._small(value), start=True), "stream",
                             "start, filling the slots (a START to cancel comes next)")
        return True

    @when(lambda plan: not plan.setup.cancel_pipelined_guard)
    @reaches("situation: cancelled while running", "situation: witness swept")
    @lets_idle_out
    @rule(data=st.data())
    def cancel_pipelined(self, data):
        """A client sends the next request of a live sequence (on unary gRPC), one more behind
        it on its stream and a third behind that (on unary gRPC or a stream of its own), cancels
        its stream while the second waits in the queue (a slow model makes sure it does), then sends the sequence's
        next request: the sequence must have ended with the cancelled request, and the third
        failed with it (cancel_ends_sequence); see fuzz/harness/cancelling.py for the timing.
        Now and then no third goes and the cancel comes later, when the second may be running:
        the sequence must then end or go on from one of the sums the group leaves possible."""
        client = self._client(data)
        key = self._pick(data, self.engine.live(), "sequence")
        values = [self._value(data) for _ in range(4)]
        end = data.draw(st.booleans(), label="end after")
        via = data.draw(st.sampled_from(self.plan.after_cancel_vias), label="via after")
        witness_via = data.draw(st.sampled_from(self.plan.witness_vias), label="witness via")
        late = data.draw(CANCEL_LATE, label="cancel once the one behind can run (the first's latencies; None: behind a witness)")
        deep = data.draw(BEHIND_DEPTHS, label="requests behind the first")
        steer = data.draw(STEER, label="steer a cancel while it runs")
        # A transport no witness was swept on yet takes the witness, 3 in 4 (each carries the error
        # of a swept request its own way).
        unswept = [v for v in self.plan.witness_vias if self._lacks(swept_goal(v))]
        if unswept and steer >= STEER_GAP_FROM and late is None:
            witness_via, deep = choose(unswept, steer), DEEP_BEHIND
        # A late cancel of a campaign with none yet that found its request running (a dev campaign
        # of ten examples missed one, and a model that forgot a cancelled request's sum) lands
        # while it runs, not at once; those behind a witness stay as drawn.
        if late is not None and steer >= STEER_GAP_FROM and self._lacks(CANCELLED_RUNNING):
            late = choose(RUNNING_LATE, steer)
        fresh = self._fresh(data.draw(self.plan.ids, label="id to start one on"))
        self.engine.collect()
        # While one of its goals is open, a campaign that finds no live sequence starts one (a
        # one-slot model has none a third of the time, and its dev campaign ran 3 groups in 10 examples)
        gap = (late is None and unswept) or (late is not None and self._lacks(CANCELLED_RUNNING))
        if key is None and client is not None and gap and steer >= STEER_GAP_FROM and self._free(fresh) \
                and not (self.engine.pending or self.engine.model.has_backlog()) and self.engine.model.free_slots():
            start = self.plan.spec.request(fresh, self._small(values[0]), start=True)
            if isinstance(self.engine.send(client, start, "stream", "start a sequence to cancel on"), Answer):
                key = key_of(fresh)
        if client is None or key is None or key not in self.engine.live():
            return self._skip("cancel pipelined: " + ("no idle client" if client is None else "no live sequence"))
        # (measured after the START above: its latency is the model's pace where none was yet)
        deep = 1 if late is not None else min(deep, self._queue_that_lasts())  # a late cancel is timed on the one behind
        while deep > 1 and self._group_near_edge(key, deep):  # each behind adds one: a narrow dtype takes fewer
            deep //= 2
        # The slot a cancel frees goes to the backlog at a moment no one sees.
        if self.engine.pending or self.engine.model.has_backlog():
            return self._skip("cancel pipelined: a START waits in the backlog")
        if self.engine.model.expiry_of(key).lo < time.monotonic() + 2 * self.plan.settings.wire_s + 0.1 + \
                (0 if late is None else 2 * self.engine.stats.lag.typical()):
            return self._skip("cancel pipelined: the sequence is near its idle timeout")
        if self._group_near_edge(key, deep):
            return self._skip("cancel pipelined: the sum is near the edge of the model's dtype")
        reqs = [self.plan.spec.request(key[1], self._small(v), end=end and i == 3) for i, v in enumerate(values)]
        if deep > 1:  # each behind adds one: the witness's sum says how many ran before it
            reqs[1] = (attrs.evolve(reqs[1], value=self.plan.as_value(1)),) * deep
        if not self.engine.cancels.pipeline_and_cancel(client, *reqs, via, witness_via,
                                               None if late is None else LateCancel(of_latency=late)):
            self._skip("cancel pipelined: the sequence is not answered at once")

    @rule(data=st.data())
    def share_sequence(self, data):
        """Two to four clients send the next request of one live sequence at the same moment,
        each on its own connection (the idle clients' streams, then unary gRPC): the server
        picks their order, and their answers must be the running sums of one arrival order of
        them all (order_kept); the sequence goes on with all of them. Seed 003's "concurrent
        requests in the same sequence"."""
        size = data.draw(st.integers(2, 4), label="clients")
        key = self._pick(data, self.engine.live(), "sequence")
        values = [self._value(data) for _ in range(4)]
        self.engine.collect()
        if key is None or key not in self.engine.live():
            return self._skip("share sequence: no live sequence")
        if self.engine.model.expiry_of(key).lo < time.monotonic() + self.plan.settings.wire_s + 0.05:
            return self._skip("share sequence: the sequence is near its idle timeout")
        if self._near_edge(key):
            return self._skip("share sequence: the sum is near the edge of the model's dtype")
        idle = self.engine.idle_clients()[:size]
        if len(idle) < size and self.engine.teardown_client in self.engine.parked:  # (a clean round's end_aging)
            return self._skip("share sequence: too few idle clients, and the teardown's holds a parked END")
        who = [(c, "stream") for c in idle] + [(self.engine.teardown_client, "grpc")] * (size - len(idle))
        reqs = [(c, self.plan.spec.request(key[1], self._small(v)), via) for (c, via), v in zip(who, values)]
        if not self.engine.sharing.send_at_once(reqs, "next request of one sequence, from several clients at once"):
            self._skip("share sequence: the sequence is not answered at once")

    @rule(data=st.data())
    def start_with_timeout(self, data):
        """A client starts a sequence with a per-request timeout while every slot is held and
        none can free before the timeout passes: the START waits in the backlog and must fail
        UNAVAILABLE ('timeout of the corresponding sequence has been expired') then, not before
        (timeouts_respected); its id is forgotten. L0_sequence_batcher's request timeouts."""
        client, seq_id = self._client(data), self._id(data)
        timeout = data.draw(START_TIMEOUTS, label="timeout (us)")
        value, via = self._value(data), self._via(data)
        self.engine.collect()
        if client is None or self.engine.blocked(seq_id):
            return self._skip("start with timeout: no idle client or id busy")
        now, key = time.monotonic(), key_of(seq_id)
        self.engine.model.settle(now)
        if self.engine.model.is_live(key) or self.engine.model.is_ghost(key):
            return self._skip("start with timeout: the id is live, or its sequence has just idled out")
        if self.engine.model.free_slots() or not self.engine.model.running_keys():
            return self._skip("start with timeout: a slot is free")
        if self.engine.model.soonest_expiry() < now + timeout / 1e6 + self.engine.late + self.plan.settings.wire_s:
            return self._skip("start with timeout: a slot may free before the timeout passes")
        self.engine.send(client, self.plan.spec.request(seq_id, value, start=True, timeout_us=timeout), via,
                  "start with a timeout, every slot held")

    @when(lambda plan: plan.setup.expiry_ok)
    @reaches("situation: expiry reuse")
    @lets_idle_out
    @rule(data=st.data())
    def let_expire(self, data):
        """Clients stop sending on a running sequence (or on every one) and leave it to the idle
        timeout; one client comes back once its window has passed: to it, and must get the
        START-flag error, or with a new sequence, which must get the slot it freed. Only that
        client waits: the others go on."""
        everyone = data.draw(st.booleans(), label="every sequence")
        key = self._pick(data, self.engine.live(), "sequence")
        client = self._client(data)
        end = data.draw(st.booleans(), label="end")
        value = self._value(data)
        new_id = self._fresh(data.draw(self.plan.ids, label="id"))
        new = data.draw(st.booleans(), label="a new sequence comes instead")
        steer = data.draw(STEER, label="steer reuse")
        if key is None:
            return self._skip("let expire: no live sequence")
        # A campaign's first long wait is often its only one (the share of waits): while no slot
        # an expiry freed has been taken, the client mostly comes back with a new sequence.
        new = new or (steer >= STEER_GAP_FROM and self._lacks(EXPIRY_REUSE))
        if self._waits_had_their_share():
            return self._skip("let expire: waits for long idle windows took their share of the campaign")
        keys = [key] + [k for k in self.engine.live() if k != key and everyone]
        if self.plan.spec.capacity > 1:
            # An idle timeout outlasts an example's steps: sequences left to expire hold their
            # slots for the rest of it. One slot stays for the other clients' work, or every
            # later step of the example would be skipped.
            dying = sum(1 for k in self.engine.model.running_keys() if k in self.engine.silenced)
            keys = keys[:self.plan.spec.capacity - 1 - dying]
            if not keys:
                return self._skip("let expire: the other clients would have no slot left")
        self.engine.leave_to_expire(keys)
        if client is None or self._last_idle(client):
            return  # no client comes back to it
        until = self.engine.model.expiry_of(key).hi + 0.005
        if new and not self.engine.blocked(new_id) and not self.engine.model.is_live(key_of(new_id)):
            req = self.plan.spec.request(new_id, value, start=True, end=end)
            self.engine.park(client, req, "start after timeout", until, context="refill")
        else:
            self.engine.park(client, self._next_of(key, value, end=end),
                      "send after its idle timeout", until)

    @reaches("situation: kept alive", "situation: long life", "situation: quiet model")
    @lets_idle_out
    @rule(data=st.data(), fraction=st.sampled_from([0.05, 0.2, 0.6, 0.9]))
    def pause(self, data, fraction):
        """A client pauses on its sequence for a fraction of what is left of its idle window
        (short, or up to near its early edge: a cache of the model's own that lives shorter
        than the window shows only there), then goes on: the sum must go on too. Only that
        client waits, but now and then (hush) every client does, so that nothing runs while it
        pauses: a model or server that sweeps its state once idle shows only then."""
        client = self._client(data)
        key = self._pick(data, self.engine.live(), "sequence")
        end = data.draw(st.booleans(), label="end")
        value = self._value(data)
        keep = data.draw(KEEP_GOING, label="keep it going")
        steer = data.draw(STEER, label="steer keep")
        hush = data.draw(HUSH, label="every client waits")
        if client is None or key is None or self._last_idle(client):
            return self._skip("pause: no idle client to spare or no live sequence")
        now = time.monotonic()
        room = self.engine.model.expiry_of(key).lo - now - self.plan.settings.wire_s  # the server surely keeps it
        if room <= 0:
            return self._skip("pause: the sequence is near its idle timeout")
        # Every client waits (steered while the campaign has had no quiet model) as long as the
        # window lets it: a sweep once idle can take most of the window to come.
        hushed = f"situation: {QUIET}" in self.engine.stats.coverage.seen  # the campaign has had one
        quiet = (hush or (steer >= STEER_GAP_FROM and not hushed)) and self.plan.setup.expiry_ok \
            and not (hushed and self.plan.stats.waits_spent)  # a wait of every client, as the example began
        drawn, fraction = fraction, max(fraction, HUSH_FRACTION) if quiet else fraction
        if fraction * room > LONG_PAUSE_S and self._waits_had_their_share(rationed=True):
            return self._skip("pause: waits at the ends of examples took their share of the campaign")
        # Kept going: a wait of KEPT_WINDOWS windows at the example's end, taken within the share
        # of waits, and always while the campaign has kept no sequence alive yet.
        seen = self.engine.stats.coverage.seen
        span = KEPT_WINDOWS * self.plan.spec.idle_s
        lacking = f"situation: {KEPT_ALIVE}" not in seen and self._fits_the_campaign(span)
        # Kept going for LONG_LIFE_S, steered (outside the share of waits, as the first kept alive
        # is) once a campaign, once it has had a quiet model: the chain idles most of that, and
        # spent first, the share left the quiet pause none (the oracle table missed a bug so).
        long_open = f"situation: {LONG_LIFE}" not in seen and f"situation: {QUIET}" in seen \
            and self._fits_the_campaign(LONG_LIFE_S)
        keep = (keep or (steer >= STEER_GAP_FROM and (lacking or long_open))) and self.plan.setup.expiry_ok \
            and (lacking or long_open or not self._waits_had_their_share(rationed=True))
        if keep and steer >= STEER_GAP_FROM and long_open:
            span = max(span, LONG_LIFE_S)
        # The value is fitted to the sum when the request is drawn; nothing else touches
        # this sequence while it is parked, so the sum is the same when it goes.
        req = self._next_of(key, value, end=end and not keep)
        self.engine.park(client, req, "continue after a pause", now + fraction * room,
                         then=self._kept_going(key, value, max(drawn, KEEP_FRACTION), end, span) if keep else None)
        if quiet and fraction * room >= self.engine.model.quiet_s:  # the goal's gap
            self.engine.hush(client, "a quiet model (nothing sent while one client pauses)")

    def _kept_going(self, key, value, fraction: float, end: bool, span: float):
        """A client that keeps its sequence going `span` seconds after its START (KEPT_WINDOWS idle
        windows, or LONG_LIFE_S), pausing for `fraction` of what is left of the window before each
        next request (the same value, fitted to the sum; `end` on the last): what the engine parks
        next once each is answered (Parked.then). The server must keep a sequence in use however
        old it is."""
        def follow():
            model = self.engine.model
            if not model.is_running(key):
                return None
            now = time.monotonic()
            room = model.expiry_of(key).lo - now - self.plan.settings.wire_s
            if room <= 0:
                return None
            until = now + fraction * room
            last = until - model.born_at(key) >= span
            return self._next_of(key, value, end=end and last), until, last
        return follow

    @when(lambda plan: plan.setup.expiry_ok)
    @lets_idle_out
    @rule(data=st.data())
    def refill_after_timeout(self, data):
        """After every running sequence times out, as many new sequences as there are slots
        must get in promptly: a leaked slot shows up here. Those clients wait; the others go on."""
        fresh = [self._fresh(data.draw(self.plan.ids, label="id")) for _ in range(self.plan.spec.capacity)]
        values = [self._value(data) for _ in range(self.plan.spec.capacity)]
        self.engine.collect()
        idle = self.engine.idle_clients()
        if len(idle) <= self.plan.spec.capacity:
            return self._skip("refill: fewer idle clients than slots + 1")
        if self._waits_had_their_share():
            return self._skip("refill: waits for long idle windows took their share of the campaign")
        keys = self.engine.live()
        self.engine.leave_to_expire(keys)
        until = max([self.engine.model.expiry_of(k).hi for k in keys] + [time.monotonic()]) + 0.005
        for client, seq_id, value in zip(idle, fresh, values):
            if self.engine.model.is_live(key_of(seq_id)) or self.engine.blocked(seq_id):
                continue  # refill wants fresh sequences
            req = self.plan.spec.request(seq_id, value, start=True)
            self.engine.park(client, req, "start after timeout", until, context="refill")

    @rule(data=st.data())
    def burst(self, data):
        """Several clients send the next request of distinct live sequences at the same moment:
        they queue together and share batches (a slow model makes sure they do)."""
        size = data.draw(st.integers(2, self.plan.n_clients), label="burst size")
        ends = data.draw(st.lists(st.booleans(), min_size=self.plan.n_clients, max_size=self.plan.n_clients), label="ends")
        values = [self._value(data) for _ in range(self.plan.n_clients)]
        fresh = [self._fresh(data.draw(self.plan.ids, label="id")) for _ in range(self.plan.n_clients)] if self.plan.spec.iterations else []
        # an iterative burst may start more sequences than there are free slots: the rest wait
        # in the backlog and iterate when a slot frees
        past_free = data.draw(st.booleans(), label="more STARTs than free slots") if self.plan.spec.iterations else False
        past_free = past_free and self.plan.backlog_bursts
        self.engine.collect()
        now = time.monotonic()
        if self.plan.spec.iterations:
            return self._start_together(size, fresh, ends, values, past_free)
        # Sequences well inside their idle timeout only: nothing in a burst may be ambiguous.
        keys = self._live_until(now + self.plan.settings.wire_s)
        sends = list(zip(self.engine.idle_clients(), keys, ends, values))[:size]
        if len(sends) < 2:
            return self._skip("burst: fewer than two idle clients with live sequences")
        reqs = [(client, self._next_of(key, value, end=end))
                for client, key, end, value in sends]
        self._sent_together(reqs, "burst")

    def _start_together(self, size, fresh, ends, values, past_free):
        """An iterative model's burst: a sequence is one START, so clients start fresh ones at
        the same moment, as many as there are free slots, or up to twice as many (`past_free`:
        those wait in the backlog for one START's iterations, then run theirs); their executions
        interleave in shared batches (in-flight batching), each answering its own running sums."""
        self.engine.model.settle(time.monotonic())
        distinct = [i for n, i in enumerate(fresh) if i not in fresh[:n] and not self.engine.blocked(i)]
        free = self.engine.model.free_slots()
        sends = list(zip(self.engine.idle_clients(), distinct, ends, values))[:min(size, 2 * free if past_free else free)]
        if len(sends) < 2:
            return self._skip("burst: fewer than two idle clients and free slots")
        reqs = [(client, self.plan.spec.request(seq_id, value, start=True, end=end)) for client, seq_id, end, value in sends]
        self._sent_together(reqs, "burst of STARTs")
        if len(sends) > free:  # sent together, the STARTs past the free slots met them taken,
            self.engine.stats.coverage.situation("backlog")  # and, all answered, were let in as slots freed
            self.engine.stats.coverage.situation("admitted")

    @when(lambda plan: not plan.spec.iterations)  # an iterative model's sequences are single STARTs (burst)
    @reaches("flags together: ", "live rows >= ", "situation: restart in a full execution", "situation: END in",
             "situation: padding row")
    @rule(data=st.data())
    def crowd(self, data):
        """Several sequences at once (live ones, or fresh STARTs where slots are free, up to
        every slot), a few requests each, pipelined on the idle clients' streams (a client may
        carry several sequences, a block or a layer at a time), each sometimes restarting and
        sometimes ending, inside the crowd while the others go on or with its last request. The
        batcher's queues fill faster than it runs them, so its executions carry several live
        rows with mixed flags, up to every slot at once, which single requests on a fast model
        almost never make. Kept as HELD steps (a client pipelines several), so a
        replay sends them at once again."""
        size = data.draw(st.integers(2, self.plan.crowd_max), label="sequences")
        depth = data.draw(CROWD_DEPTHS, label="requests each")
        fresh = [self._fresh(data.draw(self.plan.ids, label="id")) for _ in range(self.plan.crowd_max)]
        new = [data.draw(st.booleans(), label="a fresh sequence") for _ in range(self.plan.crowd_max)]
        restart_at = [data.draw(st.integers(-8, 23), label="restart at") for _ in range(self.plan.crowd_max)]
        ends = [data.draw(st.sampled_from([False, False, True]), label="end") for _ in range(self.plan.crowd_max)]
        # where an ending sequence sends its END: inside the crowd (the others go on past it) or last
        end_at = [data.draw(st.integers(-8, 23), label="end at") for _ in range(self.plan.crowd_max)]
        seed = data.draw(st.integers(0, 2**32 - 1), label="values seed")
        scale = data.draw(CROWD_SCALES, label="value scale")
        alike = data.draw(CROWD_ALIKE, label="alike values")
        steer = data.draw(STEER, label="steer crowd")
        # a client carrying several sequences sends them a block each, or a layer at a time (the
        # j-th request of each, then the next): blocks fill one queue deep before the next's first
        # request is read, layers keep every queue filling together, so executions run full
        layered = data.draw(st.booleans(), label="layered")
        ends_early = data.draw(st.integers(0, self.plan.crowd_max - 1), label="ends early")  # when steered
        full_n = full_rows(self.plan.spec)
        full = [f"situation: {g}" for g in (FULL_START, FULL_END)] if full_n \
            else [f"live rows >= {live_row_goals(self.plan.spec)}"]
        full += [f"situation: {end_in_row(k)}" for k in range(full_n)] if full_n and self.plan.spec.says_row else []
        missing = [g for g in full if g not in self.engine.stats.coverage.here]
        early = None  # the steered crowd's sequence that sends its END in the crowd's middle
        steering = False
        cov = self.engine.stats.coverage
        pairs = [g for g in together_goals(self.plan.spec) if g not in cov.here]
        # A pair of flags the campaign lacks goes before full executions it has had, and before
        # one it lacks too every other time (a drawn parity: the batcher picks an END's row, so a
        # full steering may go on missing its goal example after example)
        pair_first = any(g not in cov.seen for g in pairs) and \
            (all(g in cov.seen for g in missing) or ends_early % 2 == 0)
        if steer == STEER_TOP and missing and not self.crowd_steered and not pair_first:
            # No execution of this example surely carried every row it can (with a START among
            # them, then with an END, where the model says its rows): a crowd on every slot,
            # deep enough that its middle runs full, the first sequence restarting there (and,
            # once a START ran in a full execution, a drawn one ending there). Once an example: on
            # a fast model the START may miss the full execution crowd after crowd, and a failing
            # example of many full crowds shrinks badly (seen: 480 steps where 8 did). The END
            # waits for the START: a crowd one sequence short past its middle runs full less
            # (seen: a bug of STARTs in full executions missed in 4 of 4 campaigns, caught in
            # 4 of 4 without it). A crowd short of a sequence (a slot held by one near its idle
            # timeout) cannot run full: the steering waits for another crowd of the example.
            steering, layered = True, True
            size, depth = self.plan.crowd_max, max(depth, 8)
            restart_at = [depth // 2, *restart_at[1:]]
            end_at = [depth] * len(end_at)  # no other sequence leaves the crowd before its end
            if full_n and missing[0] != f"situation: {FULL_START}":  # which row the END takes is the batcher's
                early = ends_early
        pair, restarts = None, [None] * self.plan.crowd_max  # a steered pair's restart layers (pair_layers)
        if not steering and steer >= STEER_TOP - 1:
            # A pair of flags no execution of this example carried together (a START beside an
            # END, ...), the campaign's gaps first: the first two sequences take them early in a
            # layered crowd, where the layers run together (below). Once an example on the top
            # draw; past that, on the next draw too, while the campaign lacks a pair (seen: 4
            # steered crowds of 39 in a `dev` campaign, for 7 pairs, and four pairs never
            # carried: a pair runs together in some crowds only). Such a crowd is no larger than
            # another; the once an example is for full crowds, whose failing examples shrink badly.
            gaps = pairs if steer == STEER_TOP and not self.crowd_steered else [g for g in pairs if g not in cov.seen]
            open_pairs = campaign_first(gaps, lambda g: (g,), cov.seen)
            pair = choose(open_pairs, seed)
        if pair is not None:
            # On one stream, the crowd's first request runs alone (the model is idle when it
            # comes) and the second sequence's requests then run one layer behind the first's
            # (seen: 9 of 10 steered crowds ran the pair's layer in two executions, on two
            # streams in either order; after, 7 of 8 in one), or in the same layer where the
            # second's first request comes first: the shapes go early, while the queues are full
            # (past a dozen layers a fast model ran each request alone), where either alignment
            # runs them together (steering.pair_layers).
            steering, layered = True, True
            depth = max(depth, 4)
            # (the alignment from the seed's quotient: its remainder chose the pair, and of an even
            # count of pairs a remainder's parity would tie each pair to one alignment)
            same_layer = (seed // len(open_pairs)) % 2 == 0
            for i, (starts, ending) in enumerate(pair_layers(TOGETHER[pair], same_layer)):
                restarts[i] = starts
                ends[i], end_at[i] = ending is not None, depth if ending is None else ending
        self.engine.collect()
        now = time.monotonic()
        self.engine.model.settle(now)
        plans = self._crowd_plans(size, depth, fresh, new, now)
        if len(plans) < 2 and pair is not None and pair not in cov.seen and self._wait_for_two():
            now = time.monotonic()
            self.engine.model.settle(now)  # the sequences waited out leave their slots
            plans = self._crowd_plans(size, depth, fresh, new, now)
        if len(plans) < 2:
            return self._skip("crowd: fewer than two sequences to send on")
        if pair is not None:  # the pair's two sequences on one stream: they arrive in the order sent
            plans[1] = (plans[0][0], *plans[1][1:])
        values, blocks = random.Random(seed), []
        layers = [values.randint(-scale, scale) for _ in range(depth)] if alike else None
        if alike == "all":
            layers = layers[:1] * depth
        for i, ((client, seq_id, total, begins), at, end, stop) in enumerate(zip(plans, restart_at, ends, end_at)):
            at = (at,) if restarts[i] is None else restarts[i]
            last = stop if end and 0 <= stop < depth else depth - 1
            if early is not None and i == early % len(plans):
                last, end = depth // 2, True
            block = []
            for j in range(last + 1):
                start = (j == 0 and begins) or j in at
                total = self.plan.spec.initial_sum if start else total
                value = self._fit(layers[j] if alike else values.randint(-scale, scale), total)
                total += value
                block.append((client, self.plan.spec.request(seq_id, value, start=start, end=end and j == last)))
            blocks.append(block)
        reqs = [r for layer in itertools.zip_longest(*blocks) for r in layer if r is not None] if layered \
            else [r for block in blocks for r in block]
        before = self.plan.server.executions_and_inferences(self.plan.spec.batcher)
        if not self._sent_together(reqs, "crowd"):
            return
        # the steering once an example is the top draw's (a pair the campaign lacks, steered on
        # the next draw, leaves it to a full crowd)
        self.crowd_steered = self.crowd_steered or (steering and steer == STEER_TOP
                                                    and (pair is not None or len(plans) == self.plan.crowd_max))
        after = self.plan.server.executions_and_inferences(self.plan.spec.batcher)
        if before and after:
            rows = self.engine.stats.coverage.live_rows(after[1] - before[1], after[0] - before[0])
            event(f"crowd: {len(plans)} sequences, some execution carried >= {rows} live rows")

    def _sent_together(self, reqs, action: str) -> bool:
        """The engine's send_together; False (nothing sent) where a live sequence among them
        reached its idle window after the rule chose it (a starved machine)."""
        try:
            self.engine.send_together(reqs, action)
        except Stale as late:
            self._skip(f"{action}: {late}")
            return False
        return True

    def _wait_for_two(self) -> bool:
        """For a pair of flags the campaign lacks: every client waits until sequences left to
        expire free the slots two sequences need beside the live one (if one), as an alias does."""
        live = self.engine.live()
        if len(live) > 1:
            return False
        keep = live[0] if live else None
        return self._stuck_wait(self.engine.wait_for_slots, 2 - len(live), keep, gap=True) > 0

    def _crowd_plans(self, size, depth, fresh, new, now):
        """(client, id, running sum, starts fresh) for each sequence of a crowd, the idle
        clients taken in turn: a fresh START only where a slot is free for it (nothing may wait
        in the backlog), else a live sequence well inside its idle timeout, each once."""
        clients = self.engine.idle_clients()
        if not clients:
            return []
        free = self.engine.model.free_slots() if now >= self.engine.backlog_settled_at else 0
        spare = size * depth * 0.002 + self.plan.settings.wire_s + 0.05  # ample time for all of it to run
        live = self._live_until(now + spare)
        plans, taken = [], set()
        for seq_id, fresh_one in zip(fresh[:size], new):
            client, key = clients[len(plans) % len(clients)], key_of(seq_id)
            can_start = free and key not in taken and self._free(seq_id)
            if can_start and (fresh_one or not live):  # a fresh one where drawn, or where none is live
                free -= 1
                plans.append((client, seq_id, self.plan.spec.initial_sum, True))
            elif live:
                key = live.pop(0)
                plans.append((client, key[1], self.engine.model.total(key), False))
            else:
                continue
            taken.add(key)
        return plans

    # -- nemesis rules: faults, drawn only when FuzzSettings.nemesis names them ------------
    @when(lambda plan: "cut" in plan.faults and bool(plan.proxied))
    @lets_idle_out
    @rule()
    def cut_connection(self):
        """The network drops the proxied clients' connections (RST both ways) mid-sequence.
        Their sequences are the server's, not the connection's: they stay live until they idle
        out, and any client may go on with them before that."""
        if not self.engine.cut():
            return self._skip("cut: a proxied client waits on the backlog")

    @when(lambda plan: "stall" in plan.faults and bool(plan.proxied))
    @lets_idle_out
    @rule(data=st.data())
    def stall_connection(self, data):
        """The network holds a proxied client's bytes while it sends the next request of a live
        sequence: the request reaches the server late, either well before the sequence's idle
        timeout (the sum goes on) or after it (the START-flag error)."""
        client = self._pick(data, self.engine.proxied_idle(), "client")
        key = self._pick(data, self.engine.live(), "sequence")
        end = data.draw(st.booleans(), label="end")
        hold = data.draw(st.sampled_from([0.2, 0.5, 1.5, 2.5]), label="hold (x idle timeout)")
        value = self._value(data)
        self.engine.collect()
        if client is None or key is None or key not in self.engine.live() or len(self.engine.proxied_idle()) < len(self.plan.proxied):
            return self._skip("stall: no idle proxied client or no live sequence")
        now = time.monotonic()
        arrival = now + hold * self.plan.spec.idle_s
        window = self.engine.model.expiry_of(key)
        if window.lo - self.plan.settings.wire_s <= arrival <= window.hi + self.plan.settings.wire_s:
            arrival = window.hi + self.plan.settings.wire_s  # never inside the idle-timeout window
        if arrival - now > self.plan.settings.max_wait_s:
            return self._skip("stall: the hold would outlast max_wait_s")
        self.engine.stall(client, self._next_of(key, value, end=end), now, arrival,
                          "send while the network stalls, held")

    @when(lambda plan: "deadlines" in plan.faults)
    @rule(data=st.data())
    def give_up_in_flight(self, data):
        """Clients give up on calls in flight (server issue 7368: a crash): whole sequences
        (START+END on fresh ids) over unary gRPC, as many at once as slots are free (at most
        8), in 4 to 64 rounds, each call with a deadline of 0.3 to 10 ms or cancelled as soon
        as its round is sent (server PR 7325), some calls sometimes spared. What was answered
        must be right, a spared call answered, the server must live on, and unary gRPC must
        still answer. A decoupled model takes no unary call: each goes on a stream of its own,
        cancelled at the deadline (an iterative model's whole sequence is a START, cancelled
        while it iterates)."""
        self._give_up(data, "deadlines", rounds=(4, 16, 64), deadlines_us=(0, 300, 700, 1000, 1500, 2000, 4000, 10000),
                      spare=(0, 0, 2, 3))

    # Cancelled streams of an iterative model kill every build from 2.41 (iterative-cancel-crash).
    # Beside needs three slots: of calls sent at once the first mostly runs alone (FIRST_ALONE in
    # tests/broken_models.py), so a spared call shares an execution with a cancelled one from the third.
    @when(lambda plan: not plan.spec.iterations and plan.spec.capacity >= GIVE_UP_SLOTS
          and not plan.setup.guarded(DECOUPLED_CANCEL_CRASH))
    @reaches("situation: cancelled beside a live row")
    @rule(data=st.data())
    def give_up_beside(self, data):
        """Clients cancel their streams in flight beside other clients' calls that run with them:
        whole sequences (START+END on fresh ids), as many at once as slots are free (at most 8),
        each on a stream of its own, every second or third spared and the rest cancelled at once
        or after 0.25 to 2 times a typical answer's latency (so on a slow model too the cancels
        land while their executions queue and run), in one or two rounds; while the campaign has
        had no cancel beside a live row, in eight or sixteen, at a deadline its strikes so far say
        lands while the calls run (steering.beside_deadline). A cancel must reach only what it cancels: a
        spared call, which may share an execution with cancelled ones, must be answered right
        (as must any call answered)."""
        # mostly while a round's executions queue and run (the first alone, the rest behind it)
        times = data.draw(st.sampled_from((0, 0.25, 0.5, 1, 1.25, 1.5, 2)), label="deadline (times a typical latency)")
        steer, index = data.draw(STEER_AND_INDEX, label="steer a cancel beside a live row")
        # Steered while the campaign lacks a cancel beside a live row: to a deadline at which its
        # strikes so far, on this model and machine, gave some calls up and had others answered
        # (steering.beside_deadline), where a cancel lands while the calls run. On a model that
        # answers in 2-3 ms every call was answered by 1 to 3 typical latencies (a probe of four
        # calls a strike: none of 300 strikes there met a spared call's execution, 6 of 240 from 0
        # to 0.75). Before any strike, a late deadline (a dev campaign on a model of 20 ms an
        # execution took 267 s to reach it) lands while the calls behind the first run together.
        # A steered strike has more rounds, and waits for the slots it needs: where the deadline is
        # right a round meets it a few times in a hundred on a fast model, and a `dev` campaign
        # struck 3 to 13 times (a round costs about 10 ms).
        typical = max(self.engine.stats.lag.typical(), 0.0005)
        steered = steer >= STEER_GAP_FROM and self._lacks(CANCELLED_BESIDE)
        measured = beside_deadline(self.engine.stats.coverage.give_ups_seen, index) if steered else None
        if steered and measured is None and times >= 1:
            times = choose(BESIDE_TIMES, steer)
        deadline_us = measured if measured is not None else int(times * typical * 1e6)
        self._give_up(data, "give_up", rounds=(8, 16) if steered else (1, 2),
                      deadlines_us=(min(deadline_us, GIVE_UP_MAX_US),), spare=(2, 3), wait=steered)

    def _give_up(self, data, name: str, rounds: tuple, deadlines_us: tuple, spare: tuple, wait: bool = False):
        """`wait`: where too few slots are free, every client first waits for sequences left to
        expire to free them, as a crowd does for a pair of flags the campaign lacks (a `dev`
        campaign on a model of four slots struck 3 to 13 times: mostly they were held)."""
        n_rounds = data.draw(st.sampled_from(rounds), label="rounds")
        deadline_us = data.draw(st.sampled_from(deadlines_us), label="deadline (us; 0: cancelled at once)")
        spare_every = data.draw(st.sampled_from(spare), label="every how many a call is spared (0: none)")
        # The ids from one seed: how many depends on the free slots, and a count of draws that
        # follows the server would make the same choices draw differently (see the rules' note).
        ids_seed = data.draw(st.integers(0, 2**32 - 1), label="ids seed")
        if name == "give_up" and (why := self._why_cancels_kill()):
            if self.engine.stats.final_alone:  # (not for a model that has answered nothing yet)
                self.engine.stats.coverage.guard(f"situation: {CANCELLED_BESIDE}", FINAL_ALONE_CRASH)
            return self._skip(f"give_up: {why}")
        self.engine.collect()
        self.engine.model.settle(time.monotonic())
        needed = GIVE_UP_SLOTS if name == "give_up" else 1
        if wait and self.engine.model.free_slots() < needed and self._stuck_wait(self.engine.wait_for_slots, needed, gap=True):
            self.engine.model.settle(time.monotonic())
        at_once = min(8, self.engine.model.free_slots())
        if at_once < needed or self.engine.pending or self.engine.parked:
            return self._skip(f"{name}: too few free slots, or a START waits in the backlog")
        rng = random.Random(ids_seed)
        fresh = {self._fresh(rng.randint(3, 2**24)) for _ in range(at_once * n_rounds)}
        ids = [i for i in fresh if not isinstance(i, str) and i not in self.engine.touched and not self.engine.model.is_live(key_of(i))]
        fault = Fault(name, ids=ids[:len(ids) - len(ids) % at_once], at_once=at_once, deadline_us=deadline_us,
                      spare_every=spare_every)
        if not fault.ids:
            return self._skip(f"{name}: no fresh ids")
        given_up = f"given up after {deadline_us} us" if deadline_us else "cancelled as soon as sent"
        how = "unary gRPC calls" if name == "deadlines" else "calls, each on a stream of its own"
        spared = f", one in every {spare_every} spared" if spare_every else ""
        self.engine.hurry(fault, f"{len(fault.ids)} {how}, {at_once} in flight together, each a whole "
                          f"sequence {given_up}{spared}")

    def _why_cancels_kill(self) -> str:
        """Why this build would die of this model's streams cancelled in flight, or "": where a
        decoupled model's final flag comes in a response of its own (final-alone-cancel-crash),
        which the campaign knows from its answers, none yet counting as such. Read as the example
        began (RunStats.final_alone_then), as a replay of it reads it, unless an answer of this
        example has shown it since (a model that sends its final flag alone only now and then)."""
        stats = self.engine.stats
        if not self.plan.setup.guarded(FINAL_ALONE_CRASH) or (stats.final_alone_then is False and not stats.final_alone):
            return ""
        return (f"this build dies of streams cancelled in flight where a decoupled model sends its final flag "
                f"alone ({FINAL_ALONE_CRASH}): this one " + ("does" if stats.final_alone else "has answered nothing yet"))

    @when(lambda plan: "restart" in plan.faults)
    @rule(graceful=st.booleans())
    def restart_server(self, graceful):
        """The server restarts mid-campaign (SIGTERM, or SIGKILL: a crash): every live sequence
        is gone, so a request without START is refused and every slot is free."""
        if self._faults_had_their_share():
            return self._skip("restart: server faults took their share of the campaign so far")
        self.engine.server_fault(Fault("restart", graceful=graceful),
                          f"the server restarts ({'SIGTERM' if graceful else 'SIGKILL'})")

    @when(lambda plan: "reload" in plan.faults)
    @rule()
    def reload_model(self):
        """The model is reloaded through the repository API: its sequences are gone."""
        if self._faults_had_their_share():
            return self._skip("reload: server faults took their share of the campaign so far")
        self.engine.server_fault(Fault("reload"), "the model is reloaded")

    @when(lambda plan: plan.full_batch_ok)
    @rule(data=st.data())
    def full_batch(self, data):
        """The server restarts with TRITONSERVER_DELAY_SCHEDULER = the model's capacity, which
        holds its batchers until that many requests wait (and, with
        TRITONSERVER_BACKLOG_DELAY_SCHEDULER = b, until b more STARTs wait in the backlog): as
        many fresh STARTs, sent one after another, must then run as one full batch per
        instance, each with its own sum, and the backlog is let in as the batch's sequences
        idle out. Then it restarts without the hooks (a reload would arm them again)."""
        wanted = data.draw(st.integers(0, 2), label="backlog")
        fresh = [self._fresh(data.draw(self.plan.ids, label="id")) for _ in range(self.plan.spec.capacity + 2)]
        values = [self._value(data) for _ in range(self.plan.spec.capacity + 2)]
        self.engine.collect()
        if self.engine.pending or self.engine.parked:
            return self._skip("full batch: a client waits on the backlog or holds a request back")
        if self._faults_had_their_share():
            return self._skip("full batch: server faults took their share of the campaign so far")
        backlog = min(wanted, self.plan.n_clients - self.plan.spec.capacity)
        fresh = fresh[:self.plan.spec.capacity + backlog]
        if len({key_of(i) for i in fresh}) < len(fresh):
            return self._skip("full batch: drawn ids collide")
        reqs = [(c, self.plan.spec.request(i, v, start=True))
                for c, i, v in zip(self.engine.idle_clients(), fresh, values)]
        self.engine.full_batch(reqs[:self.plan.spec.capacity], reqs[self.plan.spec.capacity:])

    # -- invariants checked after every step ------------------------------------------------
    @invariant()
    def no_hangs(self):
        """Every backlogged START let in is answered by its due time; parked requests whose
        time has come are sent (and checked) between steps, whatever the next rule is; in a clean
        round, sequences near their idle windows are ended (Engine.end_aging)."""
        self.engine.collect()
        self.engine.end_aging()

    @invariant()
    def server_alive(self):
        self.engine.check_alive()

    # -- teardown: drain and clean up -------------------------------------------------------
    def teardown(self):
        if self.plan.stats.example_ended(sys.exc_info()[1]):  # what ends the example, if anything does
            # A step stopped half-way (a group's requests in flight, their answers unread): a
            # drain would judge what the harness left undone (seen: a false stats_agree). The
            # error is reported as it is; the example only cleans up.
            self.engine.failed = True
        self.engine.finish()


# The rules kept on while the campaign lacks a goal they alone build (swarm.reaches).
REACHING = tuple(f for f in vars(SequenceBatcherMachine).values() if getattr(f, "reaches", None))


def make_machine(server, spec: ModelSpec, settings: FuzzSettings = FuzzSettings(), stats: RunStats | None = None,
                 clean: bool = False):
    """The machine's class for one model on one server: SequenceBatcherMachine with its plan, and
    without the rules the plan leaves out (when). `clean`: without the rules that leave a sequence
    to idle out too (lets_idle_out), for a clean round (fuzz/campaign.py)."""
    plan = Plan.of(server, spec, settings, stats)
    left_out_rules = {name: None for name, f in vars(SequenceBatcherMachine).items()
                      if getattr(f, "enabled_when", None) is not None and not f.enabled_when(plan)
                      or clean and getattr(f, "lets_idle_out", False)}
    return type(f"Machine_{spec.name}{'_clean' if clean else ''}", (SequenceBatcherMachine,), {
        "plan": plan, **left_out_rules,
        "left_out": plan.setup.left_out(),  # for the summary
        "expiry_ok": plan.setup.expiry_ok,  # for the coverage goals
        # Every model's machine has the same source, so Hypothesis would file all their examples
        # under one database key; this keeps each model's saved failures apart (a shared --fuzz-db).
        # (a clean round's machine has other rules: its examples are kept apart from the rest)
        "_hypothesis_internal_add_digest": spec.name.encode() + (b" clean" if clean else b""),
    })
