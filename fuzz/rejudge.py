"""Judges saved histories again, without a server: `python -m fuzz.rejudge [PATH ...]`.

Each PATH is a corpus entry (.json) or a folder of them (default: corpus/). Every entry keeps the
program it ran, what came back and when (fuzz/checker/history.py); the history checker
(fuzz/checker/linearize.py) judges it per sequence as it stands today, and every judge of a step
(invariants.judged: answers_well_formed, and any a conftest.py registered) looks at each step, so a
newer checker can look again at what an older run saw. Exit status: 0 when every judged sequence
is explained and no step breaks a judge's promise, 1 when one does, 2 when an entry cannot be read.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .corpus import CorpusEntry, CorpusError, load
from .checker.divergences import accepted
from .checker.invariants import InvariantViolation, judged
from .checker.history import History, history_of
from .checker.linearize import Verdict, judge


def verdicts(entry: CorpusEntry, history: History) -> list[Verdict]:
    """The history checker's verdicts on an entry's history (taking as built what it took)."""
    return judge(history, entry.spec, carries_state=not accepted(entry.accepts, "carries_no_state"))


def step_findings(entry: CorpusEntry) -> list[tuple[int, InvariantViolation]]:
    """What the judges of single steps find in an entry's steps: (step index, violation)."""
    found = ((s.index, judged(s, entry.spec)) for s in entry.steps)
    return [(i, v) for i, v in found if v is not None]


def summary(entry: CorpusEntry, history: History, found: list[Verdict],
            steps: list[tuple[int, InvariantViolation]] = ()) -> str:
    broken = [v for v in found if v.verdict == "broken"]
    unknown = [v for v in found if v.verdict == "unknown"]
    timed = "" if history.timed else " (no saved times: placed by step order)"
    head = (f"{entry.name}: {len(found)} sequence(s) judged{timed}; {len(broken)} broken, {len(unknown)} unknown; "
            f"{len(steps)} step(s) breaking a judge's promise; the run that saved it found {entry.invariant}")
    return "\n".join([head, *(f"  [{v.invariant}] {v.describe()}" for v in broken),
                      *(f"  [{v.invariant}] step {i}: {v.detail}" for i, v in steps),
                      *(f"  {v.describe()}" for v in unknown)])


def _entries(paths) -> list[Path]:
    files = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(p.glob("*.json"))
        elif p.exists():
            files.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such file or folder")
    return files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz.rejudge", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=["corpus"], help="corpus entries or folders of them")
    args = parser.parse_args(argv)
    try:
        files = _entries(args.paths)
        entries = [load(f) for f in files]
    except (CorpusError, FileNotFoundError) as err:
        print(f"rejudge: {err}", file=sys.stderr)
        return 2
    if not entries:
        print(f"rejudge: no corpus entries in {', '.join(args.paths)}", file=sys.stderr)
        return 2
    any_broken = False
    for entry in entries:
        history = history_of(entry.steps)
        found, steps = verdicts(entry, history), step_findings(entry)
        any_broken |= any(v.verdict == "broken" for v in found) or bool(steps)
        print(summary(entry, history, found, steps))
    return 1 if any_broken else 0


if __name__ == "__main__":
    sys.exit(main())
