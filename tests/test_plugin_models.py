"""Which models `pytest fuzz/ --models-dir DIR` fuzzes: every model folder, but an ensemble's
steps, whose requests come through the ensemble (fuzzed instead: two campaigns on one model would
share its slots). Pure: the configs are read from the folder."""
import pytest

from fuzz.generator.machine import negation, sibling
from fuzz.plugin import _models_in
from modelgen import Variant, write_model


def test_an_ensembles_step_is_fuzzed_through_the_ensemble_only(tmp_path):
    ensemble = Variant("slot", "oldest", 1, 1, "int32", controls=("START", "END", "READY"), ensemble=True)
    alone = Variant("corrid", "direct", 2, 1, controls=("START", "CORRID"))
    for v in (ensemble, alone):
        write_model(v, tmp_path)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.pbtxt").write_text("this is not a config")  # the server says what is wrong
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["broken", alone.name, *ensemble.model_names])
    assert _models_in(tmp_path) == sorted(["broken", alone.name, ensemble.name])


def test_a_folder_with_only_an_ensembles_step_still_has_that_model(tmp_path):
    ensemble = Variant("slot", "oldest", 1, 1, "int32", controls=("START", "END", "READY"), ensemble=True)
    write_model(ensemble, tmp_path)
    (tmp_path / ensemble.name / "config.pbtxt").unlink()  # no ensemble: its step is a model of its own
    assert _models_in(tmp_path) == [ensemble.step_name]
    with pytest.raises(pytest.UsageError, match="holds no model"):
        _models_in(tmp_path / ensemble.name)


def test_siblings_stay_in_the_ids_a_model_tells_apart():
    assert sibling(5, 2**32) == 5 + 2**32 and sibling(5, 2**32, bits=32) is None  # it would be 5 itself
    assert sibling(2**32 - 1, 2**16, bits=32) == 2**16 - 1  # wraps below 2**32
    assert sibling(2**64 - 1, 1) is None and sibling("5", 8) is None  # 0 is no id; strings have none
    assert negation(5) == 2**64 - 5 and negation(5, bits=32) == 2**32 - 5  # k and -k, on the CORRID's width
    assert negation(2**63) is None and negation("5") is None  # its own negation; strings have none
