"""Generated framework models against a pure-Python reference, driven the way Triton drives them.

Each model runs seeded random step programs. A step is one model execution: a batch of rows
(one row without batching), each row a sequence's request (START on its first, END sometimes)
or a padding row (READY=0). Like Triton's sequence batcher with implicit state, the harness
feeds each sequence the OUTPUT_STATE the *model* returned last time as its next INPUT_STATE
(zeros, the configured initial_state, or a stale state on START); the reference keeps its own
state, so a model that drifts shows up as a mismatch. Padding rows carry a per-row state that
the model must hand back unchanged.

The implicit-state options: a model whose initial state comes from a data file gets that file's
contents (read from the written repository) on START, as Triton gives it, and must add it; a
single-buffer model (use_same_buffer_for_input_output) runs with INPUT_STATE and OUTPUT_STATE
bound to one buffer, the strictest reading of the option (the runtime writes the new state over
the old in place).
"""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from modelgen import implicit_variants, model_config, parse, render, write_repository
from modelgen.backends import onnx as onnx_backend
from modelgen.backends import tensorrt as trt_backend
from tritonclient.grpc import model_config_pb2 as mc

SHAPES = [(1,), (2, 3)]
PROGRAMS = 12
STEPS = 30
NP_DTYPE = {"int32": np.int32, "fp32": np.float32}
CORRID_NP = {"uint64": np.uint64, "int32": np.int32}


def variants_of(backend):
    return [v for shape in SHAPES for v in implicit_variants(backend, shape=shape)]


def by_name(backend):
    return {v.name: v for v in variants_of(backend)}


# --- the reference: plain Python numbers, one row at a time ----------------------------------

def reference_row(ready: bool, start: bool, x: list, state: list) -> list:
    """OUTPUT = OUTPUT_STATE = INPUT + (READY and not START) * INPUT_STATE for a ready row;
    a padding row (READY=0) leaves its state as it was. `start` here is a START the model
    resets on (one whose state starts from data adds the initial state instead)."""
    if not ready:
        return list(state)
    return [xi + (0 if start else si) for xi, si in zip(x, state)]


def initial_state_of(variant, model_dir: Path):
    """The state Triton hands a START: the data file's contents for a variant that has one
    (read back as Triton does: raw elements of the state's dtype), else None (zeros)."""
    if variant.resets_on_start:
        return None
    raw = (model_dir / "initial_state" / "initial_sum").read_bytes()
    return np.frombuffer(raw, NP_DTYPE[variant.dtype]).reshape(variant.shape).copy()


# --- step programs ----------------------------------------------------------------------------

def _values(rng, variant, n):
    # fp32 values are quarters so every sum is exact in float32 and in Python floats alike.
    if variant.dtype == "int32":
        return [rng.randint(-1000, 1000) for _ in range(n)]
    return [rng.randint(-4000, 4000) / 4 for _ in range(n)]


def _corrid(rng, variant):
    # uint64 ids above 2**63 check the tensor is really unsigned end to end.
    return rng.randint(1, 2**31 - 1) if variant.corrid_type == "int32" else rng.choice(
        [rng.randint(1, 1000), rng.randint(2**63, 2**64 - 1)])


