"""One build's run: `pytest fuzz/` in a subprocess of its own, bounded by a timeout, in the
build's folder under --out, and what it left (results, test outcomes, new corpus entries)."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import attrs

from .builds import FUZZ_DIR, Build, Prepared, one_line
from .outcomes import _read, parse_fuzz_report, parse_junit

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
    """SIGTERM first: the plugin stops its server on it (fuzz/harness/server.py). Then SIGKILL; the
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
