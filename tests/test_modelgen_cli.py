"""CLI choices, skip/error paths for missing backends, and Variant's input checks."""
import subprocess
import sys

import pytest

from modelgen import Variant, implicit_variants, python_variants
from modelgen import __main__ as cli
from modelgen.backends import tensorrt as trt_backend


def _fake_reasons(monkeypatch, **reasons):
    monkeypatch.setattr(cli, "unavailable_reason", lambda backend: reasons.get(backend))


def test_tensorrt_without_gpu_is_a_clear_error(monkeypatch, tmp_path, capsys):
    _fake_reasons(monkeypatch, tensorrt="no CUDA device is visible")
    assert cli.main(["--models-dir", str(tmp_path), "--backend", "tensorrt"]) == 2
    err = capsys.readouterr().err
    assert "cannot write tensorrt models: no CUDA device is visible" in err
    assert not list(tmp_path.iterdir())


def test_all_skips_unavailable_backends_with_reason(monkeypatch, tmp_path, capsys):
    _fake_reasons(monkeypatch, onnx="the onnx package is not installed", tensorflow="tensorflow is not installed",
                  tensorrt="no CUDA device is visible", native="no C compiler on PATH")
    assert cli.main(["--models-dir", str(tmp_path), "--backend", "all", "--dtype", "int32"]) == 0
    err = capsys.readouterr().err
    for line in ("skipping backend onnx: the onnx package is not installed",
                 "skipping backend tensorflow: tensorflow is not installed",
                 "skipping backend tensorrt: no CUDA device is visible",
                 "skipping backend native: no C compiler on PATH"):
        assert line in err
    names = sorted(p.name for p in tmp_path.iterdir())
    python = [n for v in python_variants() for n in v.model_names]
    assert sorted(names) == sorted(python)  # the python set, whole


