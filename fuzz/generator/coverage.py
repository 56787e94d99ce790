"""What a campaign reached, as goals (Antithesis' "sometimes" assertions): the value edges its
inputs and sums stood on, the ids and id families it had live at once, how many live rows its
executions carried, how deep its sequences went, and the batcher's situations it made happen.

The engine tells the tracker what it sent and what came back; the campaign reads the server's
statistics around it. A goal the model can reach that a campaign never reached is a gap of the
fuzzer, not of the server: the summary and the JSON report list it.
"""
from __future__ import annotations

import math
import time

import attrs

from .edges import (ALIGNED_BITS, ID_EDGES, STRING_FAMILIES, VALUE_GOALS, aligned_place,
    band_of, float_goals, id_bands, id_edges, low_bit_widths, shared_low_bits, string_twin, swing_goals, swings,
    value_edges)

DEPTHS = (8, 64, 256, 1024)  # requests in one sequence, from START to its end
# Depths steered onto only while the campaign lacks them (a run of a thousand requests a campaign,
# not an example): a ring or counter of 10 bits wraps there.
CAMPAIGN_DEPTHS = (1024,)
# New sequences that started (and mostly ended) during one sequence's life before it went on:
# where a model keeps its sums in a bounded cache or table (eviction, a rehash, recycled entries),
# ids coming and going cost the live one its sum. The largest steered onto once a campaign.
CHURNS = (16, 128, 1024)
CAMPAIGN_CHURNS = (1024,)
# Sums that rounded one after another in one sequence of a float model (past where its dtype's
# whole numbers are exact, or with an inexact fraction: ModelSpec.rounds): a model that keeps its
# state at another precision drifts from the running sum by the second, one that re-sums a history
# pairwise or in lanes (np.sum: eight) only from the eighth, wider lanes later. Goals "rounding run N".
ROUNDING = "rounding run"
ROUNDING_RUNS = (8, 32)
# Ids equal modulo 2^k - 1 (a Mersenne number): what a key reduced modulo one makes one, as
# Python's hash of an int (2^61 - 1), a Lehmer generator's modulus (2^31 - 1) or a ones'-complement
# checksum (2^16 - 1, 2^32 - 1) does. Goals once per modulus, as ids 2^k apart are once per width.
MERSENNE = "2^k-1 apart"
MERSENNE_BITS = (16, 31, 32, 61)
# Both ids aligned to 2^k (edges.ALIGNED_BITS): a model that takes a zero low byte, half or word
# for "no id" (or a tag, or a shard) makes one key of all of them.
ALIGNED = "aligned"
INTEGER_TWINS = ("2^k apart", "neighbours", "10^k apart", MERSENNE, ALIGNED)  # sibling_family's, and ALIGNED
# The integer families whose place is a modulus (twin_places), not the older id's band.
MODULUS_FAMILIES = ("2^k apart", MERSENNE)
# Integer twins whose sum is 0 modulo 2^bits: k and 2^bits - k, one number and its negation where
# a CORRID is read as signed (what an abs(), a sign-magnitude field or a key of |id| makes one).
NEGATIVES = "negatives"
# Integer twins one of which is the other times a power of ten (or of two): the same digits (bits)
# but for trailing zeros, what a key that strips them makes one (decimal text normalised or read
# backwards, an id shifted down to its odd part). The factor comes from the twin's drawn step.
SCALED = "scaled"
SCALE_FACTORS = (10, 100, 1000, 2)
NEIGHBOUR_STEPS = (1, 2)  # how far apart "neighbours" are (a key that drops the low bits, a float64)
DECIMAL_STEPS = (10**3, 10**6, 10**9)  # how far apart "10^k apart" are (a key cut to its leading digits)
MERSENNE_STEPS = tuple(2**k - 1 for k in MERSENNE_BITS)  # how far apart MERSENNE twins are made
# Requests by their flags and where their id stood (goals "request: FLAGS on a STATE id"): fresh,
# not sent yet in the example; live, its sequence holds a slot; done, sent before and no sequence
# live now (ended, expired, cancelled, refused). A model reads START and END beside its own state
# for the id: each pair is a path of its own (a START with END on a live id restarts and ends it).
FLAGS = {"START": (True, False), "START+END": (True, True), "no flag": (False, False), "END": (False, True)}
FLAG_SHAPES = tuple(FLAGS)
ID_STATES = ("fresh", "live", "done")
# Situations (goals "situation: NAME"): backlog, a START waited in the backlog; admitted, a
# backlogged START was let in when a slot freed; restart, a START on a live id restarted its
# sequence; refused, a request without START was refused; expiry reuse, a slot a sequence idled
# out of was taken by a new one; long gap, a sequence went on after a pause of at least half the
# idle window the server surely keeps it for; quiet model, such a gap in which no client sent
# anything (a model or server that sweeps, evicts or sleeps once idle shows only then); restart in a full execution, a START on a live
# sequence whose sum it throws away (one whose answer shows whether START was honoured: a fresh
# START begins from the sum a slot or key holds anyway) ran in an execution that carried every
# row it can (a path of its own for a batcher or a model that treats a full batch apart), where
# the model says its live rows; END in a full execution, likewise an END (its slot frees while
# every other row of the execution goes on), and END in row k of a full execution, one for each
# row k where the model says each request's row (a row after it goes on, one before it ran first);
# kept alive, a sequence went on KEPT_WINDOWS idle windows after its START (fuzz/checker/model.py),
# requests coming all the while; restart in a pipelined run, a START on a live id came in the
# middle of that sequence's requests pipelined on one stream (queued behind them, more behind it).
# reused at once, a START let into a slot at once on the id whose END (or START+END) ran just
# before it, no request between: what the model keeps of an ended id must be gone by then.
# START behind its END, a new sequence's START pipelined on one stream right behind the END of a
# sequence of several on its id, and let into a slot at once: the two may share an execution, each
# in its own slot, and what the model does for the new one must not reach the old one's END.
FULL_START = "restart in a full execution"
PIPELINED_RESTART = "restart in a pipelined run"
REUSED_AT_ONCE = "reused at once"
START_BEHIND_END = "START behind its END"
EXPIRY_REUSE = "expiry reuse"
FULL_END = "END in a full execution"
KEPT_ALIVE = "kept alive"
LONG_LIFE = "long life"  # a sequence went on LONG_LIFE_S (10 s) after its START (fuzz/checker/model.py)
QUIET = "quiet model"
# A request cancelled on its stream ran all the same (the cancel found it running, with no
# witness queued behind it), and its sequence went on: cancel_pipelined's late cancel.
CANCELLED_RUNNING = "cancelled while running"
# Calls given up in flight ran in an execution beside a spared call that answered (its execution
# carried more live rows than answers came from it): give_up_beside's cancels found their rows
# running with another's, which a model that drops or reorders an execution's cancelled rows
# answers wrong. Seen where the model says its executions and their live rows.
CANCELLED_BESIDE = "cancelled beside a live row"
# The cancel's other transitions, each what a build's cancel path must get right apart: a START
# waiting in the backlog cancelled (cancel); its id sent to again while the server may still hold
# its place there (cancel's `again`); and a request of another client queued behind a cancelled
# one, swept up by the cancel, on each transport the witness takes (cancel_pipelined): each
# transport carries the error of a swept request its own way.
CANCELLED_QUEUED = "cancelled in the backlog"
CANCELLED_ID_AGAIN = "cancelled id sent to again"
# Under the direct strategy an execution has a row per slot up to its last live one, and a slot
# with nothing to run (free, or its sequence silent) is a padding row (READY 0): a padding row
# before a live row, and one between two live rows (a hole), where the model says each request's
# row and its execution's live rows. A model that gathers or scatters per row, or counts live rows
# as positions, meets a padding row first there (a slot's row is not its rank among the live).
PAD_BEFORE_LIVE = "padding row before a live row"
PAD_BETWEEN_LIVE = "padding row between live rows"