def program(variant, seed):
    """A list of steps; a step is a list of rows (dicts). Rows name a sequence by `key`;
    padding rows use the key ("pad", position)."""
    rng = random.Random(seed)
    rows_max = variant.max_batch_size or 1
    size = int(np.prod(variant.shape))
    active = {}  # key -> corrid of a sequence that has started and not ended
    next_key = 0
    steps = []
    for _ in range(STEPS):
        if variant.strategy == "direct":
            # A sequence owns its batch slot (key == position); an idle slot is a padding row.
            order, starting = [], set()
            for pos in range(rows_max):
                if pos not in active and rng.random() < 0.5:
                    active[pos] = _corrid(rng, variant)
                    starting.add(pos)
                order.append(pos if pos in starting or (pos in active and rng.random() < 0.7) else None)
        else:
            # Oldest: up to `slots` candidate sequences, batched in any order and batch size.
            starting = set()
            while len(active) < variant.slots and rng.random() < 0.6:
                active[("seq", next_key)] = _corrid(rng, variant)
                starting.add(("seq", next_key))
                next_key += 1
            n_rows = rng.randint(1, rows_max)
            # A new sequence's first request is sent at once, so it cannot miss its START.
            chosen = sorted(starting, key=str)[:n_rows]
            rest = [k for k in sorted(active, key=str) if k not in starting]
            chosen += rng.sample(rest, min(len(rest), n_rows - len(chosen)))
            for k in starting - set(chosen):  # no room in this batch: it starts later
                del active[k]
            order = chosen + [None] * (n_rows - len(chosen))
            rng.shuffle(order)
        step = []
        for pos, key in enumerate(order):
            if key is None:
                step.append({"key": ("pad", pos), "ready": False, "start": rng.random() < 0.3,
                             "end": False, "corrid": 0, "x": _values(rng, variant, size)})
                continue
            step.append({"key": key, "ready": True, "start": key in starting, "end": rng.random() < 0.15,
                         "corrid": active[key], "x": _values(rng, variant, size),
                         # On START Triton sends the zero initial_state; a stale one must be ignored too.
                         "stale": None if rng.random() < 0.5 else _values(rng, variant, size)})
        for row in step:
            if row["ready"] and row["end"]:
                del active[row["key"]]
        steps.append(step)
    return steps


def feeds_for(variant, step, states, initial=None):
    """Model inputs for one step; `states` maps key -> the model's last OUTPUT_STATE row;
    `initial`: the initial state from data, which Triton hands every START."""
    dt = NP_DTYPE[variant.dtype]
    rows_x, rows_s = [], []
    for row in step:
        rows_x.append(np.array(row["x"], dt).reshape(variant.shape))
        if row["ready"] and row["start"] and initial is not None:
            rows_s.append(initial)
        elif row["ready"] and row["start"]:
            rows_s.append(np.zeros(variant.shape, dt) if row["stale"] is None
                          else np.array(row["stale"], dt).reshape(variant.shape))
        else:
            rows_s.append(states[row["key"]])

    def ctl(values, np_type):
        arr = np.array(values, np_type).reshape(-1, 1)
        return arr if variant.batching else arr.reshape(1)

    def data(rows):
        arr = np.stack(rows)
        return arr if variant.batching else arr[0]

    feeds = {"INPUT": data(rows_x), "INPUT_STATE": data(rows_s),
             "START": ctl([r["start"] for r in step], np.int32),
             "READY": ctl([r["ready"] for r in step], np.int32)}
    if "END" in variant.controls:
        feeds["END"] = ctl([r["end"] for r in step], np.int32)
    if "CORRID" in variant.controls:
        feeds["CORRID"] = ctl([r["corrid"] for r in step], CORRID_NP[variant.corrid_type])
    return feeds


