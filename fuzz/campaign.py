"""Runs the state machine against one model and says what happened, as values for the summary
and the JSON report. Used by `pytest fuzz/` and by the benchmarks."""
from __future__ import annotations

import time
from contextlib import contextmanager
from unittest import SkipTest

import attrs
from hypothesis import HealthCheck
from hypothesis import seed as hypothesis_seed
from hypothesis import settings as hsettings
from hypothesis.errors import Flaky, FlakyStrategyDefinition
from hypothesis.reporting import current_reporter, with_reporter
from hypothesis.stateful import run_state_machine_as_test

from .generator.coverage import CoverageReport, goals_for
from .generator.depth import DepthSummary
from .checker.divergences import by_key, known_for, steered_around
from .harness.engine import BudgetSpent, RoundSpent
from .checker.invariants import InvariantViolation, failure_key
from .corpus.isolate import (FOCUS_FIRST_STEPS, can_isolate, from_fresh_model, polish, replays_only_on_history,
                             replays_reliably, sends_at_once, Tried)
from .generator.machine import FuzzSettings, RunStats, make_machine, string_ids_allowed, twin_families
from .progress import Progress, Snapshot
from .harness.server import ServerDied, Terminated, stopping
from .spec import ModelSpec
from .values import program_lines


@attrs.frozen
class Failure:
    invariant: str
    detail: str
    seconds_to_first_failure: float
    shrunk_steps: int
    program: tuple  # StepRecord lines, as text
    expected_divergence: str | None = None  # key of the known divergence it is, if any
    # Hypothesis could not replay it exactly (server history, timing), or it replayed only on what
    # earlier examples left in the model and passes from a fresh one: real, not shrunk
    flaky: bool = False
    shrink_stopped: bool = False  # shrinking stopped at the budget: the shortest program seen by then
    records: tuple = attrs.field(default=(), repr=False)  # the program as StepRecords (for the corpus)
    accepted: tuple = ()  # known divergences the reference took as built when it was found (FuzzSettings.accept)
    shrink_s: float = 0.0  # from the first failure to the shrunk program: Hypothesis's shrink, then ours

    @property
    def race(self) -> bool:
        """A known divergence that is a race of the build (KnownDivergence.race): a correct model
        may lose it now and then, and a replay may not."""
        return self.expected_divergence is not None and by_key(self.expected_divergence).race

    def whole(self, indent: str = "") -> str:
        """The broken promise, its detail (flaky where it could not be replayed exactly: not shrunk) and its
        program, a line a step (each after `indent`)."""
        return f"[{self.invariant}] {self.detail}{' (flaky)' if self.flaky else ''}\n" + \
            "\n".join(indent + line for line in self.program)

    def to_json(self) -> dict:
        return attrs.asdict(self, filter=lambda a, _: a.name != "records")


