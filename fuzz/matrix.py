"""`python -m fuzz.matrix`: the release matrix. The same corpus, regression seeds and fuzz budget
against several Triton builds, and a table of build x model: pass, failures by invariant, new
corpus entries; then the failures that show on one build and not on another (divergences between
releases), each with its shrunk program and reproducers; and a JSON report of it all.

    python -m fuzz.matrix --installed --release 0.5.0 --model py_corrid_direct_s1_i1_int32_cserc_u64 --fuzz-budget 20

Each build runs `pytest fuzz/` in a subprocess of its own, bounded by a timeout: its own server
(started and stopped by the plugin), its own Hypothesis database (the subprocess runs in the
build's folder), basetemp, and copy of the corpus, so what one build finds is written beside its
results, not into the project's corpus, and cannot leak into the next build's run. Results come
back through the plugin's JSON report and pytest's junit XML.

A fuzz campaign that did not show a failure only did not see it within its budget. So every
reproducer a build wrote for such a failure is replayed on every build afterwards (test_corpus
over those entries), which makes "passes on the other build" a statement about the same program.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import attrs

import fuzz

from .campaign import ModelResult
from .invariants import INVARIANTS

FUZZ_DIR = Path(fuzz.__file__).resolve().parent
PROJECT_CORPUS = FUZZ_DIR.parent / "corpus"  # there in a checkout; pass --corpus-dir otherwise


class BuildUnavailable(Exception):
    """A build that cannot be run: not installable, or nothing answers at its URL."""


# -- builds ----------------------------------------------------------------------------------------

@attrs.frozen
class Build:
    kind: str  # "release" (an nvidia-pytriton version), "installed" (this environment's), "url"
    name: str  # the nvidia-pytriton version, or the gRPC address
    http_url: str | None = None

    @property
    def label(self) -> str:
        return {"release": f"pytriton {self.name}", "installed": f"pytriton {self.name} (installed)",
                "url": f"url {self.name}"}[self.kind]

    @property
    def slug(self) -> str:
        """Its folder under --out."""
        return re.sub(r"[^A-Za-z0-9.]+", "-", f"{self.kind}-{self.name}")


@attrs.frozen
class Prepared:
    args: tuple  # the pytest options that select this build
    triton_version: str | None  # as far as it is known before running


def installed_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("nvidia-pytriton")
    except metadata.PackageNotFoundError:
        return "not-installed"


def prepare(build: Build, url_timeout: float = 10.0) -> Prepared:
    """Installs a release if needed, or checks that the URL answers. Raises BuildUnavailable."""
    from .releases import TRITON_VERSION, install_release, release_dir
    from .server import ExternalTriton, TritonError, TritonInstall

    try:
        if build.kind == "release":
            install_release(build.name)
            return Prepared(("--triton-install", str(release_dir(build.name))), TRITON_VERSION.get(build.name))
        if build.kind == "installed":
            TritonInstall.find()
            return Prepared((), TRITON_VERSION.get(build.name))
        server = ExternalTriton(build.name, build.http_url, timeout=url_timeout)
        http = ("--triton-http-url", build.http_url) if build.http_url else ()
        return Prepared(("--triton-url", build.name, *http), server.version)
    except TritonError as err:
        raise BuildUnavailable(one_line(str(err))) from None


def one_line(text: str) -> str:
    """First and last lines of a message (pip's errors end with the reason)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) <= 1:
        return lines[0] if lines else ""
    return f"{lines[0].rstrip(':')}: {lines[-1]}"


# -- test outcomes (junit) and campaign results (the fuzz report) -----------------------------------

_KINDS = {"test_corpus": "corpus", "test_seed": "seed", "test_sequence_batcher": "fuzz"}


@attrs.frozen
class TestOutcome:
    kind: str  # "corpus", "seed", "fuzz" or "other"
    param: str  # the corpus entry, the seed case (MODEL-seedN) or the model
    outcome: str  # passed, failed, xfailed, xpassed (a strict xfail that passed), skipped, error
    message: str = ""

    @property
    def model(self) -> str:
        if self.kind == "corpus":
            return self.param.split("--")[0]  # entry names are MODEL--INVARIANT--DIGEST
        if self.kind == "seed":
            return self.param.rsplit("-seed", 1)[0]
        return self.param

    @property
    def invariant(self) -> str:
        """The promise it is about: a corpus entry's recorded one, else the one its failure names."""
        parts = self.param.split("--")
        if self.kind == "corpus" and len(parts) == 3 and parts[1] in INVARIANTS:
            return parts[1]
        return named_invariant(self.message)

    @property
    def known(self) -> str | None:
        """The known divergence an expected failure is (test_corpus's xfail reason names it)."""
        m = re.search(r"known divergence (\S+) on Triton", self.message) if self.outcome == "xfailed" else None
        return m.group(1) if m else None


def named_invariant(message: str) -> str:
    """The invariant an InvariantViolation's message starts with ("[sums_match] ..."), or ""."""
    return next((m for m in re.findall(r"\[(\w+)\]", message) if m in INVARIANTS), "")


def parse_junit(xml_text: str) -> tuple:
    """TestOutcomes of a pytest --junitxml file's text."""
    out = []
    for case in ET.fromstring(xml_text).iter("testcase"):
        m = re.fullmatch(r"(\w+)\[(.*)\]", case.get("name", ""), re.S)
        func, param = (m.group(1), m.group(2)) if m else (case.get("name", ""), "")
        failure, error, skipped = case.find("failure"), case.find("error"), case.find("skipped")
        if failure is not None:
            message = failure.get("message", "")
            outcome = "xpassed" if message.startswith("[XPASS(strict)]") else "failed"
        elif error is not None:
            outcome, message = "error", error.get("message", "")
        elif skipped is not None:
            message = skipped.get("message", "")
            outcome = "xfailed" if skipped.get("type") == "pytest.xfail" else "skipped"
        else:
            outcome, message = "passed", ""
        if param == "NOTSET" and outcome == "skipped":
            continue  # the placeholder of an empty parameter set (no corpus entry for --model)
        out.append(TestOutcome(_KINDS.get(func, "other"), param, outcome, message))
    return tuple(out)


def parse_fuzz_report(text: str) -> tuple:
    """ModelResults of the plugin's --fuzz-report JSON."""
    return tuple(ModelResult.from_json(d) for d in json.loads(text)["models"])


def _read(path: Path, parse) -> tuple:
    try:
        return parse(path.read_text())
    except (OSError, ValueError, KeyError, ET.ParseError):
        return ()  # not written (killed, or nothing ran): the build's status says why


# -- one build's run --------------------------------------------------------------------------------

@attrs.frozen
class Options:
    models: tuple = ()  # empty: every model of the repository
    budget_s: float | None = None
    profile: str | None = None
    corpus_dir: Path | None = None  # the corpus every build starts from
    models_dir: Path | None = None
    timeout_s: float = 1800.0  # per build


@attrs.frozen
class BuildRun:
    build: Build
    status: str  # ok, failures (some test failed), unavailable, timeout, crashed (exit N)
    message: str = ""
    triton_version: str | None = None
    wall_s: float = 0.0
    out_dir: Path | None = None
    results: tuple = ()  # ModelResult per fuzzed model
    tests: tuple = ()  # TestOutcome per test
    new_entries: tuple = ()  # corpus files (NAME.json) this build wrote

    def reproducers(self, model: str, invariant: str) -> tuple:
        """Corpus files of this build holding a failure: its new ones first, then older ones."""
        if self.out_dir is None:
            return ()
        held = sorted((self.out_dir / "corpus").glob(f"{model}--{invariant}--*.json"))
        return tuple(sorted(held, key=lambda p: p not in self.new_entries))


def pytest_command(build_args, workdir: Path, opts: Options, *, corpus: Path, junit: Path,
                   report: Path | None = None, replay_only: bool = False, models=None) -> list:
    models = opts.models if models is None else models
    cmd = [sys.executable, "-m", "pytest", str(FUZZ_DIR), "-p", "no:cacheprovider",
           # fuzz/ alone is collected: tests/conftest.py (the project's session guard) stays out
           "--rootdir", str(FUZZ_DIR.parent), "--basetemp", str(workdir / "tmp"),
           "-o", f"timeout={opts.timeout_s:.0f}",  # pytest-timeout's per-test bound, not below ours
           "--junitxml", str(junit), "--corpus-dir", str(corpus), *build_args]
    cmd += [a for m in models for a in ("--model", m)]
    if opts.models_dir and "--triton-url" not in build_args:
        cmd += ["--models-dir", str(opts.models_dir)]
    if opts.profile:
        cmd += ["--hypothesis-profile", opts.profile]
    if replay_only:
        cmd += ["-k", "test_corpus", "--no-corpus-write"]
    else:
        cmd += ["--fuzz-report", str(report)]
        if opts.budget_s:
            cmd += ["--fuzz-budget", str(opts.budget_s)]
    return cmd


def run_pytest(cmd, workdir: Path, log: Path, timeout: float) -> tuple:
    """Runs it in its own session with output to `log`. Returns its exit status (None when it
    ran past `timeout`) and the pids of processes it left behind, which were killed."""
    env = dict(os.environ)
    # The subprocess imports the same fuzz package as this process, wherever that lives.
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(FUZZ_DIR.parent), env.get("PYTHONPATH")] if p)
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        rc = None
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        finally:
            if proc.poll() is None:  # timed out, or this process was interrupted
                _stop(proc)
            left = _kill_leftovers(workdir / "tmp")
    return rc, left


