"""modelgen without a server: configs, names, validation, the command line."""
import pytest
from tritonclient.grpc import model_config_pb2 as mc

import modelgen
from modelgen import Variant, model_config, parse, python_variants, render
from modelgen.__main__ import main


@pytest.mark.parametrize("variant", python_variants(), ids=lambda v: v.name)
def test_rendered_config_parses_back_to_the_same_message(variant):
    cfg = model_config(variant)
    assert parse(render(cfg)) == cfg
    assert cfg.name == variant.name


def test_variant_set_covers_every_dimension():
    vs = python_variants()
    assert len({v.name for v in vs}) == len(vs), "model names must be unique"
    assert {v.flavour for v in vs} == {"corrid", "slot", "implicit"}
    assert {v.strategy for v in vs} == {"direct", "oldest"}
    assert {v.slots for v in vs} == {1, 2, 4}
    assert {v.instances for v in vs} == {1, 2}
    assert {v.dtype for v in vs} == {"int32", "fp32", "fp16", "int16", "uint8"}
    assert {v.corrid_type for v in vs if "CORRID" in v.controls} == {"uint64", "string", "int32", "uint32", "int64"}
    assert any(v.bool_controls for v in vs) and any(v.ensemble for v in vs) and any(v.decoupled for v in vs)
    assert any(v.iterations for v in vs)
    assert any(not v.batching for v in vs)
    assert any("END" in v.controls for v in vs) and any("END" not in v.controls for v in vs)
    for flavour in ("corrid", "slot", "implicit"):
        assert {v.strategy for v in vs if v.flavour == flavour} == {"direct", "oldest"}


def test_config_carries_the_batcher_settings():
    v = Variant("corrid", "oldest", 4, 2, "fp32", "string", ("START", "END", "READY", "CORRID"), idle_us=123_000)
    cfg = model_config(v)
    sb = cfg.sequence_batching
    assert cfg.max_batch_size == 4 and sb.oldest.max_candidate_sequences == 4
    assert sb.max_sequence_idle_microseconds == 123_000
    assert cfg.instance_group[0].count == 2
    kinds = {c.name: c.control[0] for c in sb.control_input}
    assert kinds["CORRID"].data_type == mc.TYPE_STRING
    assert kinds["START"].kind == mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_START
    assert list(kinds["END"].int32_false_true) == [0, 1]
    assert cfg.input[0].data_type == cfg.output[0].data_type == mc.TYPE_FP32


def test_implicit_flavour_declares_state_with_zero_initial_value():
    cfg = model_config(Variant("implicit", "direct", 2, 1, "int32"))
    (state,) = cfg.sequence_batching.state
    assert (state.input_name, state.output_name) == ("INPUT_STATE", "OUTPUT_STATE")
    assert state.initial_state[0].zero_data and state.data_type == mc.TYPE_INT32
    assert not model_config(Variant("corrid", "direct", 2, 1, controls=("START", "CORRID"))).sequence_batching.state


def test_implicit_state_options_in_the_config_and_the_data_file(tmp_path):
    import numpy as np

    v = Variant("implicit", "oldest", 4, 1, "fp32", "uint64", ("START", "END", "READY", "CORRID"),
                backend="onnx", shape=(2, 3), initial_sum=-7, same_buffer=True)
    assert v.name.endswith("_initm7_sb") and not v.resets_on_start
    cfg = model_config(v)
    assert parse(render(cfg)) == cfg
    (state,) = cfg.sequence_batching.state
    (init,) = state.initial_state
    assert (init.data_file, init.data_type, list(init.dims)) == ("initial_sum", mc.TYPE_FP32, [2, 3])
    assert not init.HasField("zero_data")
    assert state.use_same_buffer_for_input_output and not state.use_growable_memory
    assert cfg.parameters["INITIAL_SUM"].string_value == "-7"
    # Triton reads the file from <model folder>/initial_state/ as raw row-major elements.
    pytest.importorskip("onnx")
    folder = modelgen.write_model(v, tmp_path)
    data = np.frombuffer((folder / "initial_state" / "initial_sum").read_bytes(), "<f4")
    assert data.tolist() == [-7.0] * 6
    grow = model_config(Variant("implicit", "direct", 4, 1, "int32", backend="tensorrt", same_buffer=True, growable=True))
    assert grow.sequence_batching.state[0].use_growable_memory
    assert grow.instance_group[0].kind == mc.ModelInstanceGroup.KIND_GPU
    # the default stays as before: zero_data, two buffers, no parameter
    plain = model_config(Variant("implicit", "direct", 2, 1, "int32", backend="onnx"))
    assert "INITIAL_SUM" not in plain.parameters
    assert not plain.sequence_batching.state[0].use_same_buffer_for_input_output