@attrs.frozen
class ModelResult:
    model: str
    spec: str
    triton_version: str
    examples: int
    steps: int
    requests: int
    wall_s: float
    ambiguous_waits: int
    failures: tuple
    expected_divergences: tuple  # keys of known divergences this build should show here
    guards: tuple  # inputs left out because they would take this build down
    # Known divergences this campaign did not see. Not an error: a budget can miss one; the corpus
    # replays its entry (a strict xfail), which fails when a build really stops showing it.
    unexpected_pass: tuple = ()
    faults: tuple = ()  # (nemesis rule, times it struck)
    fault_s: tuple = ()  # (server fault, seconds its strikes took)
    wait_s: float = 0.0  # seconds the ends of examples waited out idle windows and pauses
    stuck_s: float = 0.0  # seconds every client waited mid-example for windows to free slots
    depth: DepthSummary = DepthSummary()  # sequence lengths and expiry -> reuse cycles
    left_out: tuple = ()  # what this model's campaign does not fuzz, and why (e.g. a long idle timeout)
    interrupted: str = ""  # why the campaign stopped early (Ctrl-C, SIGTERM); its counts are what it did
    unsteady_rounds: int = 0  # rounds of examples Hypothesis ended on a draw that differed (no finding)
    # Answers that came after the prompt bound, within the grace a starved machine widens it by
    # (fuzz/harness/lag.py): not hangs; and the slowest of them, in seconds.
    slow_answers: int = 0
    slowest_answer_s: float = 0.0
    prompt_s: float = 5.0  # the prompt bound those came after (FuzzSettings.prompt_s)
    coverage: CoverageReport = CoverageReport()  # goals reached and the fuzzer's gaps (fuzz/generator/coverage.py)
    # Known divergences the campaign saw and then fuzzed on past, its reference taking them as built.
    accepted: tuple = ()
    # Inferences the model had run since it was loaded when the campaign began, and whether the
    # campaign reloaded it first: what they left in it is in no history the campaign keeps.
    served_before: int = 0
    reloaded_first: bool = False
    fresh_rounds: int = 0  # rounds of examples after the first that began on a freshly loaded copy (_rounds)
    clean_examples: int = 0  # examples of clean rounds: no rule left a sequence to idle out (CLEAN_EXAMPLES)
    clean_examples_idled: int = 0  # of them, those where a sequence ended with no END all the same
    model_spec: ModelSpec | None = attrs.field(default=None, repr=False)

    @property
    def requests_per_s(self) -> float:
        return self.requests / self.wall_s if self.wall_s else 0.0

    @property
    def verdict(self) -> str:
        if any(f.expected_divergence is None for f in self.failures):
            return "FAIL"
        if self.failures:
            return "expected divergence"
        if self.interrupted:
            return "interrupted"
        return "pass, known divergence not seen" if self.unexpected_pass else "pass"

    def beside_the_point(self, failure: "Failure") -> bool:
        """A known divergence this campaign took as built and fuzzed on past, or a race of the build
        a correct model may lose now and then (KnownDivergence.race), met in its last phase: no finding."""
        return failure.expected_divergence in self.accepted or failure.race

    @classmethod
    def from_json(cls, d: dict) -> "ModelResult":
        """Back from to_json (how an xdist worker hands its results to the controller)."""
        names = {a.name for a in attrs.fields(cls)}
        kw = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k in names}
        kw["failures"] = tuple(Failure(**{**f, "program": tuple(f["program"])}) for f in d["failures"])
        kw["depth"] = DepthSummary.from_json(d.get("depth") or {})
        kw["coverage"] = CoverageReport.from_json(d.get("coverage") or {})
        return cls(**kw)

    def to_json(self) -> dict:
        d = attrs.asdict(self, recurse=False, filter=lambda a, _: a.name != "model_spec")
        d["failures"] = [f.to_json() for f in self.failures]
        d["depth"] = attrs.asdict(self.depth)
        d["coverage"] = self.coverage.to_json()
        d["requests_per_s"] = round(self.requests_per_s, 1)
        d["verdict"] = self.verdict
        return d


def expected_divergences(spec: ModelSpec, version: str, fuzz_settings: FuzzSettings) -> list:
    """The known divergences of this model and build a campaign with these settings may meet. One
    that takes a fault the campaign lacks cannot be; a guarded one is not generated, unless it is
    to be found unaided (find_known) or a fault of the campaign meets it past its guard."""
    nemesis = fuzz_settings.nemesis
    known = [d for d in known_for(spec, version) if not d.needs_fault or d.needs_fault in nemesis]
    return [d for d in known if d.key in fuzz_settings.find_known or not d.guard
            or (d.met_despite_guard and d.met_despite_guard in nemesis)]


def _known(expected, v: InvariantViolation) -> str | None:
    """The key of the known divergence of this build that explains the violation, if any: one
    that tells it by what came back or what the checker said first, over one that names every
    violation of its invariant (a crash of string ids names any death of its models)."""
    told = [d for d in expected if d.explains(v.invariant, getattr(v, "got", ""), getattr(v, "expected", ""), v.detail)]
    return next((d.key for d in told if d.signatures or d.details or d.expected_signatures), told[0].key if told else None)


def _cut_short(err: BaseException) -> bool:
    """Hypothesis's verdict on a failure whose shrinking could not replay or was stopped."""
    return isinstance(err, Flaky)  # FlakyStrategyDefinition included


def violations_in(err: BaseException) -> list[InvariantViolation]:
    if isinstance(err, InvariantViolation):
        return [err]
    if getattr(err, "exceptions", None):  # an ExceptionGroup: several distinct failures
        return [v for e in err.exceptions for v in violations_in(e)]
    return []


def violation_report(err: BaseException) -> str | None:
    """The failure report for an error made only of broken promises (one, or Hypothesis's group
    of distinct ones), else None (a bug of the harness keeps its traceback)."""
    found = violations_in(err)
    if not found or (getattr(err, "exceptions", None) and len(found) != _leaf_count(err)):
        return None
    return "\n\n".join(str(v) for v in found)


def _leaf_count(err: BaseException) -> int:
    inner = getattr(err, "exceptions", None)
    return sum(_leaf_count(e) for e in inner) if inner else 1