def check_programs(variant, run, initial=None):
    """Drive `run(feeds) -> (OUTPUT, OUTPUT_STATE)` through PROGRAMS programs; `initial`: see
    feeds_for."""
    dt = NP_DTYPE[variant.dtype]
    size = int(np.prod(variant.shape))
    assert (initial is None) == variant.resets_on_start
    # Triton hands a model whose state starts from data that state on every START, never a stale one.
    seen = {"pad": 0, "start": 0, "continue": 0} | ({"stale": 0} if initial is None else {})
    for seed in range(PROGRAMS):
        rng = random.Random(seed + 1000)
        states, ref = {}, {}  # model's carried state / reference's own state, per key
        for i, step in enumerate(program(variant, seed)):
            for row in step:  # padding rows start from some leftover state, as a free slot would
                if row["key"] not in states:
                    init = _values(rng, variant, size)
                    states[row["key"]] = np.array(init, dt).reshape(variant.shape)
                    ref[row["key"]] = init
            out, out_state = run(feeds_for(variant, step, states, initial))
            if not variant.batching:
                out, out_state = out[None], out_state[None]
            assert out.dtype == dt and out_state.dtype == dt
            assert out.shape == out_state.shape == (len(step), *variant.shape)
            for pos, row in enumerate(step):
                start = row["ready"] and row["start"]
                if start and initial is not None:
                    prior = initial.reshape(-1).tolist()
                else:
                    prior = (row["stale"] or [0] * size) if start else ref[row["key"]]
                want = reference_row(row["ready"], row["start"] and initial is None, row["x"], prior)
                expect = np.array(want, dt).reshape(variant.shape)
                where = f"{variant.name} seed {seed} step {i} row {pos} {row}"
                np.testing.assert_array_equal(out[pos], expect, err_msg=f"OUTPUT, {where}")
                np.testing.assert_array_equal(out_state[pos], expect, err_msg=f"OUTPUT_STATE, {where}")
                states[row["key"]] = out_state[pos].copy()
                ref[row["key"]] = want
                kind = "pad" if not row["ready"] else "start" if row["start"] else "continue"
                seen[kind] += 1
                if "stale" in seen:
                    seen["stale"] += bool(start and row["stale"])
            for row in step:  # an ended sequence's key is never sent again
                if row["ready"] and row["end"]:
                    del states[row["key"]], ref[row["key"]]
    # The programs must actually exercise every case, or this check proves little.
    assert all(seen.values()), seen


# --- config <-> model name checks -------------------------------------------------------------

def config_io(variant, cfg: mc.ModelConfig):
    """(inputs, outputs) the model must have: name -> (config data type, dims with -1 batch)."""
    batch = [-1] if cfg.max_batch_size else []
    ins = {i.name: (i.data_type, batch + list(i.dims)) for i in cfg.input}
    for ctl in cfg.sequence_batching.control_input:
        dtype = ctl.control[0].data_type if ctl.control[0].data_type else mc.TYPE_INT32
        ins[ctl.name] = (dtype, batch + [1])
    outs = {o.name: (o.data_type, batch + list(o.dims)) for o in cfg.output}
    for st in cfg.sequence_batching.state:
        ins[st.input_name] = (st.data_type, batch + list(st.dims))
        outs[st.output_name] = (st.data_type, batch + list(st.dims))
    return ins, outs


def check_config(variant, model_dir: Path, filename: str, platform: str, backend: str):
    text = (model_dir / "config.pbtxt").read_text()
    cfg = parse(text)
    assert cfg == model_config(variant)
    assert render(cfg) == text
    assert cfg.name == model_dir.name == variant.name
    assert (cfg.platform, cfg.backend, cfg.default_model_filename) == (platform, backend, filename)
    assert cfg.max_batch_size == (4 if variant.batching else 0)
    assert (model_dir / "1" / filename).exists()
    state = cfg.sequence_batching.state[0]
    assert (state.input_name, state.output_name) == ("INPUT_STATE", "OUTPUT_STATE")
    (init,) = state.initial_state
    assert list(init.dims) == list(variant.shape)
    if variant.initial_sum:
        assert init.data_file and cfg.parameters["INITIAL_SUM"].string_value == str(variant.initial_sum)
        assert (initial_state_of(variant, model_dir) == variant.initial_sum).all()
    else:
        assert init.zero_data and not (model_dir / "initial_state").exists()
    assert (state.use_same_buffer_for_input_output, state.use_growable_memory) == (variant.same_buffer, variant.growable)
    return cfg


# --- ONNX -------------------------------------------------------------------------------------

ONNX_VARIANTS = by_name("onnx")


@pytest.fixture(scope="session")
def onnx_repo(tmp_path_factory):
    pytest.importorskip("onnx", reason="onnx not installed (pip install 'triton-seqfuzz[onnx]')")
    root = tmp_path_factory.mktemp("onnx_repo")
    write_repository(ONNX_VARIANTS.values(), root)
    return root