def test_all_writes_each_available_backend(monkeypatch, tmp_path, capsys):
    pytest.importorskip("onnx", reason="needs onnx to write onnx models (pip install 'triton-seqfuzz[onnx]')")
    _fake_reasons(monkeypatch, tensorflow="tensorflow is not installed", tensorrt="no CUDA device is visible",
                  native="no C compiler on PATH")
    assert cli.main(["--models-dir", str(tmp_path), "--backend", "all", "--dtype", "int32",
                     "--batching", "no-batch", "--strategy", "direct"]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    plain = "onnx_implicit_direct_s1_i1_int32_csr_nb"  # and its implicit-state options:
    assert [n for n in names if not n.startswith("py_")] == [plain, *(f"{plain}_{o}" for o in ("init7", "init7_sb", "sb"))]
    assert sum(n.startswith("py_") for n in names) == len([n for v in python_variants() for n in v.model_names])


def test_onnx_options_select_variants(tmp_path, capsys):
    pytest.importorskip("onnx", reason="needs onnx to write onnx models (pip install 'triton-seqfuzz[onnx]')")
    assert cli.main(["--models_dir", str(tmp_path), "--backend", "onnx", "--dtype", "fp32", "--shape", "2,3",
                     "--batching", "batched", "--strategy", "oldest", "--idle-timeout-us", "1234"]) == 0
    plain = "onnx_implicit_oldest_s4_i1_fp32_cserc_u64_d2x3"
    names = [plain] + [f"{plain}_{o}" for o in ("init7", "sb", "init7_sb")]
    assert capsys.readouterr().out.split() == [str(tmp_path / n) for n in names]
    for n in names:
        assert "max_sequence_idle_microseconds: 1234" in (tmp_path / n / "config.pbtxt").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


@pytest.mark.parametrize("argv, message", [
    (["--dtype", "fp32"], "only for the implicit-state backends (onnx, tensorflow, tensorrt, native)"),
    (["--backend", "onnx", "--shape", "0"], "shape dims must be positive"),
    (["--backend", "onnx", "--shape", "a,b"], "comma-separated positive ints"),
    (["--backend", "onnx", "--dtype", "fp16"], "invalid choice"),
    (["--backend", "onnx", "--only", "nosuchmodel"], "no model name contains"),
])
def test_bad_arguments_are_explained(monkeypatch, tmp_path, capsys, argv, message):
    _fake_reasons(monkeypatch)
    with pytest.raises(SystemExit) as exc:
        cli.main(["--models-dir", str(tmp_path), *argv])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_import_stays_light():
    # The default install must not pay for (or need) any framework just to write python models.
    code = ("import sys, modelgen, modelgen.__main__, modelgen.repository; "
            "print([m for m in ('onnx', 'onnxruntime', 'tensorflow', 'tensorrt') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_implicit_variant_set():
    vs = implicit_variants("onnx")
    # dtype x batching x strategy, then per dtype: initial state from data, single buffer, both
    assert len(vs) == 8 + 2 * 3 and len({v.name for v in vs}) == 14
    options = [(v.dtype, v.initial_sum, v.same_buffer, v.growable) for v in vs[8:]]
    assert options == [(d, *o) for d in ("int32", "fp32") for o in ((7, False, False), (0, True, False), (7, True, False))]
    for v in vs:
        assert v.flavour == "implicit" and v.backend == "onnx"
        assert v.max_batch_size == (4 if v.batching else 0)
        oldest = v.strategy == "oldest"
        assert set(v.controls) == ({"START", "END", "READY", "CORRID"} if oldest else {"START", "READY"})
    assert {v.corrid_type for v in implicit_variants("tensorrt") if "CORRID" in v.controls} == {"int32"}
    # growable memory needs KIND_GPU: TensorRT's last option variant has it; TensorFlow carries
    # no implicit state in Triton, so it gets no options
    assert [v.growable for v in implicit_variants("tensorrt")[8:]] == [False, False, True] * 2
    assert len(implicit_variants("tensorflow")) == 8
    names = {v.name for b in ("onnx", "tensorflow", "tensorrt") for v in implicit_variants(b)}
    assert len(names) == 14 + 8 + 14  # backend prefixes never collide


@pytest.mark.parametrize("kwargs, message", [
    (dict(backend="onnx", flavour="slot"), "only has the 'implicit' flavour"),
    (dict(backend="onnx", shape=(0,)), "positive ints"),
    (dict(flavour="slot", shape=(2,)), "keeps a scalar sum"),
    (dict(backend="onnx", batching=False, slots=4), "needs slots=1"),
    (dict(backend="tensorrt", corrid_type="uint64", controls=("START", "READY", "CORRID")), "does not fit backend"),
    (dict(backend="onnx", corrid_type="string", controls=("START", "READY", "CORRID")), "does not fit backend"),
    (dict(backend="keras"), "backend"),
    (dict(flavour="corrid", controls=("START", "CORRID"), initial_sum=3), "implicit-state options"),
    (dict(backend="onnx", initial_sum=2**21), "initial_sum must be within"),
    (dict(backend="tensorrt", growable=True), "growable needs same_buffer"),
    (dict(backend="onnx", same_buffer=True, growable=True), "KIND_GPU instances only"),
])
def test_variant_rejects_bad_combinations(kwargs, message):
    base = dict(flavour="implicit", strategy="direct", slots=1, instances=1)
    with pytest.raises(ValueError, match=message):
        Variant(**{**base, **kwargs})


@pytest.mark.parametrize("kwargs, message", [
    (dict(dtypes=("fp16",)), "dtype must be"),
    (dict(strategies=()), "strategy must be"),
])
def test_implicit_variants_rejects_bad_choices(kwargs, message):
    with pytest.raises(ValueError, match=message):
        implicit_variants("onnx", **kwargs)
    with pytest.raises(ValueError, match="python_variants"):
        implicit_variants("python")


def test_trt_unavailable_reason_names_what_is_missing(monkeypatch):
    monkeypatch.setattr(trt_backend.importlib.util, "find_spec", lambda name: None)
    assert "tensorrt package is not installed" in trt_backend.unavailable_reason()
    monkeypatch.setattr(trt_backend.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(trt_backend, "cuda_device_count", lambda: 0)
    assert "needs an NVIDIA GPU" in trt_backend.unavailable_reason()
    with pytest.raises(trt_backend.BackendUnavailable, match="needs an NVIDIA GPU"):
        trt_backend.build(implicit_variants("tensorrt")[0])