# With a budget, a round of Hypothesis examples is at most this many: the budget is looked at
# between rounds, and the long profile's 5000 examples would otherwise run for most of an hour.
ROUND_EXAMPLES = 50
# Rules are kept on for the goals they alone build (fuzz/generator/swarm.py) only in a campaign
# with room for the swarm's other draws beside them, this many steps in all (a `dev` campaign
# has 1000, the `ci` profile 100): in a few short examples (a test's, a regression seed's) kept
# rules crowd the rest out, and made a seed's draws move whenever the kept set did (seen: the
# nemesis tests' seeds no longer drew their fault rules, and a slow model's 3x8-step seed took
# 7-89 s where it had taken 12-27). The planned size decides (a round of the `long` profile is
# 4000 steps of its 400,000; a campaign cut short by its budget still keeps them), so a test with a
# larger budget and a pinned seed (test_broken_models', the deadlines nemesis test's) still has
# draws that move with the kept set.
KEEP_RULES_STEPS = 500
# The campaign's first round, each one `afresh` reloads for, and the first of a phase past a known
# divergence begin with a clean round of this many examples: its machine has no rule that
# leaves a sequence to idle out (machine.lets_idle_out). The model never hears of such a
# sequence's end, so what it keeps for it (a ring entry, a table row) it may keep for good, and a
# bug of that bookkeeping shows only before the first idle-out (seen: a session ring whose head
# advanced by one where it retired several was missed in 2 of 2 `dev` campaigns, the first
# example leaving a sequence to idle out within seconds, and in a 4-minute campaign with two fresh
# copies). Not in a campaign too small to keep rules (KEEP_RULES_STEPS: a test's, a seed's) nor a
# derandomized one: their examples stay what they were. Without a budget the clean examples are
# part of the planned ones, not added to them.
CLEAN_EXAMPLES = 3
# ... or fewer, where this many seconds pass first (RoundSpent: the example running then ends after
# its step): a slow model's example takes a minute (seen: a cancel bug first failed after 3
# minutes, where `cancel_pipelined` had found it in 0.6-29 s).
CLEAN_ROUND_S = 10.0


def keeps_rules(hypothesis_settings: hsettings) -> bool:
    return hypothesis_settings.max_examples * hypothesis_settings.stateful_step_count >= KEEP_RULES_STEPS


def _round_settings(hypothesis_settings: hsettings, budget_s: float | None) -> hsettings:
    if budget_s is None or hypothesis_settings.derandomize or hypothesis_settings.max_examples <= ROUND_EXAMPLES:
        return hypothesis_settings  # derandomized rounds would repeat each other
    return hsettings(hypothesis_settings, max_examples=ROUND_EXAMPLES)