def swept_goal(via: str) -> str:
    """A witness queued behind a cancelled request, sent over `via`, failed with it."""
    return f"witness swept {'on a stream' if via == 'stream' else 'over unary gRPC'}"


def together_goal(a: str, b: str) -> str:
    """Requests of two sequences, of flag shapes `a` and `b` (FLAG_SHAPES), ran in one execution:
    a model reads each row's flags beside the others' (a batch-level reset, a drain path taken
    when a START meets an END), which no single request shows."""
    a, b = sorted((a, b), key=FLAG_SHAPES.index)
    return f"flags together: {a} beside {b}"


TOGETHER = {together_goal(a, b): (a, b) for i, a in enumerate(FLAG_SHAPES) for b in FLAG_SHAPES[i:]}


def together_goals(spec) -> tuple:
    """The flag pairs an execution of this model can carry, where it says its executions (a
    generated Python model) and an execution carries two live rows; an iterative sequence is its
    START alone, so none there."""
    if not spec.says_execution or live_row_goals(spec) < 2 or spec.iterations:
        return ()
    return tuple(TOGETHER)


# How many executions' rows the tracker keeps while their answers come in: an execution's rows
# answer within moments of each other, and the rest are forgotten.
RECENT_EXECUTIONS = 64


def end_in_row(row: int) -> str:
    """An END ran in row `row` of a full execution (0: the first), where the model says its rows:
    rows after it go on in the same execution, rows before it ran first."""
    return f"END in row {row} of a full execution"


