"""Divergences between releases: failures shown on some builds and kept on others, and the replay
of their reproducers on every build that confirms (or refutes) an absence."""
from __future__ import annotations

import shutil
from pathlib import Path

import attrs

from .outcomes import TestOutcome, _read, named_invariant, parse_junit
from .run import BuildRun, Options, pytest_command, run_pytest
from .table import _short

@attrs.frozen(order=True)
class Signature:
    """A failure, as comparable across builds."""
    model: str
    invariant: str
    source: str  # "fuzz" (the campaign), "corpus NAME" or "seed MODEL-seedN"


@attrs.frozen
class Sighting:
    """One build showing a failure."""
    build: str
    known: str | None = None  # the known divergence of that build it is (fuzz/checker/divergences.py)
    detail: str = ""
    program: tuple = ()  # the shrunk program, one line per step
    reproducers: tuple = ()  # corpus files holding it


@attrs.frozen
class Replay:
    """A reproducer replayed on a build."""
    entry: str
    build: str
    outcome: str  # "breaks it", "keeps it", "breaks <other> instead", "could not replay: ..."


@attrs.frozen
class ReleaseDivergence:
    signature: Signature
    shown: tuple  # Sighting per build that shows it
    absent_on: tuple  # labels of builds that ran the same thing and did not show it
    replays: tuple = ()  # Replay of its reproducers on each build
    guards: tuple = ()  # "build: guard" of the builds it is absent on (inputs their fuzzer avoids)

    @property
    def absence(self) -> str:
        if self.signature.source == "fuzz":
            return "not seen within the budget"
        return "the same program keeps the promise" if self.signature.source.startswith("corpus") \
            else "the same seed keeps the promise"

    @property
    def confirmation(self) -> str:
        if self.signature.source != "fuzz":
            return "same program on every build (corpus replay or fixed seed)"
        if not self.replays:
            return "unconfirmed: no reproducer was replayed on the other builds"
        on = lambda b: {r.outcome for r in self.replays if r.build == b}  # noqa: E731
        if not any("breaks it" in on(s.build) for s in self.shown):
            return "unconfirmed: the reproducer did not break the promise again on the build that found it"
        also = [b for b in self.absent_on if "breaks it" in on(b)]
        if also:
            return f"not a divergence: the reproducer breaks it on {', '.join(also)} too (the budget missed it there)"
        unclear = [b for b in self.absent_on if on(b) != {"keeps it"}]
        if unclear:
            return f"partly confirmed: the reproducer could not be replayed cleanly on {', '.join(unclear)}"
        return "confirmed: the reproducer keeps the promise on " + ", ".join(self.absent_on)


def sightings(run: BuildRun) -> dict:
    found = {}
    for r in run.results:
        for f in r.failures:
            found.setdefault(Signature(r.model, f.invariant, "fuzz"),
                             Sighting(run.build.label, f.expected_divergence, f.detail, tuple(f.program),
                                      run.reproducers(r.model, f.invariant)))
    for t in run.tests:
        if t.kind in ("corpus", "seed") and t.outcome in ("failed", "xfailed"):
            held = (run.out_dir / "corpus" / f"{t.param}.json",) if t.kind == "corpus" and run.out_dir else ()
            found[Signature(t.model, t.invariant, f"{t.kind} {t.param}")] = Sighting(
                run.build.label, t.known, _short(t.message, 200), reproducers=held)
    return found


def kept(run: BuildRun, sig: Signature) -> bool:
    """Whether this build ran what shows `sig` elsewhere, and it did not show."""
    if sig.source == "fuzz":
        return any(r.model == sig.model and all(f.invariant != sig.invariant for f in r.failures)
                   for r in run.results)
    kind, param = sig.source.split(" ", 1)
    return any(t.kind == kind and t.param == param and t.outcome in ("passed", "xpassed") for t in run.tests)


def compare(runs) -> tuple:
    """(divergences between releases, reclassified): failures shown on some builds and kept on
    others; and failures every build that ran them shows, but as a known divergence only on some
    (fuzz/checker/divergences.py may need the other versions)."""
    seen: dict = {}
    for run in runs:
        for sig, s in sightings(run).items():
            seen.setdefault(sig, []).append(s)
    rows, reclassified = [], []
    for sig in sorted(seen):
        shown = tuple(seen[sig])
        absent = tuple(run.build.label for run in runs if kept(run, sig))
        if absent:
            guards = tuple(f"{run.build.label}: {g}" for run in runs if run.build.label in absent
                           for r in run.results if r.model == sig.model and sig.source == "fuzz" for g in r.guards)
            rows.append(ReleaseDivergence(sig, shown, absent, guards=guards))
        elif len(shown) > 1 and len({s.known for s in shown}) > 1:
            reclassified.append(ReleaseDivergence(sig, shown, ()))
    return rows, reclassified