def _stop(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """SIGTERM first: the plugin stops its server on it (fuzz/server.py). Then SIGKILL; the
    server's parent-death signal takes it down with pytest."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _kill_leftovers(basetemp: Path) -> list:
    """Kills any process still running from this build's basetemp (a server's backend folder
    and working files are there), which only this build's run can have started."""
    mark = str(basetemp.resolve()).encode()
    killed = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if mark in (proc / "cmdline").read_bytes() and int(proc.name) != os.getpid():
                os.kill(int(proc.name), signal.SIGKILL)
                killed.append(int(proc.name))
        except (OSError, ValueError):
            pass
    return killed


def run_build(build: Build, prepared: Prepared, opts: Options, out: Path) -> BuildRun:
    workdir = (out / build.slug).resolve()
    if workdir.exists():
        shutil.rmtree(workdir)
    corpus = workdir / "corpus"
    if opts.corpus_dir and Path(opts.corpus_dir).is_dir():
        shutil.copytree(opts.corpus_dir, corpus)  # the same corpus, replayed and written per build
    else:
        corpus.mkdir(parents=True)
    before = set(corpus.glob("*.json"))
    report, junit, log = workdir / "fuzz.json", workdir / "junit.xml", workdir / "pytest.log"
    cmd = pytest_command(prepared.args, workdir, opts, corpus=corpus, junit=junit, report=report)
    started = time.monotonic()
    rc, left = run_pytest(cmd, workdir, log, opts.timeout_s)
    wall = time.monotonic() - started
    results = _read(report, parse_fuzz_report)
    tests = _read(junit, parse_junit)
    if rc is None:
        status, message = "timeout", f"still running after {opts.timeout_s:.0f} s; stopped (log {log})"
    elif rc in (0, 1):
        status, message = ("ok", "") if rc == 0 else ("failures", "")
        errors = [t for t in tests if t.outcome == "error"]
        if errors and len(errors) == len(tests):
            message = one_line(errors[0].message)  # e.g. the server did not start
    else:
        status, message = f"crashed (exit {rc})", f"pytest exit status {rc}: {_tail(log)}"
    if left:
        message = f"{message}; " if message else ""
        message += f"killed {len(left)} process(es) it left behind: {left}"
    version = results[0].triton_version if results else prepared.triton_version
    return BuildRun(build, status, message, version, round(wall, 1), workdir, results, tests,
                    tuple(sorted(set(corpus.glob("*.json")) - before)))