@attrs.frozen
class Goal:
    name: str
    reached_s: float | None  # seconds into the campaign when first reached; None: a gap

    @property
    def reached(self) -> bool:
        return self.reached_s is not None


@attrs.frozen
class CoverageReport:
    """Goals a model can reach, each reached or not, and what else was counted."""
    goals: tuple = ()  # Goal, in a fixed order
    rows: tuple = ()  # (batch size, executions) from the server's batch_stats over the campaign
    most_live_rows: int = 0  # the most live rows one execution surely carried
    # The known divergence the campaign stopped at (the reference has no model of it as built):
    # what it had not reached by then was never tried, which is no gap of the fuzzer.
    stopped_at: str = ""
    # (goal, the known divergence) for each goal unreached because a guard kept the rule that builds
    # it from this build (Coverage.guard): left out on purpose, no gap of the fuzzer either.
    guarded: tuple = ()

    @property
    def unreached(self) -> tuple:
        return tuple(g.name for g in self.goals if not g.reached)

    @property
    def gaps(self) -> tuple:
        left_out = {goal for goal, _ in self.guarded}
        return () if self.stopped_at else tuple(g for g in self.unreached if g not in left_out)

    def line(self) -> str:
        reached = sum(g.reached for g in self.goals)
        text = f"coverage: {reached}/{len(self.goals)} goals"
        if self.rows:
            text += "; batch sizes run " + " ".join(f"{b}:{n}" for b, n in self.rows)
        text += f"; most live rows in one execution {self.most_live_rows}"
        if self.stopped_at and self.unreached:
            return text + f"; {len(self.unreached)} not tried: the campaign stopped at the known divergence {self.stopped_at}"
        if self.guarded:
            text += "; left out by a guard (this build dies of or diverges on the rule that builds it): " + \
                ", ".join(f"{goal} ({divergence})" for goal, divergence in self.guarded)
        return text + (f"; gaps of the fuzzer (never reached): {', '.join(self.gaps)}" if self.gaps else "")

    def to_json(self) -> dict:
        return {"goals": {g.name: g.reached_s for g in self.goals}, "gaps": list(self.gaps),
                "reached": sum(g.reached for g in self.goals), "total": len(self.goals),
                "batch_sizes": {str(b): n for b, n in self.rows}, "most_live_rows": self.most_live_rows,
                "stopped_at": self.stopped_at, "guarded": dict(self.guarded)}

    @classmethod
    def from_json(cls, d: dict) -> "CoverageReport":
        return cls(tuple(Goal(n, s) for n, s in (d.get("goals") or {}).items()),
                   tuple((int(b), n) for b, n in (d.get("batch_sizes") or {}).items()),
                   d.get("most_live_rows", 0), d.get("stopped_at", ""), tuple((d.get("guarded") or {}).items()))