def fuzz_model(server, model: str, hypothesis_settings: hsettings, budget_s: float | None = None,
               fuzz_settings: FuzzSettings = FuzzSettings(), *,
               seed: int | None = None, fresh_start: bool = True) -> tuple[ModelResult, BaseException | None]:
    """Fuzzes one model. Returns the result and the error to re-raise (None when every failure
    is a known divergence of this build, or there is none). `seed` fixes Hypothesis's random
    seed (a regression seed). A model that ran anything since its load is reloaded first where
    the server allows (`_fresh_start`), unless `fresh_start` is False (a test that warmed it on
    purpose)."""
    spec = ModelSpec.fetch(server, model)
    version = getattr(server, "version", None) or "?"
    expected = expected_divergences(spec, version, fuzz_settings)
    guards = tuple(d.guard for d in steered_around(spec, version, fuzz_settings.find_known))
    stats = RunStats()
    served_before, reloaded_first = _fresh_start(server, spec) if fresh_start else (0, False)
    machine = make_machine(server, spec, fuzz_settings, stats)
    clean = keeps_rules(hypothesis_settings) and not hypothesis_settings.derandomize
    clean_machine = make_machine(server, spec, fuzz_settings, stats, clean=True) if clean else None
    left_out = machine.left_out
    counted = Counted.of(server, spec.batcher)
    goals = goals_for(spec, strings=string_ids_allowed(spec, version, fuzz_settings.find_known),
                      families=twin_families(spec, version, fuzz_settings.find_known),
                      statistics=counted.runs_before is not None,
                      expiry=machine.expiry_ok, cancels=machine.cancel_pipelined is not None,
                      witness_vias=machine.plan.witness_vias, cancels_queued=machine.cancel is not None,
                      again=not machine.plan.setup.lingering_guard,
                      behind_end=machine.plan.setup.start_behind_its_end_ok,
                      gives_up=machine.give_up_beside is not None)
    if keeps_rules(hypothesis_settings):
        stats.coverage.reachable = frozenset(goals)
    if seed is not None:
        machine = hypothesis_seed(seed)(machine)
        clean_machine = clean_machine and hypothesis_seed(seed)(clean_machine)
    started = time.monotonic()
    if budget_s is not None:
        stats.stop_at = started + budget_s

    def result_so_far(wall: float, stopped_at: str = "", **verdict) -> ModelResult:
        """The campaign's counts; `verdict` adds its failures, or why it was stopped; `stopped_at`:
        the known divergence it could not fuzz past."""
        rows, runs = counted.rise()
        stats.coverage.batch_sizes(rows, padded=spec.strategy == "direct" and spec.max_batch_size > 0)
        if runs is not None:  # over the whole campaign: executions ran, and their mean live rows
            stats.coverage.live_rows(runs[1], runs[0])
        counts = dict(
            model=model, spec=spec.describe(), triton_version=version, examples=stats.examples,
            steps=stats.steps, requests=stats.requests, wall_s=round(wall, 3),
            ambiguous_waits=stats.ambiguous_waits, failures=(), expected_divergences=(),
            guards=guards, faults=tuple(sorted(stats.faults.items())),
            fault_s=tuple(sorted((k, round(v, 2)) for k, v in stats.fault_s.items())),
            wait_s=round(stats.wait_s, 2), stuck_s=round(stats.stuck_s, 2), unsteady_rounds=stats.unsteady_rounds,
            slow_answers=stats.lag.slow, slowest_answer_s=round(stats.lag.slowest_s, 2),
            prompt_s=fuzz_settings.prompt_s, served_before=served_before, reloaded_first=reloaded_first,
            fresh_rounds=stats.fresh_rounds, clean_examples=stats.clean_examples,
            clean_examples_idled=stats.clean_examples_idled,
            depth=DepthSummary.of(stats.lengths, stats.reuse_cycles, wall), left_out=left_out,
            coverage=stats.coverage.report(goals, rows, stopped_at), model_spec=spec)
        return ModelResult(**{**counts, **verdict})

    def partial(stop: BaseException) -> ModelResult:
        """What the campaign did until it was stopped; no verdict."""
        return result_so_far(time.monotonic() - started, interrupted=str(stop) or type(stop).__name__)
    snapshot = lambda: Snapshot(stats.examples, stats.steps, stats.requests,  # noqa: E731
                                int(stats.first_failure_s is not None))
    per_round = _round_settings(hypothesis_settings, budget_s)
    # (Hypothesis's rules go in name order and its simplest example takes the first at every step:
    # without abandon_stream that is alias, whose draws make that example too large for its health
    # check, which a fuzzer's machine need not pass)
    clean_round = hsettings(per_round, max_examples=min(CLEAN_EXAMPLES, per_round.max_examples),
                            suppress_health_check=[*per_round.suppress_health_check, HealthCheck.large_base_example])
    if clean and budget_s is None:  # the clean round's examples are of those planned
        per_round = hsettings(per_round, max_examples=max(1, per_round.max_examples - CLEAN_EXAMPLES))
    stats.clean_due = clean
    failures, unknown, accept = [], None, frozenset(fuzz_settings.accept)

    loaded_at = started  # when the copy the campaign fuzzes was loaded (or the campaign began)

    def afresh() -> None:
        """A round after the first begins on a fresh copy of the model, once FRESH_EVERY_S has
        passed since the last (see _rounds), or where one is due (stats.reload_due). A server that
        died meanwhile is left for the round's first check to find, as before; a copy that fails
        to load is the round's error."""
        nonlocal loaded_at
        if time.monotonic() - loaded_at < FRESH_EVERY_S and not stats.reload_due:
            return
        stats.reload_due = False
        counted.bank()
        try:
            server.reload_model(spec.batcher)
        except ServerDied:
            return
        counted.reloaded()
        stats.history.clear()  # (what earlier examples ran, a failure's replay tries first: another copy's)
        stats.fresh_rounds += 1
        stats.clean_due = clean
        loaded_at = time.monotonic()
    refresh = afresh if fresh_start and can_isolate(server) and not hypothesis_settings.derandomize else None
    with Progress(f"fuzz {model}", snapshot):
        while True:  # a phase: until a failure, the budget or the examples run out
            error = _rounds((machine, per_round), (clean_machine, clean_round), budget_s, started, partial, stats,
                            refresh)
            if error is None:
                break
            found, unknown = _judge(server, spec, error, stats, expected, attrs.evolve(fuzz_settings, accept=accept),
                                    time.monotonic() - started, partial)
            failures += found
            more = _fuzz_on_past(found) - accept
            if unknown is not None or not more or stopping() or \
                    budget_s is not None and time.monotonic() - started > budget_s:
                break
            # Every failure is a known divergence the reference can take as built: fuzz on past it,
            # from a fresh copy and a clean round, as the campaign began (a bug of the model's own
            # bookkeeping can look like a known race: a session ring read one entry off answers an
            # END with the sum of the START pipelined behind it, start-overtakes-its-ids-end's).
            accept |= more
            stats.forget_failures()
            stats.reload_due = refresh is not None  # (by the next round's refresh, which handles a stop in it)
            stats.clean_due = clean
            machine = make_machine(server, spec, attrs.evolve(fuzz_settings, accept=accept), stats)
            clean_machine = clean_machine and make_machine(server, spec, attrs.evolve(fuzz_settings, accept=accept),
                                                           stats, clean=True)
            if seed is not None:
                machine = hypothesis_seed(seed)(machine)
                clean_machine = clean_machine and hypothesis_seed(seed)(clean_machine)
    if stopping():  # told to stop, though the signal's exception was lost: nothing seen since counts
        stop = Terminated("the run was told to stop")
        stop.partial_result = partial(stop)
        raise stop
    stopped_at = [f.expected_divergence for f in failures
                  if f.expected_divergence and not by_key(f.expected_divergence).as_built]
    left_out += tuple(f"everything past the known divergence {key}: the reference has no model of it as built, so "
                      f"the campaign stopped there" for key in stopped_at)
    seen = {f.expected_divergence for f in failures}
    # The wall time includes shrinking from a fresh model.
    result = result_so_far(time.monotonic() - started, stopped_at=", ".join(stopped_at), failures=tuple(failures),
                           expected_divergences=tuple(d.key for d in expected),
                           unexpected_pass=tuple(d.key for d in expected if d.key not in seen and not d.race),
                           accepted=tuple(sorted(accept - set(fuzz_settings.accept))), left_out=left_out)
    return result, unknown


