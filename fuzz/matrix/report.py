"""The release matrix's JSON report: builds, cells, divergences between releases and replays."""
from __future__ import annotations

import collections
from pathlib import Path

import attrs

from ..campaign import ModelResult
from .run import Options

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