def live_row_goals(spec) -> int:
    """The most live rows one execution can carry: a slot per row under direct, one request per
    candidate sequence under oldest, within max_batch_size (1 without a batch dimension)."""
    return max(1, min(spec.max_batch_size, spec.slots_per_instance))


def full_rows(spec) -> int:
    """The live rows of a full execution where the model says its live rows and a full one is
    more than one row; 0 otherwise (FULL_START and FULL_END are no goals there)."""
    rows = live_row_goals(spec)
    return rows if spec.says_live_rows and rows > 1 else 0


def padding_goals(spec) -> list:
    """The padding-row situations a model can show: under the direct strategy, where it says
    each request's row and its execution's live rows, a pad before a live row (two rows or more
    to an execution) and, where it says which execution answered too, a pad between live rows
    (three or more)."""
    if spec.strategy != "direct" or not (spec.says_row and spec.says_live_rows):
        return []
    rows = live_row_goals(spec)
    return ([PAD_BEFORE_LIVE] if rows >= 2 else []) + ([PAD_BETWEEN_LIVE] if rows >= 3 and spec.says_execution else [])


def goals_for(spec, *, families: tuple = (), strings: bool, expiry: bool, statistics: bool = True,
              cancels: bool = False, gives_up: bool = False, witness_vias: tuple = (),
              cancels_queued: bool = False, again: bool = False, behind_end: bool = False) -> tuple:
    """Every goal this model can reach, in report order: twins of the string `families` the
    generator may make where `strings` are taken, live rows only where the server's statistics
    can be read, a cancel that finds its request running (and a witness swept over each of
    `witness_vias`) where cancel_pipelined is drawn, one beside a live row where give_up_beside
    is, and a START cancelled in the backlog where cancel is (its id sent to `again` where that
    is not guarded), and a START pipelined behind its id's END where that is not guarded
    (`behind_end`)."""
    edges = VALUE_GOALS + (float_goals(spec.value_range[1]) if spec.is_float else ())
    if spec.value_range[0] >= 0:  # an unsigned model: no sum or value below 0
        edges = tuple(e for e in edges if e != "-1")
    goals = [f"input {e}" for e in edges]
    if not spec.iterations:  # an iterative START's sums are multiples of its value
        goals += [f"sum {e}" for e in edges]
        goals += list(swing_goals(*spec.value_range))
        if spec.capacity > 1:  # two sequences hold slots at once
            goals += [twin_goal(f, p) for f in INTEGER_TWINS for p in twin_places(f, spec.id_bits)]
            goals += [twin_goal(NEGATIVES), twin_goal(SCALED)]
            if strings:
                goals += ["twins live: other type"] + [f"twins live: {f}" for f in families]
        goals += [f"depth {d}" for d in DEPTHS]
        goals += [f"{ROUNDING} {n}" for n in ROUNDING_RUNS] if spec.is_float else []
        if spec.capacity > 1:  # others come and go beside a live one
            goals += [f"churn {c}" for c in CHURNS]
    goals += [f"id~2^{k}" for k in ID_EDGES if k <= 32 or spec.id_bits == 64]
    # an iterative sequence is its START: nothing is sent on it while it runs
    goals += [flags_goal(f, s) for s in ID_STATES if not (spec.iterations and s == "live") for f in FLAG_SHAPES]
    goals += [f"live rows >= {n}" for n in range(1, live_row_goals(spec) + 1)] if statistics else []
    situations = ["backlog", "admitted", "refused"] + ([] if spec.iterations else ["restart", "long gap",
                                                                                   PIPELINED_RESTART, REUSED_AT_ONCE])
    # (with one slot the START waits for the END's: never in one execution with it)
    situations += [START_BEHIND_END] if behind_end and not spec.iterations and spec.capacity > 1 else []
    rows = full_rows(spec)
    if rows:
        # an iterative sequence is its START: no START comes while it runs, so none throws a sum away
        situations += ([] if spec.iterations else [FULL_START]) + [FULL_END]
        situations += [end_in_row(k) for k in range(rows)] if spec.says_row else []
    # (an iterative model keeps no sequence live for a group, and the goal needs a sum that shows it ran)
    situations += [CANCELLED_RUNNING] if cancels and not spec.iterations else []
    situations += [swept_goal(v) for v in witness_vias] if cancels and not spec.iterations else []
    # (an iterative START ends its sequence as it goes: nothing holds a slot, no START waits)
    if cancels_queued and not spec.iterations:
        situations += [CANCELLED_QUEUED] + ([CANCELLED_ID_AGAIN] if again else [])
    beside = gives_up and spec.says_execution and spec.says_live_rows and live_row_goals(spec) >= 2
    situations += [CANCELLED_BESIDE] if beside else []
    situations += padding_goals(spec)
    goals += together_goals(spec)
    # an iterative sequence ends itself: none is left to idle out, or kept going
    # (a quiet model stops every client for most of a window: not where a window is too long to wait)
    waited = [EXPIRY_REUSE, KEPT_ALIVE, LONG_LIFE, QUIET] if expiry and not spec.iterations else []
    goals += [f"situation: {s}" for s in situations + waited]
    return tuple(goals)