def _tail(log: Path) -> str:
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no log)"
    # The exception that ended it, where there is one (an INTERNALERROR, a usage error).
    errors = [ln for ln in lines if re.match(r"(INTERNALERROR> |ERROR: )?[\w.]*(Error|Exception)\b", ln)]
    return (errors or lines or ["(empty log)"])[-1]


# -- the table ---------------------------------------------------------------------------------------

@attrs.frozen
class Cell:
    """One build x model."""
    model: str
    build: str
    triton_version: str
    fuzz: str  # pass, FAIL <invariants>, expected divergence (<keys>), pass, not seen: <keys>, ERROR, not run
    corpus: tuple  # outcomes of the model's corpus replays
    seeds: tuple  # outcomes of its regression seeds
    new_entries: int  # corpus files the build wrote for it
    result: ModelResult | None = attrs.field(default=None, repr=False, eq=False)


def fuzz_text(result: ModelResult | None, test: TestOutcome | None) -> str:
    if result is None:
        if test is None:
            return "not run"
        return f"ERROR {_short(test.message)}" if test.outcome in ("failed", "error") else test.outcome
    parts = []
    unknown = sorted({f.invariant for f in result.failures if f.expected_divergence is None})
    known = sorted({f.expected_divergence for f in result.failures if f.expected_divergence})
    if unknown:
        parts.append("FAIL " + ", ".join(unknown))
    if known:
        parts.append(f"expected divergence ({', '.join(known)})")
    if result.unexpected_pass and not result.failures:
        # Not evidence of a fix (the budget may have missed it): the corpus column says.
        parts.append(f"pass, not seen: {', '.join(result.unexpected_pass)}")
    return "; ".join(parts) or "pass"


