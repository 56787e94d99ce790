"""The default (python) repository is what the fuzzer is built against: pin it byte for byte.

tests/golden/python holds the config.pbtxt of every python variant as first generated; a change
to a name or a config field shows up here before it shows up as a confusing fuzz failure.
"""
from pathlib import Path

from modelgen import __main__ as cli
from modelgen import python_variants

GOLDEN = Path(__file__).parent / "golden" / "python"


def test_default_cli_writes_exactly_the_golden_python_repository(tmp_path, capsys):
    assert cli.main(["--models-dir", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.split()
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(p.stem for p in GOLDEN.glob("*.pbtxt"))
    assert sorted(Path(p).name for p in printed) == written
    for name in written:
        assert (tmp_path / name / "config.pbtxt").read_text() == (GOLDEN / f"{name}.pbtxt").read_text(), name
        ensemble = 'platform: "ensemble"' in (GOLDEN / f"{name}.pbtxt").read_text()
        assert sorted(p.name for p in (tmp_path / name / "1").iterdir()) == ([] if ensemble else ["model.py"])
        assert sorted(p.name for p in (tmp_path / name).iterdir()) == ["1", "config.pbtxt"]


def test_python_variant_names_are_stable():
    # An ensemble variant writes two models: the ensemble and its stateful step.
    names = [name for v in python_variants() for name in v.model_names]
    assert sorted(names) == sorted(p.stem for p in GOLDEN.glob("*.pbtxt"))