def replay_outcome(t: TestOutcome, invariant: str) -> str:
    if t.outcome in ("passed", "xpassed"):
        return "keeps it"
    if t.outcome == "xfailed":
        return "breaks it"
    named = named_invariant(t.message)
    if t.outcome == "failed" and named:
        return "breaks it" if named == invariant else f"breaks {named} instead"
    return f"could not replay: {_short(t.message)}"


def confirm(rows, runs, prepared: dict, opts: Options, out: Path, log=print) -> tuple:
    """Replays the reproducers of fuzz-found divergences on every build. Entries the project's
    corpus already held were replayed by every build's own run; the new ones run here."""
    wanted = {p.stem: (p, row.signature.invariant) for row in rows if row.signature.source == "fuzz"
              for s in row.shown for p in s.reproducers}
    if not wanted:
        return rows, "nothing to replay"
    fresh = {name: p for name, (p, _) in wanted.items() if any(p in run.new_entries for run in runs)}
    replays = []
    if fresh:
        corpus = out / "replay-corpus"
        shutil.rmtree(corpus, ignore_errors=True)
        corpus.mkdir(parents=True)
        for p in fresh.values():
            shutil.copy(p, corpus)
            shutil.copy(p.with_suffix(".py"), corpus)
    for run in runs:
        if run.out_dir is None or run.build not in prepared or not (run.results or run.tests):
            continue
        tests = [t for t in run.tests if t.kind == "corpus" and t.param in wanted and t.param not in fresh]
        if fresh:
            workdir = run.out_dir / "replay"
            workdir.mkdir(exist_ok=True)
            models = sorted({name.split("--")[0] for name in fresh})
            cmd = pytest_command(prepared[run.build].args, workdir, opts, corpus=corpus,
                                 junit=workdir / "junit.xml", replay_only=True, models=models)
            log(f"[{run.build.label}] replaying {len(fresh)} reproducer(s) ...")
            if run_pytest(cmd, workdir, workdir / "pytest.log", opts.timeout_s)[0] is None:
                log(f"[{run.build.label}] the replay timed out")
            tests += [t for t in _read(workdir / "junit.xml", parse_junit) if t.kind == "corpus"]
        replays += [Replay(t.param, run.build.label, replay_outcome(t, wanted[t.param][1])) for t in tests]
    done = [attrs.evolve(row, replays=tuple(r for r in replays if r.entry in
                                            {p.stem for s in row.shown for p in s.reproducers}))
            for row in rows]
    return done, f"replayed {len(wanted)} reproducer(s) on every build"


def format_divergences(rows, reclassified, note: str) -> str:
    if not rows and not reclassified:
        return "Divergences between releases: none."
    text = [f"Divergences between releases ({len(rows)}; reproducers: {note}):"]
    for row in rows:
        sig = row.signature
        text.append(f"* {sig.model} [{sig.invariant or '?'}] from {sig.source}")
        for s in row.shown:
            known = f" (known divergence {s.known})" if s.known else ""
            text.append(f"    shows on {s.build}{known}: {_short(s.detail, 120)}")
            text += [f"      reproducer: {p}" for p in s.reproducers]
        text.append(f"    absent on {', '.join(row.absent_on)}: {row.absence}")
        text += [f"      guard on {g}" for g in row.guards]  # inputs that build's fuzzer never sends
        for r in row.replays:
            text.append(f"    replay of {r.entry} on {r.build}: {r.outcome}")
        text.append(f"    {row.confirmation}")
        program = next((s.program for s in row.shown if s.program), ())
        if program:
            text.append("    shrunk program:")
            text += [f"      {step}" for step in program]
    for row in reclassified:
        sig = row.signature
        how = "; ".join(f"{s.build}: {s.known or 'not a known divergence'}" for s in row.shown)
        text.append(f"* shown on every build, classified differently: {sig.model} [{sig.invariant}] from "
                    f"{sig.source} ({how}); fuzz/checker/divergences.py may need the other Triton versions")
    return "\n".join(text)