def test_bool_controls_and_every_corrid_type():
    full = ("START", "END", "READY", "CORRID")
    cfg = model_config(Variant("corrid", "direct", 2, 1, "int32", "int32", full, bool_controls=True))
    controls = {c.name: c.control[0] for c in cfg.sequence_batching.control_input}
    for name in ("START", "END", "READY"):
        assert list(controls[name].bool_false_true) == [False, True] and not controls[name].int32_false_true
    assert controls["CORRID"].data_type == mc.TYPE_INT32 and not controls["CORRID"].bool_false_true
    for corrid_type, dtype, suffix in (("uint32", mc.TYPE_UINT32, "_u32"), ("int64", mc.TYPE_INT64, "_i64")):
        v = Variant("corrid", "oldest", 2, 1, "int32", corrid_type, full)
        assert v.name.endswith(suffix)
        assert {c.name: c.control[0] for c in model_config(v).sequence_batching.control_input}["CORRID"].data_type \
            == dtype


def test_an_ensemble_variant_is_an_ensemble_over_its_stateful_step():
    from modelgen.config import configs
    from modelgen.variants import EXECUTION_OUTPUT, LIVE_ROWS_OUTPUT, ROW_OUTPUT

    v = Variant("slot", "oldest", 1, 1, "int32", controls=("START", "END", "READY"), ensemble=True)
    ensemble, step = configs(v).values()
    assert v.model_names == (v.name, v.step_name) and v.name.endswith("_ens")
    assert ensemble.platform == "ensemble" and not ensemble.HasField("sequence_batching")
    (one,) = ensemble.ensemble_scheduling.step
    assert (one.model_name, dict(one.input_map), dict(one.output_map)) == \
        (step.name, {"INPUT": "INPUT"}, {"OUTPUT": "OUTPUT", LIVE_ROWS_OUTPUT: LIVE_ROWS_OUTPUT, ROW_OUTPUT: ROW_OUTPUT,
                                                   EXECUTION_OUTPUT: EXECUTION_OUTPUT})
    # an ensemble may not take larger batches than its step
    assert ensemble.max_batch_size == step.max_batch_size and step.HasField("sequence_batching")
    assert parse(render(ensemble)) == ensemble


def test_a_split_variant_is_an_ensemble_of_a_decoupled_front_and_its_stateful_step():
    from modelgen import split_variants
    from modelgen.config import configs

    v = split_variants()[0]
    ensemble, front, step = configs(v).values()
    assert v.model_names == (v.name, v.split_name, v.step_name) and v.name.endswith("_ens_split2")
    first, second = ensemble.ensemble_scheduling.step
    assert (first.model_name, dict(first.input_map), dict(first.output_map)) == \
        (v.split_name, {"INPUT": "INPUT"}, {"CHUNK": "chunk"})
    assert second.model_name == step.name and dict(second.input_map) == {"INPUT": "chunk"}
    assert front.model_transaction_policy.decoupled and front.parameters["CHUNKS"].string_value == "2"
    assert not front.HasField("sequence_batching") and step.HasField("sequence_batching")
    assert ensemble.max_batch_size == front.max_batch_size == step.max_batch_size == 0
    assert parse(render(ensemble)) == ensemble


def test_a_decoupled_variant_says_so_in_its_config():
    v = Variant("corrid", "direct", 2, 1, controls=("START", "CORRID"), decoupled=True)
    assert model_config(v).model_transaction_policy.decoupled and v.name.endswith("_dec")
    assert not model_config(Variant("corrid", "direct", 2, 1, controls=("START", "CORRID"))).HasField(
        "model_transaction_policy")


def test_an_iterative_variant_is_a_decoupled_iterative_sequence_that_needs_2_40(tmp_path):
    from modelgen import write_model

    v = Variant("corrid", "direct", 2, 1, controls=("START", "CORRID"), decoupled=True, iterations=3)
    cfg = model_config(v)
    assert cfg.sequence_batching.iterative_sequence and cfg.parameters["ITERATIONS"].string_value == "3"
    assert v.name.endswith("_dec_iter3") and v.min_triton == (2, 40)
    plain = Variant("corrid", "direct", 2, 1, controls=("START", "CORRID"), decoupled=True)
    assert not model_config(plain).sequence_batching.iterative_sequence and plain.min_triton == (0,)
    text = (write_model(v, tmp_path) / "1" / "model.py").read_text()
    assert "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE" in text


