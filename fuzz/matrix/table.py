"""The table: a cell per build and model (campaign, corpus replays, seeds, new corpus entries)."""
from __future__ import annotations

import collections

import attrs

from ..campaign import ModelResult
from .outcomes import TestOutcome

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