def _short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


_TALLY = {"passed": "ok", "failed": "FAILED", "xfailed": "xfail", "xpassed": "XPASS", "skipped": "skipped",
          "error": "ERROR"}


def tally(outcomes) -> str:
    counts = collections.Counter(outcomes)
    return ", ".join(f"{counts[k]} {label}" for k, label in _TALLY.items() if counts[k]) or "-"


def cells(runs) -> list:
    """A cell per build and model that any build ran (so a model missing on one build shows)."""
    ran = [r for r in runs if r.results or r.tests]
    models = sorted({r.model for run in ran for r in run.results} | {t.model for run in ran for t in run.tests
                                                                      if t.kind != "other"})
    out = []
    for model in models:
        for run in ran:
            result = next((r for r in run.results if r.model == model), None)
            test = next((t for t in run.tests if t.kind == "fuzz" and t.model == model), None)
            of = lambda kind: tuple(t.outcome for t in run.tests if t.kind == kind and t.model == model)  # noqa: E731
            out.append(Cell(model, run.build.label, run.triton_version or "?", fuzz_text(result, test),
                            of("corpus"), of("seed"), sum(p.name.startswith(model + "--") for p in run.new_entries),
                            result))
    return out


def format_table(cells_, runs) -> str:
    head = ("model", "build", "Triton", "fuzz", "examples", "s", "corpus", "seeds", "new")
    rows = [(c.model, c.build, c.triton_version, c.fuzz, str(c.result.examples) if c.result else "-",
             f"{c.result.wall_s:.0f}" if c.result else "-", tally(c.corpus), tally(c.seeds), str(c.new_entries))
            for c in cells_]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    line = lambda r: "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip()  # noqa: E731
    text = [line(head), line(["-" * w for w in widths])] if rows else ["No build ran."]
    last = None
    for r in rows:
        if last is not None and r[0] != last:
            text.append("")
        text.append(line(r))
        last = r[0]
    for run in runs:
        if run.status not in ("ok", "failures") or run.message:
            text.append(f"build {run.build.label}: {run.status}" + (f": {run.message}" if run.message else ""))
    return "\n".join(text)