@attrs.define
class Counted:
    """What the server counted of the campaign's model: executions at each batch size, and
    (executions, inferences), as the rise since the campaign began, carried over reloads (a reload
    starts the server's counts again: `bank` before it, `reloaded` after)."""
    server: object
    model: str
    sizes_before: dict
    runs_before: tuple | None  # None: the server will not say
    sizes_done: dict = attrs.Factory(dict)  # banked before reloads
    runs_done: tuple = (0, 0)

    @classmethod
    def of(cls, server, model: str) -> "Counted":
        counted = cls(server, model, {}, None)
        counted.sizes_before, counted.runs_before = counted._read()
        return counted

    def _read(self) -> tuple:
        return self.server.batch_sizes(self.model) or {}, self.server.executions_and_inferences(self.model)

    def rise(self, reading: tuple | None = None) -> tuple:
        """(rows: (batch size, executions) that rose, (executions, inferences) risen or None where
        the server will not say), at `reading` (default: read now)."""
        sizes, runs = reading or self._read()
        grown = dict(self.sizes_done)
        for b, n in sizes.items():
            grown[b] = grown.get(b, 0) + max(0, n - self.sizes_before.get(b, 0))
        rows = tuple((b, n) for b, n in sorted(grown.items()) if n > 0)
        if runs is None or self.runs_before is None:
            return rows, None
        return rows, tuple(d + max(0, now - then) for d, now, then in zip(self.runs_done, runs, self.runs_before))

    def bank(self) -> None:
        """Before a reload: the rise so far is kept, counted from one reading."""
        reading = self._read()
        rows, runs = self.rise(reading)
        self.sizes_done, self.sizes_before = dict(rows), reading[0]
        if runs is not None:
            self.runs_done, self.runs_before = runs, reading[1]

    def reloaded(self) -> None:
        """After a reload: the server counts from 0 again (taken so where it will not say now)."""
        sizes, runs = self._read()
        self.sizes_before = sizes
        if self.runs_before is not None:
            self.runs_before = runs if runs is not None else (0, 0)


def _fresh_start(server, spec: ModelSpec) -> tuple[int, bool]:
    """(inferences the model had run since its load, whether it was reloaded now). A model that
    ran requests before the campaign may remember them (a sum a buggy slot keeps), and a
    failure that needs what they left replays from no history of this campaign: seen when a
    second campaign on one model met the first's expired sequence in its first request, shrunk to
    that request alone, and reported it as not replayable. Where the server can reload the model,
    the campaign starts on a fresh copy (a reload takes ~1.4 s; a model that ran nothing yet is
    not reloaded). Statistics start again on a reload, so they say what the copy ran."""
    runs = server.executions_and_inferences(spec.batcher)
    served = runs[1] if runs else 0
    if not (runs and any(runs)) or not can_isolate(server):
        return served, False
    server.reload_model(spec.batcher)
    return served, True


