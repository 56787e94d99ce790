"""Every kind of step a program records can be replayed by the fuzzer and played by the
standalone reproducer, and written and read back by the corpus: adding a kind to values.Kind
without its replay (fuzz/steps.py's @replays, where its family sends it, or fuzz/corpus/replay.py for the
core kinds) or its play (@plays, beside it) fails here, naming what is missing."""
import ast
import builtins

from fuzz import steps
from fuzz.corpus import _step_from_json, _step_to_json
from fuzz.corpus.replay import REPLAYERS
from fuzz.corpus.reproducer import runtime
from fuzz.values import Fault, Kind, Request, StepRecord

import pytest


def _played_by_the_runtime() -> dict:
    """The runtime's KINDS table once the families' plays are in: run as the reproducer runs it."""
    scope = {"__name__": "seqfuzz_replay"}
    exec(compile(runtime(), "seqfuzz_replay.py", "exec"), scope)
    return scope["KINDS"]


def test_every_kind_replays():
    assert sorted(k.value for k in Kind if k not in REPLAYERS) == []


def test_every_kind_plays_in_the_standalone_reproducer_and_nothing_else_does():
    played = _played_by_the_runtime()
    assert sorted(k.value for k in Kind if k.value not in played) == []
    assert sorted(set(played) - {k.value for k in Kind}) == []


def test_a_family_kind_is_played_by_its_registered_function_and_waits_its_own_wait():
    played = _played_by_the_runtime()
    for kind, fn in steps.PLAYS.items():
        assert played[kind.value].__name__ == fn.__name__
    assert Kind.CANCEL_STREAM in steps.OWN_WAIT


def test_the_copied_plays_use_nothing_but_the_runtime():
    # A play may use its player, its step, and the runtime's own names: copied alone, it must not
    # lean on a name of the module it was written in (the runtime would fail at that step).
    source = steps.spliced()
    tree = ast.parse(source)
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    scope = {"__name__": "seqfuzz_replay"}
    exec(compile(runtime(), "seqfuzz_replay.py", "exec"), scope)
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        names = [n for n in ast.walk(fn) if isinstance(n, ast.Name)]
        local = {n.arg for n in ast.walk(fn) if isinstance(n, ast.arg)} | {n.id for n in names if isinstance(n.ctx, ast.Store)}
        missing = {n.id for n in names if isinstance(n.ctx, ast.Load)} - local - defined - set(scope) - set(dir(builtins))
        assert not missing, f"{fn.name} uses {sorted(missing)}, which the runtime does not have"


def test_a_kind_registers_one_replayer_and_one_play():
    with pytest.raises(ValueError, match="pause steps already replay with _pause"):
        steps.replays(Kind.PAUSE)(lambda *a: None)
    with pytest.raises(ValueError, match="behind steps already play with play_behind"):
        steps.plays(Kind.BEHIND)(lambda *a: None)


@pytest.mark.parametrize("kind", list(Kind), ids=lambda k: k.value)
def test_every_kind_survives_the_corpus_format(kind):
    step = StepRecord(index=3, client=1, action=f"a {kind.value} step", kind=kind,
                      request=Request("m", 7, 2, start=True), via="stream", wait_s=0.25,
                      fault=Fault("reload") if kind is Kind.FAULT else None)
    assert _step_from_json(_step_to_json(step), 3) == step


def test_the_traits_of_the_kinds_hold_together():
    # A kind answers a send that is answered later; every later send is answered by a kind of its
    # own or judged with its group (a request behind a cancel has no answer of its own); a group has
    # last steps (else shrinking joins two of its groups into one unit).
    for kind in Kind:
        t = kind.traits
        if t.answers:
            assert Kind(t.answers).traits.later, kind
        if t.later:
            assert any(k.traits.answers == kind.value for k in Kind) or t.group, f"nothing answers a {kind.value} step"
        if t.ends_group or t.in_runs:
            assert t.group, kind
    for group in {k.traits.group for k in Kind} - {""}:
        assert any(k.traits.group == group and k.traits.ends_group for k in Kind), group