# -- divergences between releases ----------------------------------------------------------------------

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
    known: str | None = None  # the known divergence of that build it is (fuzz/divergences.py)
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
    (fuzz/divergences.py may need the other versions)."""
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
                    f"{sig.source} ({how}); fuzz/divergences.py may need the other Triton versions")
    return "\n".join(text)


# -- JSON ---------------------------------------------------------------------------------------------

def _plain(value):
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, ModelResult):
        return value.to_json()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def report_json(runs, cells_, rows, reclassified, note: str, opts: Options) -> dict:
    def build_json(run):
        d = {"label": run.build.label, **attrs.asdict(run.build), "slug": run.build.slug,
             "triton_version": run.triton_version, "status": run.status, "message": run.message,
             "wall_s": run.wall_s, "out_dir": run.out_dir, "new_corpus_entries": run.new_entries}
        if run.out_dir:
            d.update(fuzz_report=run.out_dir / "fuzz.json", junit=run.out_dir / "junit.xml",
                     log=run.out_dir / "pytest.log", corpus_dir=run.out_dir / "corpus")
        return d

    def cell_json(c):
        return {"model": c.model, "build": c.build, "triton_version": c.triton_version, "fuzz": c.fuzz,
                "corpus": dict(collections.Counter(c.corpus)), "seeds": dict(collections.Counter(c.seeds)),
                "new_corpus_entries": c.new_entries, "fuzz_result": c.result}

    def row_json(row):
        return {**attrs.asdict(row.signature), "shown_on": [attrs.asdict(s) for s in row.shown],
                "absent_on": row.absent_on, "absence_means": row.absence, "guards_where_absent": row.guards,
                "replays": [attrs.asdict(r) for r in row.replays], "confirmation": row.confirmation}

    return _plain({
        "options": {"models": opts.models, "fuzz_budget_s": opts.budget_s, "hypothesis_profile": opts.profile,
                    "corpus_dir": opts.corpus_dir, "timeout_s": opts.timeout_s},
        "builds": [build_json(r) for r in runs],
        "cells": [cell_json(c) for c in cells_],
        "divergences_between_releases": [row_json(r) for r in rows],
        "classified_differently": [row_json(r) for r in reclassified],
        "replay": note,
    })


# -- command line -------------------------------------------------------------------------------------

def _url_build(text: str) -> Build:
    grpc, _, http = text.partition(",")
    return Build("url", grpc, http or None)


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m fuzz.matrix", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    builds = p.add_argument_group("builds (in the order given; at least one)")
    builds.add_argument("--release", dest="builds", action="append", metavar="VERSION",
                        type=lambda v: Build("release", v),
                        help="an nvidia-pytriton release, installed side by side on first use (fuzz/releases.py)")
    builds.add_argument("--installed", dest="builds", action="append_const", const=None,
                        help="the nvidia-pytriton installed in this environment")
    builds.add_argument("--url", dest="builds", action="append", metavar="HOST:PORT[,HTTPHOST:PORT]",
                        type=_url_build, help="an external Triton: its gRPC address, and its HTTP one if any")
    p.add_argument("--model", action="append", default=[], metavar="NAME",
                   help="fuzz this model (repeatable); default: every model of the repository")
    p.add_argument("--fuzz-budget", type=float, metavar="SECONDS", help="per model and build")
    p.add_argument("--hypothesis-profile", metavar="NAME", help="ci, dev or long (default: the plugin's)")
    p.add_argument("--corpus-dir", type=Path, metavar="DIR",
                   help=f"the corpus every build replays and starts from (default: {PROJECT_CORPUS})")
    p.add_argument("--models-dir", type=Path, metavar="DIR",
                   help="model repository for embedded builds (default: generated with the named models)")
    p.add_argument("--out", type=Path, default=Path("reports/matrix"), metavar="DIR",
                   help="per-build reports, logs and corpora (default: reports/matrix)")
    p.add_argument("--json", type=Path, metavar="PATH", help="the merged JSON report (default: OUT/matrix.json)")
    p.add_argument("--build-timeout", type=float, metavar="SECONDS",
                   help="stop a build's run after this long (default: 600 s plus 3 x budget + 120 s per model)")
    p.add_argument("--no-replay", dest="replay", action="store_false",
                   help="do not replay new reproducers on the other builds")
    args = p.parse_args(argv)
    if not args.builds:
        p.error("name at least one build: --release VERSION, --installed or --url HOST:PORT")
    args.builds = [b or Build("installed", installed_version()) for b in args.builds]
    slugs = [b.slug for b in args.builds]
    if len(set(slugs)) != len(slugs):
        p.error(f"a build is named twice: {', '.join(b.label for b in args.builds)}")
    if args.fuzz_budget is not None and args.fuzz_budget <= 0:
        p.error("--fuzz-budget must be a positive number of seconds")
    return args


def _models_dir(models, out: Path) -> Path | None:
    """A repository with just the named models, when modelgen makes them all: a server with
    fewer Python stubs starts faster and leaves more CPU to the fuzzer."""
    from modelgen import python_variants, write_repository

    chosen = [v for v in python_variants() if v.name in models]
    if not models or len(chosen) != len(set(models)):
        return None
    target = out / "models"
    shutil.rmtree(target, ignore_errors=True)
    write_repository(chosen, target)
    return target.resolve()


def main(argv=None) -> int:
    args = parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    n_models = len(args.model) or 12
    timeout = args.build_timeout or 600 + n_models * (3 * (args.fuzz_budget or 60) + 120)
    corpus = args.corpus_dir or (PROJECT_CORPUS if PROJECT_CORPUS.is_dir() else None)
    opts = Options(tuple(args.model), args.fuzz_budget, args.hypothesis_profile,
                   corpus.resolve() if corpus else None,
                   args.models_dir.resolve() if args.models_dir else _models_dir(args.model, out), timeout)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731  (the table goes to stdout)
    if corpus is None:
        log(f"no corpus at {PROJECT_CORPUS}: the builds start from an empty one (--corpus-dir DIR to give one)")
    runs, prepared = [], {}
    for build in args.builds:
        log(f"[{build.label}] preparing ...")
        try:
            prepared[build] = prepare(build)
        except BuildUnavailable as err:
            log(f"[{build.label}] unavailable: {err}")
            runs.append(BuildRun(build, "unavailable", str(err)))
            continue
        log(f"[{build.label}] running pytest fuzz/ (at most {timeout:.0f} s; log {out / build.slug / 'pytest.log'})")
        run = run_build(build, prepared[build], opts, out)
        log(f"[{build.label}] {run.status} in {run.wall_s:.0f} s, Triton {run.triton_version or '?'}"
            + (f": {run.message}" if run.message else ""))
        runs.append(run)
    rows, reclassified = compare(runs)
    note = "not replayed (--no-replay): absence in a fuzz campaign only means not seen within the budget"
    if args.replay:
        rows, note = confirm(rows, runs, prepared, opts, out, log)
    table = cells(runs)
    print(format_table(table, runs))
    print()
    print(format_divergences(rows, reclassified, note))
    target = args.json or out / "matrix.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(report_json(runs, table, rows, reclassified, note, opts), indent=2))
    print(f"\nJSON report: {target}")
    return 0 if runs and all(r.status == "ok" for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