@attrs.define
class Coverage:
    """The tracker: one per campaign, shared by its examples (RunStats.coverage)."""
    lo: float = -(2**31)
    hi: float = 2**31 - 1
    started: float = attrs.Factory(time.monotonic)
    reached: dict = attrs.Factory(dict)  # goal -> seconds into the campaign when first reached
    most_live_rows: int = 0
    full_rows: int = 0  # full_rows(spec) of the model: 0 where FULL_START and FULL_END are no goals
    row_limit: int = 0  # live_row_goals(spec): the most live rows one execution can carry (0: unknown)
    # Goals the running example reached: what steering (fuzz/generator/steering.py) aims past. The example's
    # own, so that a replay of it makes the same choices whatever else the campaign reached.
    here: set = attrs.Factory(set)
    # Goals the campaign had reached when the running example began: among the choices open in
    # the example, steering takes one the campaign lacks first, so examples spread over the goals
    # instead of each drawing from all of them again. Kept from the first failure on, so that the
    # shrinker's replays of the failing example steer as it did.
    seen: frozenset = frozenset()
    # Every goal the campaign's model can reach (goals_for; empty outside a campaign, and in one
    # too small to keep rules on: campaign.keeps_rules): what a rule that alone builds some of
    # them is kept on for while the campaign lacks one (swarm.py).
    reachable: frozenset = frozenset()
    # Goals the campaign had reached when the running round of examples (one Hypothesis run) began:
    # the rules kept on for their goals (swarm.py) stay the same through a round. Chosen per
    # example, the same choices would pick other rules in a later example, which Hypothesis's
    # data tree calls flaky (its round ends).
    round_seen: frozenset = frozenset()
    # The rows of the executions answering lately, by serial (ran_in): what ran together.
    executions: dict = attrs.Factory(dict)
    # Each id's last input since its START, in this example: what a swing is measured from (and
    # what the generator's swings are drawn from: machine._fit).
    last_input: dict = attrs.Factory(dict)
    # give_up's strikes, each (deadline in us, calls given up, calls it could give up): where on
    # this model and machine a deadline lands among the answers (steering.beside_deadline), and
    # those of the campaign when the example began (kept from the first failure on, as `seen`).
    give_ups: list = attrs.Factory(list)
    give_ups_seen: tuple = ()
    guarded: dict = attrs.Factory(dict)  # goal -> the known divergence whose guard kept its rule off (guard)
    # A float model's ModelSpec.rounds (None for any other, and an iterative one, whose sums are
    # its START's multiples); in the example, each live id's last answered sum and how many sums
    # in a row rounded on it, and the longest such run (what a steered run goes past).
    rounds: object = None
    last_sum: dict = attrs.Factory(dict)
    rounding: dict = attrs.Factory(dict)
    longest_rounding: int = 0

    def new_example(self, shrinking: bool = False) -> None:
        self.here = set()
        self.executions = {}  # (a reload in the example may count serials again)
        self.last_input = {}
        self.last_sum, self.rounding, self.longest_rounding = {}, {}, 0
        if not shrinking:
            self.seen = frozenset(self.reached)
            self.give_ups_seen = tuple(self.give_ups)

    def new_round(self) -> None:
        # (a guarded goal counts as seen: its rule, kept on for it, only ever skips)
        self.round_seen = frozenset(self.reached) | frozenset(self.guarded)

    def hit(self, goal: str) -> None:
        self.here.add(goal)
        if goal not in self.reached:
            self.reached[goal] = round(time.monotonic() - self.started, 3)

    def sent(self, req, plain: bool) -> None:
        """A request went out; `plain`: of the model's dtype, one row (its value is a summand)."""
        if plain:
            for e in value_edges(req.value, self.lo, self.hi):
                self.hit(f"input {e}")
            previous = self.last_input.get(req.seq_id)
            if previous is not None and not req.start:
                for goal in swings(previous, req.value, self.lo, self.hi):
                    self.hit(goal)
            self.last_input[req.seq_id] = req.value
            if req.end:  # over: a request without START on it later swings from nothing
                self.last_input.pop(req.seq_id)
        for e in id_edges(req.seq_id):
            self.hit(e)

    def answered(self, value: float) -> None:
        for e in value_edges(value, self.lo, self.hi):
            self.hit(f"sum {e}")

    def summed(self, req, answer: float) -> None:
        """A plain request (one row of the model's dtype) was answered `answer`: on a float model,
        whether its sum rounded, one more of its sequence's run of such sums (ROUNDING)."""
        if self.rounds is None:
            return
        previous = None if req.start else self.last_sum.get(req.seq_id)
        run = self.rounding.get(req.seq_id, 0) + 1 if previous is not None and self.rounds(previous, req.value) else 0
        self.last_sum[req.seq_id], self.rounding[req.seq_id] = answer, run
        self.longest_rounding = max(self.longest_rounding, run)
        for n in ROUNDING_RUNS:
            if run >= n:
                self.hit(f"{ROUNDING} {n}")
        if req.end:
            del self.last_sum[req.seq_id], self.rounding[req.seq_id]

    def flags(self, req, state: str) -> None:
        """A request went out on an id that stood `state` (ID_STATES) just before."""
        self.hit(flags_goal(flag_shape(req.start, req.end), state))

    def twins(self, family: str, place: str | None = None) -> None:
        self.hit(twin_goal(family, place))

    def started_beside(self, seq_id, others, bits: int) -> None:
        """A sequence `seq_id` began while the sequences of `others` (ids) held slots: the twins
        live at once it makes with each of them, whichever rule made them."""
        for older in others:
            for family, place in twins_of(older, seq_id, bits):
                self.twins(family, place)

    def situation(self, name: str) -> None:
        self.hit(f"situation: {name}")

    def gave_up(self, deadline_us: int, given_up: int, could_give_up: int) -> None:
        """A give_up strike: of `could_give_up` calls (those not spared), `given_up` were."""
        if could_give_up:
            self.give_ups.append((deadline_us, given_up, could_give_up))

    def live_rows(self, inferences: int, executions: int) -> int:
        """Over a stretch in which the model ran `executions` batches of `inferences` requests in
        all, some batch carried at least the mean: every count up to it is reached. Returns it.
        Never past the model's row_limit: counts read while an execution's requests were counted
        and the execution not yet (seen: a mean of 2 rows on a model of one row, read around a
        crowd) are no more rows."""
        if executions <= 0 or inferences <= 0:
            return 0
        surely = math.ceil(inferences / executions)
        if self.row_limit:
            surely = min(surely, self.row_limit)
        for n in range(1, surely + 1):
            self.hit(f"live rows >= {n}")
        self.most_live_rows = max(self.most_live_rows, surely)
        return surely

    def rows_said(self, rows: int, start: bool, end: bool = False, row: int | None = None) -> None:
        """The model said the execution that answered a request carried `rows` live rows: `start`,
        a START that threw a live sum away; `end`, an END; `row`, the request's row in it (if said)."""
        self.live_rows(rows, 1)
        if self.full_rows and rows >= self.full_rows:
            for flag, goal in ((start, FULL_START), (end, FULL_END)):
                if flag:
                    self.situation(goal)
            if end and row is not None and 0 <= row < self.full_rows:
                self.situation(end_in_row(row))
        if row is not None and row >= rows > 0:  # fewer live rows than rows up to this one
            self.situation(PAD_BEFORE_LIVE)

    def ran_in(self, execution: int, key, shape: str, row: int | None = None, live: int | None = None) -> None:
        """A request of sequence `key`, of flag shape `shape`, was answered by the execution with
        this serial: with each other sequence's request answered by it, a flag pair together;
        once every one of its `live` rows answered, each saying its `row`, whether a padding row
        lay between two of them."""
        rows = self.executions.setdefault(execution, [])
        for other, their, _, _ in rows:
            if other != key:
                self.hit(together_goal(shape, their))
        rows.append((key, shape, row, live))
        said = {r for _, _, r, n in rows if r is not None and n == live}
        # every row said, one each, by answers that agree on the count (not two executions' under one serial)
        if live and len(said) == len(rows) == live and max(said) - min(said) + 1 > live:
            self.situation(PAD_BETWEEN_LIVE)
        while len(self.executions) > RECENT_EXECUTIONS:
            del self.executions[next(iter(self.executions))]

    def batch_sizes(self, rows, padded: bool) -> None:
        """The server's batch_stats over the campaign: (batch size, executions). A batch size is
        its live rows where no padding row is counted (oldest, no batch dimension); under direct
        it counts every position up to the last live one, and says nothing of live rows."""
        if not padded:
            for size, n in rows:
                if n:
                    self.live_rows(size, 1)

    def depths(self, lengths) -> None:
        deepest = max(lengths, default=0)
        for d in DEPTHS:
            if deepest >= d:
                self.hit(f"depth {d}")

    def churned(self, most: int) -> None:
        """The most new sequences one sequence saw start during its life, then went on."""
        for c in CHURNS:
            if most >= c:
                self.hit(f"churn {c}")

    def guard(self, goal: str, divergence: str) -> None:
        """A guard kept the rule that builds `goal` from running (a known divergence of the build):
        unreached, the goal is reported as left out for it, not as a gap of the fuzzer."""
        self.guarded.setdefault(goal, divergence)

    def report(self, goals: tuple, rows: tuple = (), stopped_at: str = "") -> CoverageReport:
        guarded = tuple((g, self.guarded[g]) for g in goals if g in self.guarded and g not in self.reached)
        return CoverageReport(tuple(Goal(g, self.reached.get(g)) for g in goals), tuple(rows), self.most_live_rows,
                              stopped_at, guarded)