# A round after the campaign's first begins on a fresh copy of the model, where the server can
# reload it and FRESH_EVERY_S has passed since the last copy was loaded (not in a derandomized
# campaign, whose rounds repeat): what the model keeps for the campaign's sequences (a leaked table
# row, a counter, a cache that outlives its ids) can hide a bug for good once it is there (seen:
# padding rows that gather a live sequence's table row show only until that row's holder is left
# to idle out, as a model that frees a row on END alone never gets it back; a `dev` campaign caught
# it in 2 of 6, one fresh start each). A reload costs ~1.4 s; a bug that needs more of the model's
# state than a minute of fuzzing builds (a count since its load) has that minute.
FRESH_EVERY_S = 60.0


def _rounds(plain: tuple, clean: tuple, budget_s: float | None, started: float, partial,
            stats: RunStats, refresh=None) -> BaseException | None:
    """Rounds of examples until one fails (its error), the budget is spent or the examples ran out.
    `plain` and `clean`: (machine, settings) of a round, and of a clean round (CLEAN_EXAMPLES; no
    machine: none), which runs where stats.clean_due. `refresh`: called before each round after
    the campaign's first (a reload of the model, after which a clean round is due)."""
    is_clean = clean_ran = False
    while True:
        was_clean, is_clean = is_clean, False
        try:
            # (not right after a clean round: a slow model's can outlast FRESH_EVERY_S, and a copy
            # reloaded before every round would then run clean rounds alone, and without a budget
            # for good)
            if refresh is not None and stats.rounds and not was_clean:
                refresh()
            is_clean = stats.clean_due and clean[0] is not None
            machine, per_round = clean if is_clean else plain
            stats.clean_due = False
            stats.rounds += 1
            stats.clean_rounds += is_clean
            stats.coverage.new_round()
            examples = stats.examples
            try:
                stats.in_clean_round = is_clean
                stats.round_stop_at = time.monotonic() + CLEAN_ROUND_S if is_clean else float("inf")
                with _reports_held(stats):
                    run_state_machine_as_test(machine, settings=per_round)
            finally:
                stats.clean_examples += (stats.examples - examples) * is_clean
                clean_ran = clean_ran or is_clean and stats.examples > examples
                stats.in_clean_round, stats.round_stop_at = False, float("inf")
        except RoundSpent:  # the clean round's time: the plain round goes on
            pass
        except SkipTest as err:
            # Hypothesis was told to run nothing: a campaign that only replays a database, with
            # no failure saved for this round's machine (a clean round's are filed apart), which
            # is no error where the other round of the phase replayed some
            if not (is_clean or clean_ran):
                return err
        except Exception as err:  # noqa: BLE001 - classified by _judge, re-raised if not known
            if not _unsteady(err, stats):
                return err
            # Hypothesis met a draw that differed from an earlier example with the same choices:
            # the server answered differently, so the machine's state (and what it drew) did too.
            # No promise broke; the round ends and a new one begins, and the summary counts it.
            stats.unsteady_rounds += 1
            if budget_s is None and not is_clean:
                return None
        except BudgetSpent:  # inside an example: it was drained, and nothing it saw failed
            return None
        except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM: what was done so far, no verdict
            stop.partial_result = partial(stop)
            raise
        spent = budget_s is not None and time.monotonic() - started > budget_s
        if stopping() or spent or budget_s is None and not is_clean:
            return None


def _unsteady(err: BaseException, stats: RunStats) -> bool:
    """A round ended by Hypothesis's FlakyStrategyDefinition before anything failed: its data tree
    saw the same choices draw differently (a rule's draws follow the server's answers), which
    is not a finding. After a violation or an error of the harness it is Hypothesis's shrink of
    that failing to replay: _judge's, or the harness error's."""
    return isinstance(err, FlakyStrategyDefinition) and not violations_in(err) and not stats.shortest \
        and not stats.harness_errors


# How Hypothesis begins its hint for any exception that ends a run, BudgetSpent too, and the
# steps it prints before a FlakyStrategyDefinition in a stateful test.
SEED_HINT = "You can reproduce this failure by adding @seed("
UNSTEADY_STEPS = "Steps leading up to this error:"


@contextmanager
def _reports_held(stats: RunStats):
    """Hypothesis's reports as they come, but its seed hint and its steps before an unsteady draw
    held back until the round ends, and dropped where BudgetSpent or an unsteady draw ended it
    (either would name a failure that was none)."""
    say, held, none = current_reporter(), [], False

    def report(text):
        (held.append if str(text).startswith((SEED_HINT, UNSTEADY_STEPS)) else say)(text)
    try:
        with with_reporter(report):
            yield
    except BaseException as err:
        none = isinstance(err, BudgetSpent) or _unsteady(err, stats)
        raise
    finally:
        for text in [] if none else held:
            say(text)