@pytest.mark.parametrize("name", sorted(ONNX_VARIANTS))
def test_onnx_config_and_graph_match(onnx_repo, name):
    onnx = pytest.importorskip("onnx")
    variant = ONNX_VARIANTS[name]
    cfg = check_config(variant, onnx_repo / name, "model.onnx", "onnxruntime_onnx", "onnxruntime")
    model = onnx.load(str(onnx_repo / name / "1" / "model.onnx"))
    onnx.checker.check_model(model, full_check=True)
    assert [(o.domain, o.version) for o in model.opset_import] == [("", onnx_backend.OPSET)]
    to_cfg = {onnx.TensorProto.INT32: mc.TYPE_INT32, onnx.TensorProto.FLOAT: mc.TYPE_FP32,
              onnx.TensorProto.UINT64: mc.TYPE_UINT64}

    def io(values):
        return {v.name: (to_cfg[v.type.tensor_type.elem_type],
                         [d.dim_value if d.HasField("dim_value") else -1 for d in v.type.tensor_type.shape.dim])
                for v in values}

    assert (io(model.graph.input), io(model.graph.output)) == config_io(variant, cfg)


@pytest.mark.parametrize("name", sorted(ONNX_VARIANTS))
def test_onnx_model_matches_reference(onnx_repo, name):
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install 'triton-seqfuzz[onnx]')")
    variant = ONNX_VARIANTS[name]
    session = ort.InferenceSession(str(onnx_repo / name / "1" / "model.onnx"), providers=["CPUExecutionProvider"])

    def run(feeds):
        return tuple(session.run(["OUTPUT", "OUTPUT_STATE"], feeds))

    def run_in_one_buffer(feeds):
        state = np.ascontiguousarray(feeds["INPUT_STATE"]).copy()
        binding = session.io_binding()
        for k, v in feeds.items():
            if k != "INPUT_STATE":
                binding.bind_cpu_input(k, np.ascontiguousarray(v))
        binding.bind_input("INPUT_STATE", "cpu", 0, state.dtype, state.shape, state.ctypes.data)
        binding.bind_output("OUTPUT_STATE", "cpu", 0, state.dtype, state.shape, state.ctypes.data)
        binding.bind_output("OUTPUT")
        session.run_with_iobinding(binding)
        return binding.copy_outputs_to_cpu()[0], state

    check_programs(variant, run_in_one_buffer if variant.same_buffer else run,
                   initial_state_of(variant, onnx_repo / name))


# --- TensorFlow SavedModel --------------------------------------------------------------------

TF_VARIANTS = by_name("tensorflow")


@pytest.fixture(scope="session")
def tf_repo(tmp_path_factory):
    # Importing TensorFlow and saving models is the slow part: do it once per session.
    pytest.importorskip("tensorflow", reason="tensorflow not installed (pip install 'triton-seqfuzz[tensorflow]')")
    root = tmp_path_factory.mktemp("tf_repo")
    write_repository(TF_VARIANTS.values(), root)
    return root


@pytest.mark.parametrize("name", sorted(TF_VARIANTS))
def test_tf_config_and_signature_match(tf_repo, name):
    # Read the SignatureDef from saved_model.pb, as Triton's TensorFlow backend does.
    from tensorflow.core.protobuf import saved_model_pb2

    variant = TF_VARIANTS[name]
    cfg = check_config(variant, tf_repo / name, "model.savedmodel", "tensorflow_savedmodel", "tensorflow")
    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString((tf_repo / name / "1" / "model.savedmodel" / "saved_model.pb").read_bytes())
    (meta,) = saved.meta_graphs
    assert "serve" in meta.meta_info_def.tags
    sig = meta.signature_def["serving_default"]
    from tensorflow.core.framework import types_pb2

    to_cfg = {types_pb2.DT_INT32: mc.TYPE_INT32, types_pb2.DT_FLOAT: mc.TYPE_FP32, types_pb2.DT_UINT64: mc.TYPE_UINT64}

    def io(tensors):
        return {k: (to_cfg[t.dtype], [d.size for d in t.tensor_shape.dim]) for k, t in tensors.items()}

    assert (io(sig.inputs), io(sig.outputs)) == config_io(variant, cfg)