def twin_goal(family: str, place: str | None = None) -> str:
    """Two ids of `family` live at once; an integer family's with its place (twin_places)."""
    return f"twins live: {family}" + (f", {place}" if place else "")


def twin_places(family: str, bits: int) -> tuple:
    """Where integer twins of `family` are a goal on a `bits`-wide CORRID: ids 2^k apart once per
    width of low bits they share (edges.low_bit_widths, "by 2^k"), the others once per band of
    the older id (edges.ID_BANDS: a float64 makes neighbours one key only past 2**53)."""
    if family == "2^k apart":
        return tuple(f"by 2^{k}" for k in low_bit_widths(bits))
    if family == MERSENNE:
        return tuple(f"by 2^{k}-1" for k in MERSENNE_BITS if k < bits)
    if family == ALIGNED:
        return tuple(f"to 2^{k}" for k in ALIGNED_BITS if k < bits)
    return id_bands(bits)


def twin_place(family: str, older: int, twin: int, bits: int) -> str | None:
    """The place (twin_places) of integer twins `older` and `twin`: None where it is none."""
    if family == "2^k apart":
        k = shared_low_bits((twin - older) % 2**bits, bits)
        return None if k is None else f"by 2^{k}"
    if family == MERSENNE:  # the ids themselves apart, not modulo the width: a hash reads the number
        apart = abs(twin - older)
        k = max((k for k in MERSENNE_BITS if k < bits and apart and apart % (2**k - 1) == 0), default=None)
        return None if k is None else f"by 2^{k}-1"
    if family == ALIGNED:  # the less aligned of the two
        places = [aligned_place(older), aligned_place(twin)]
        return None if None in places else min(places, key=lambda p: int(p.removeprefix("to 2^")))
    return band_of(older)


