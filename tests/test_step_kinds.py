"""Every kind of step a program records can be replayed by the fuzzer and played by the
standalone reproducer, and written and read back by the corpus: adding a kind to values.Kind
without its replayer (fuzz/corpus/replay.py, @replays) or its method in the reproducer's runtime
(fuzz/corpus/reproducer_script.py, KINDS) fails here, naming what is missing."""
from fuzz.corpus import reproducer_script
from fuzz.corpus import _step_from_json, _step_to_json
from fuzz.corpus.replay import REPLAYERS, replays
from fuzz.values import Fault, Kind, Request, StepRecord

import pytest


def test_every_kind_replays():
    assert sorted(k.value for k in Kind if k not in REPLAYERS) == []


def test_every_kind_plays_in_the_standalone_reproducer_and_nothing_else_does():
    assert sorted(k.value for k in Kind if k.value not in reproducer_script.KINDS) == []
    assert sorted(set(reproducer_script.KINDS) - {k.value for k in Kind}) == []


def test_a_kind_registers_one_replayer():
    with pytest.raises(ValueError, match="pause steps already replay with _pause"):
        replays(Kind.PAUSE)(lambda *a: None)


@pytest.mark.parametrize("kind", list(Kind), ids=lambda k: k.value)
def test_every_kind_survives_the_corpus_format(kind):
    step = StepRecord(index=3, client=1, action=f"a {kind.value} step", kind=kind,
                      request=Request("m", 7, 2, start=True), via="stream", wait_s=0.25,
                      fault=Fault("reload") if kind is Kind.FAULT else None)
    assert _step_from_json(_step_to_json(step), 3) == step