def _fuzz_on_past(found: list) -> frozenset:
    """The keys of the known divergences `found` shows, when the reference can take every one of
    them as built (else none: the campaign stops there)."""
    keys = {f.expected_divergence for f in found}
    if None in keys or not all(by_key(k).as_built for k in keys):
        return frozenset()
    return frozenset(keys)


def _judge(server, spec: ModelSpec, error: BaseException, stats: RunStats, expected, fuzz_settings: FuzzSettings,
           wall: float, partial) -> tuple[list, BaseException | None]:
    """A phase's error as Failures (shrunk further where the server allows), and the error to
    re-raise (None when every failure is a known divergence of this build)."""
    failures, unknown, began = [], None, time.monotonic()
    violations = violations_in(error)
    # Past the shrink budget even Hypothesis's final replay is turned away, which it reports
    # as Flaky: that is a stopped shrink, not an unreplayable failure.
    flaky = isinstance(error, Flaky) and not stats.shrink_stopped
    if (stats.shrink_stopped or not violations) and stats.shortest:
        # Shrinking stopped at the budget, or Hypothesis could not replay the failure (the
        # server's history differed): report the shortest program that broke each promise.
        violations, flaky = list(stats.shortest.values()), flaky or not stats.shrink_stopped
    if "server_alive" in stats.shortest:  # the program the server died under, not a shrink against its corpse
        violations = [stats.shortest["server_alive"] if v.invariant == "server_alive" else v for v in violations]
    if not violations:
        unknown = error
    replayable, unreplayable = {}, set()
    ours = {id(v) for v in violations if v.invariant != "server_alive" and _known(expected, v) is None}
    try:
        if not (flaky or stats.shrink_stopped):
            # Hypothesis's last replay of a failure that needs what ran before it (a count
            # across examples) can pass by luck: more replays say if it stands on its own, and
            # for requests sent at once, whether it comes back more often than by luck.
            unreplayable = {id(v) for v in violations
                            if id(v) in ours and not replays_reliably(server, spec, v, fuzz_settings)}
        if can_isolate(server):
            found = list(violations)
            replayable = _shrink_further(server, spec, violations, ours, stats, fuzz_settings,
                                         cut_short=flaky or stats.shrink_stopped, unreplayable=unreplayable)
            _rate_cuts(server, spec, violations, found, replayable, unreplayable, ours, fuzz_settings,
                       trusted=not (flaky or stats.shrink_stopped))
            if not (flaky or stats.shrink_stopped):  # (a shrink cut short has spent its budget)
                replayable |= _shorten_known(server, spec, violations, ours, expected, fuzz_settings)
    except Terminated as stop:
        stop.partial_result = partial(stop)
        raise
    for v in violations:
        match = _known(expected, v)
        if match is None and unknown is None:
            # The violation itself (its message holds the program), not Hypothesis's Flaky or
            # FlakyStrategyDefinition, which is all it reports once shrinking was cut short.
            unknown = v if _cut_short(error) or id(v) in replayable else error
            if unknown is not error:  # the summary says it was not fully shrunk; no chained traceback
                unknown.__cause__, unknown.__suppress_context__ = None, True
        steps = getattr(v, "program", [])
        program = tuple(program_lines(steps))  # (a queue is one line of it)
        failures.append(Failure(v.invariant, v.detail, round(stats.first_failure_s or wall, 3),
                                len(steps), program, match,
                                flaky=(flaky or id(v) in unreplayable) and id(v) not in replayable,
                                shrink_stopped=stats.shrink_stopped,
                                records=tuple(steps), accepted=tuple(sorted(fuzz_settings.accept)),
                                shrink_s=round(wall + time.monotonic() - began - (stats.first_failure_s or wall), 2)))
    return failures, unknown


def _rate_cuts(server, spec: ModelSpec, violations: list, found: list, replayable: dict, unreplayable: set,
               ours: set, settings: FuzzSettings, *, trusted: bool) -> None:
    """A program of requests sent at once that a fresh model or a polish confirmed once, rated as
    Hypothesis's own program was (it can fail by luck); one that is not reliable gives way, in
    place, to the program it was cut from where that was rated reliable (`trusted`, and not found
    to need earlier examples), else is reported as not replayable. Where nothing was rated
    (shrinking was stopped), such a program left as it was is rated too."""
    for i, v in enumerate(violations):
        if not sends_at_once(v.program):
            continue
        if id(v) in replayable:
            if replays_reliably(server, spec, v, settings):
                continue
            del replayable[id(v)]
            if trusted and id(found[i]) not in unreplayable:
                violations[i] = found[i]
            else:
                unreplayable.add(id(v))
        elif not trusted and id(v) in ours and id(v) not in unreplayable and \
                not replays_reliably(server, spec, v, settings):
            unreplayable.add(id(v))