def test_an_older_builds_repository_leaves_out_what_it_cannot_load(tmp_path):
    """--triton-install of a 2.39 release: the iterative model would stop the whole server."""
    from fuzz.harness.releases import triton_version_of

    def install(version):
        root = tmp_path / version
        (root / f"nvidia_pytriton-{version}.dist-info").mkdir(parents=True)
        (root / f"nvidia_pytriton-{version}.dist-info" / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: nvidia-pytriton\nVersion: {version}\n")
        return root

    from modelgen import loadable_on

    assert triton_version_of(install("0.4.2")) == "2.39.0" and triton_version_of(install("0.5.0")) == "2.41.0"
    assert triton_version_of(tmp_path / "empty") is None
    everything = python_variants()
    on_2_39 = loadable_on(everything, "2.39.0")
    assert [v for v in everything if v not in on_2_39] == [v for v in everything if v.iterations] != []
    assert loadable_on(everything, "2.41.0") == everything == loadable_on(everything, None)


@pytest.mark.parametrize("kwargs, message", [
    (dict(flavour="corrid", strategy="direct", slots=2, instances=1, controls=("START", "CORRID"), iterations=3),
     "iterations"),
    (dict(flavour="corrid", strategy="direct", slots=2, instances=1, controls=("START", "CORRID"), decoupled=True,
          iterations=1), "iterations"),
    (dict(flavour="slot", strategy="direct", slots=2, instances=1, decoupled=True, iterations=3), "iterations"),
    (dict(flavour="corrid", strategy="direct", slots=1, instances=1, controls=("START",)), "needs control"),
    (dict(flavour="slot", strategy="oldest", slots=2, instances=1), "needs slots=1"),
    (dict(flavour="slot", strategy="direct", slots=3, instances=1), "slots"),
    (dict(flavour="slot", strategy="direct", slots=1, instances=1, controls=("START", "READY", "BOGUS")), "unknown control"),
    (dict(flavour="slot", strategy="direct", slots=1, instances=1, idle_us=0), "idle_us"),
    (dict(flavour="implicit", strategy="direct", slots=1, instances=1, backend="onnx", ensemble=True), "ensemble"),
    (dict(flavour="corrid", strategy="oldest", slots=2, instances=1, controls=("START", "CORRID"), chunks=2), "chunks"),
    (dict(flavour="corrid", strategy="oldest", slots=2, instances=1, controls=("START", "CORRID"), chunks=2,
          ensemble=True), "chunks"),
    (dict(flavour="implicit", strategy="direct", slots=1, instances=1, backend="onnx", decoupled=True), "decoupled"),
    (dict(flavour="implicit", strategy="direct", slots=1, instances=1, backend="onnx", bool_controls=True),
     "bool_controls"),
])
def test_invalid_variants_are_refused_with_a_reason(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Variant(**kwargs)


def test_cli_writes_every_model_atomically(tmp_path, capsys):
    assert main(["--models_dir", str(tmp_path), "--idle-timeout-us", "250000"]) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    # no staging folders left; an ensemble variant writes its step beside it
    assert written == sorted(name for v in python_variants() for name in v.model_names)
    for name in written:
        cfg = parse((tmp_path / name / "config.pbtxt").read_text())
        if cfg.platform == "ensemble":
            assert list(cfg.ensemble_scheduling.step)[0].model_name in written
            continue
        assert cfg.sequence_batching.max_sequence_idle_microseconds == 250000
        assert (tmp_path / name / "1" / "model.py").is_file()


def test_cli_only_filter_and_bad_arguments(tmp_path, capsys):
    assert main(["--models-dir", str(tmp_path), "--only", "slot_oldest_s1_i2"]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["py_slot_oldest_s1_i2_int32_csr"]
    with pytest.raises(SystemExit):
        main(["--models-dir", str(tmp_path), "--only", "no-such-model"])
    assert "no model name contains" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--models-dir", str(tmp_path), "--idle-timeout-us", "-5"])
    assert "must be positive" in capsys.readouterr().err


def test_public_names():
    assert set(modelgen.__all__) <= set(dir(modelgen))


def test_slow_variants_carry_their_delay_in_the_config_and_the_name():
    from modelgen import slow_variants

    slow = slow_variants(delay_ms=250)
    assert {v.strategy for v in slow} == {"direct", "oldest"}
    for v in slow:
        assert v.name.endswith("_slow250ms")
        assert parse(render(model_config(v))).parameters["EXEC_DELAY_MS"].string_value == "250"
    assert "EXEC_DELAY_MS" not in model_config(Variant("slot", "direct", 1, 1)).parameters


def test_only_python_models_can_be_slow():
    with pytest.raises(ValueError, match="delay_ms"):
        Variant("implicit", "direct", 1, 1, backend="onnx", delay_ms=10)
    with pytest.raises(ValueError, match="delay_ms"):
        Variant("slot", "direct", 1, 1, delay_ms=-1)