@pytest.mark.parametrize("name", sorted(TF_VARIANTS))
def test_tf_model_matches_reference(tf_repo, name):
    tf = pytest.importorskip("tensorflow")
    serve = tf.saved_model.load(str(tf_repo / name / "1" / "model.savedmodel")).signatures["serving_default"]

    def run(feeds):
        out = serve(**{k: tf.constant(v) for k, v in feeds.items()})
        return out["OUTPUT"].numpy(), out["OUTPUT_STATE"].numpy()

    check_programs(TF_VARIANTS[name], run, initial_state_of(TF_VARIANTS[name], tf_repo / name))


# --- TensorRT (needs a GPU) -------------------------------------------------------------------

TRT_VARIANTS = by_name("tensorrt")


@pytest.fixture(scope="session")
def trt_repo(tmp_path_factory):
    reason = trt_backend.unavailable_reason()
    if reason:
        pytest.skip(f"TensorRT plans cannot be built here: {reason}")
    root = tmp_path_factory.mktemp("trt_repo")
    write_repository(TRT_VARIANTS.values(), root)
    return root


@pytest.mark.parametrize("name", sorted(TRT_VARIANTS))
def test_trt_engine_io_and_reference(trt_repo, name):
    import tensorrt as trt

    variant = TRT_VARIANTS[name]
    cfg = check_config(variant, trt_repo / name, "model.plan", "tensorrt_plan", "tensorrt")
    assert cfg.instance_group[0].kind == mc.ModelInstanceGroup.KIND_GPU
    plan = (trt_repo / name / "1" / "model.plan").read_bytes()
    engine = trt.Runtime(trt.Logger(trt.Logger.WARNING)).deserialize_cuda_engine(plan)
    to_cfg = {trt.int32: mc.TYPE_INT32, trt.float32: mc.TYPE_FP32}
    ins, outs = {}, {}
    for i in range(engine.num_io_tensors):
        t = engine.get_tensor_name(i)
        side = ins if engine.get_tensor_mode(t) == trt.TensorIOMode.INPUT else outs
        side[t] = (to_cfg[engine.get_tensor_dtype(t)], list(engine.get_tensor_shape(t)))
    # Config CORRID is TYPE_INT32 here: TensorRT has no uint64.
    assert (ins, outs) == config_io(variant, cfg)
    if variant.batching:
        for t in ins:
            assert engine.get_tensor_profile_shape(t, 0)[2][0] >= variant.max_batch_size

    torch = pytest.importorskip("torch", reason="running a TensorRT engine here uses torch for CUDA buffers")
    context = engine.create_execution_context()

    def run(feeds):
        keep = {}
        for k, v in feeds.items():
            keep[k] = torch.from_numpy(np.ascontiguousarray(v)).cuda()
            context.set_input_shape(k, tuple(v.shape))
            context.set_tensor_address(k, keep[k].data_ptr())
        tdt = torch.int32 if variant.dtype == "int32" else torch.float32
        for k in ("OUTPUT", "OUTPUT_STATE"):
            # one state buffer: the engine writes the new state over INPUT_STATE in place
            one = k == "OUTPUT_STATE" and variant.same_buffer
            keep[k] = keep["INPUT_STATE"] if one else torch.empty(tuple(context.get_tensor_shape(k)), dtype=tdt,
                                                                   device="cuda")
            context.set_tensor_address(k, keep[k].data_ptr())
        stream = torch.cuda.current_stream()
        assert context.execute_async_v3(stream.cuda_stream)
        stream.synchronize()
        return keep["OUTPUT"].cpu().numpy(), keep["OUTPUT_STATE"].cpu().numpy()

    check_programs(variant, run, initial_state_of(variant, trt_repo / name))