# A known divergence's program is polished for this share of the shrink budget: it is reported
# to stay visible, not to be reduced as far as a finding is.
KNOWN_POLISH_SHARE = 1 / 4
KNOWN_NOT_POLISHED = ("server_alive", "no_hangs")


def _shorten_known(server, spec: ModelSpec, violations: list, ours: set, expected, settings: FuzzSettings) -> dict:
    """Each known divergence among `violations` polished in place, for a share of the shrink
    budget: Hypothesis shrinks the choices a program was drawn from, which cannot turn a queue of
    requests sent back to back into the two plain requests that show a dropped sum (seen: 74
    requests kept, a queue of 65 behind a cancelled one). Not a hang or the server's death (their
    replays wait out answer bounds, or take down a server other models share). A cut is kept only
    where it is still that divergence: one that breaks the same promise some other way would be
    reported as a new finding (seen in review: a unary hang after a deadlines fault, cut to a
    START that hangs, no longer reads as "given up"). Returns the polished ones by id: each replays."""
    polished = {}
    for i, v in enumerate(violations):
        if id(v) in ours or v.invariant in KNOWN_NOT_POLISHED:
            continue
        better = polish(server, spec, v, settings, settings.shrink_budget_s * KNOWN_POLISH_SHARE)
        if better is not None and _known(expected, better) == _known(expected, v):
            violations[i] = polished[id(better)] = better
    return polished


def _shrink_further(server, spec: ModelSpec, violations: list, ours: set, stats: RunStats,
                    settings: FuzzSettings, *, cut_short: bool, unreplayable: set) -> dict:
    """Shrinks each of our violations past Hypothesis, in place in `violations`: one that needs
    what ran before it, or whose shrinking was cut short, from a fresh model; one that replays on
    its own by polishing it, or from a fresh model too where it replays only on what earlier
    examples left (then added to `unreplayable` if that finds nothing), or where it is long and
    polishing cut nothing (another shrink budget). Returns the new ones by id: each replays."""
    replayable = {}
    for i, v in enumerate(violations):
        if id(v) not in ours:
            continue
        better, leaked, tried = None, False, Tried()  # (what each shrink showed, the next does not show again)
        polished = not (cut_short or id(v) in unreplayable)
        if polished:
            began = time.monotonic()
            better = polish(server, spec, v, settings, settings.shrink_budget_s, tried)
            # One that polishing cannot cut and that passes from a fresh model failed here only on
            # what earlier examples left in the model (a leak that outlives them: every new id
            # refused), so its program reproduces nothing on a fresh one.
            leaked = better is None and replays_only_on_history(
                server, spec, v, settings, until=began + 2 * settings.shrink_budget_s, tried=tried)
        # A long one polishing could not cut, though it replays: polishing's plain replays cut a
        # race down to a program that failed once by luck, and a fresh try of it passed (seen: a
        # lost write between two executions in one millisecond, met in a cancel group's queue of
        # 215, kept whole after 4.5 s; from a fresh model, 11 steps).
        stuck = polished and better is None and not leaked and len(v.program) > FOCUS_FIRST_STEPS
        if cut_short or id(v) in unreplayable or leaked or stuck:
            better = from_fresh_model(server, spec, v, settings, settings.shrink_budget_s, tried)
            if stuck and better is not None and len(better.program) >= len(v.program):
                better = None  # (it replays as it is: a program no shorter, a reload in front, is no gain)
            first = stats.first.get(failure_key(v))
            if better is None and first is not None and first is not v and not stuck:
                # The shortest needs more of what ran before it than a failure keeps (a count
                # across examples): the first failure ran on the least of it.
                better = from_fresh_model(server, spec, first, settings, settings.shrink_budget_s)
            # Reported as needing what ran before it, unless a cut from a fresh model replays. One
            # sent at once whose fresh replays all passed stays replaying where none was found: a
            # crowd can compose otherwise after a reload (a failure 1 replay in 10 passes ten 35 %
            # of the time), and its plain replays failed 3 of 4 here.
            if leaked and not (better is None and tried.judged_at_once):
                unreplayable.add(id(v))
        if better is not None:
            violations[i] = replayable[id(better)] = better
    return replayable