def twins_of(older, newer, bits: int) -> tuple:
    """The twin goals' (family, place) that ids `older` and `newer` make: integers equal modulo
    2^k (edges.low_bit_widths), neighbours or 10^k apart (either way round, on a `bits`-wide CORRID),
    one the other's negation or the other scaled (SCALE_FACTORS), an id and its other-typed twin
    (5 and "5"), or string ids (an integer as its decimal text) of one of edges.STRING_FAMILIES."""
    if isinstance(older, int) and isinstance(newer, int):
        apart = (newer - older) % 2**bits
        families = [*MODULUS_FAMILIES, ALIGNED] + [f for f, steps in (("neighbours", NEIGHBOUR_STEPS), ("10^k apart", DECIMAL_STEPS))
                                    if apart in steps or 2**bits - apart in steps]
        found = [(f, twin_place(f, older, newer, bits)) for f in families]
        negatives = ((NEGATIVES, None),) if (older + newer) % 2**bits == 0 else ()
        scaled = ((SCALED, None),) if any(older * f == newer or newer * f == older for f in SCALE_FACTORS) else ()
        return tuple((f, p) for f, p in found if p in twin_places(f, bits)) + negatives + scaled
    a, b = str(older), str(newer)
    if a == b:
        return (("other type", None),)
    return tuple((f, None) for f in STRING_FAMILIES if b == string_twin(a, f) or a == string_twin(b, f))


def flag_shape(start: bool, end: bool) -> str:
    return next(shape for shape, flags in FLAGS.items() if flags == (bool(start), bool(end)))


def flags_goal(shape: str, state: str) -> str:
    return f"request: {shape} on a {state} id"


def sibling_family(step: int) -> str:
    """The family of two integer ids `step` apart, as coverage names it."""
    if step in NEIGHBOUR_STEPS:
        return "neighbours"
    if step in MERSENNE_STEPS:
        return MERSENNE
    odd = step
    while odd % 2 == 0:
        odd //= 2
    return "2^k apart" if odd in (1, 3) else "10^k apart"
