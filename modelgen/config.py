"""config.pbtxt from Triton's own schema: a ModelConfig message, printed with text_format.

Building the protobuf message (rather than filling a text template) means a field Triton does
not know is an AttributeError here, not a load failure in the server.
"""
from __future__ import annotations

import attrs
import numpy as np
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from .native import BACKEND as NATIVE_BACKEND
from .native import SPLIT_BACKEND
from .variants import EXECUTION_OUTPUT, LIVE_ROWS_OUTPUT, PYTHON_DTYPES, ROW_OUTPUT, Variant

# modelgen's dtype names (variants.PYTHON_DTYPES) as Triton's
_DTYPE = {name: getattr(mc, f"TYPE_{name.upper()}") for name in PYTHON_DTYPES}
_CONTROL_KIND = {
    "START": mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_START,
    "END": mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_END,
    "READY": mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_READY,
    "CORRID": mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_CORRID,
}
_CORRID_DTYPE = {"uint64": mc.TYPE_UINT64, "string": mc.TYPE_STRING, "int32": mc.TYPE_INT32,
                 "uint32": mc.TYPE_UINT32, "int64": mc.TYPE_INT64}
# Triton reads an initial_state data_file from <model folder>/initial_state/ (core: kInitialStateFolder).
INITIAL_STATE_DIR = "initial_state"
INITIAL_STATE_FILE = "initial_sum"
# backend -> (platform, backend, default_model_filename). Triton needs only one of platform and
# backend; both are set so the config reads unambiguously, and they agree with each other.
PLATFORMS = {
    "onnx": ("onnxruntime_onnx", "onnxruntime", "model.onnx"),
    "tensorflow": ("tensorflow_savedmodel", "tensorflow", "model.savedmodel"),
    "tensorrt": ("tensorrt_plan", "tensorrt", "model.plan"),
}


def model_config(variant: Variant) -> mc.ModelConfig:
    """The config of the model named variant.name (an ensemble variant's step: see configs())."""
    if variant.ensemble:
        return ensemble_config(variant)
    cfg = mc.ModelConfig(name=variant.name, max_batch_size=variant.max_batch_size)
    if variant.backend == "python":
        cfg.backend = "python"
        cfg.parameters["FLAVOUR"].string_value = variant.flavour
        cfg.parameters["STRATEGY"].string_value = variant.strategy
        if variant.delay_ms:
            cfg.parameters["EXEC_DELAY_MS"].string_value = str(variant.delay_ms)
    elif variant.backend == "native":
        # A custom backend has no platform; Triton finds libtriton_<backend>.so in version 1.
        cfg.backend = NATIVE_BACKEND
    elif variant.backend in PLATFORMS:
        cfg.platform, cfg.backend, cfg.default_model_filename = PLATFORMS[variant.backend]
    else:
        raise ValueError(f"no config rule for backend {variant.backend!r}")

    if variant.decoupled:
        cfg.model_transaction_policy.decoupled = True
    if variant.iterations:
        # The model reschedules a START until it has run this often; the fuzzer reads it here.
        cfg.sequence_batching.iterative_sequence = True
        cfg.parameters["ITERATIONS"].string_value = str(variant.iterations)
    dtype = _DTYPE[variant.dtype]
    dims = list(variant.shape)
    cfg.input.add(name="INPUT", data_type=dtype, dims=dims)
    cfg.output.add(name="OUTPUT", data_type=dtype, dims=dims)
    if variant.says_live_rows:
        # A diagnostic the fuzzer's coverage reads: the live (READY) rows of the execution that
        # answered, which the server's statistics only bound (they count padding rows, or mean).
        cfg.output.add(name=LIVE_ROWS_OUTPUT, data_type=mc.TYPE_INT32, dims=dims)
        cfg.output.add(name=ROW_OUTPUT, data_type=mc.TYPE_INT32, dims=dims)  # and the request's row in it
    if variant.says_execution:  # and the execution's serial
        cfg.output.add(name=EXECUTION_OUTPUT, data_type=mc.TYPE_INT32, dims=dims)
    # TensorRT engines only run on a GPU; the other backends here run on CPU.
    kind = mc.ModelInstanceGroup.KIND_GPU if variant.backend == "tensorrt" else mc.ModelInstanceGroup.KIND_CPU
    cfg.instance_group.add(count=variant.instances, kind=kind)

    sb = cfg.sequence_batching
    sb.max_sequence_idle_microseconds = variant.idle_us
    if variant.strategy == "direct":
        sb.direct.SetInParent()
    else:
        sb.oldest.max_candidate_sequences = variant.slots
        sb.oldest.preferred_batch_size.extend(variant.preferred_batch)
        sb.oldest.max_queue_delay_microseconds = variant.queue_delay_us
    for name in ("START", "END", "READY", "CORRID"):
        if name not in variant.controls:
            continue
        ctl = sb.control_input.add(name=name).control.add(kind=_CONTROL_KIND[name])
        if name == "CORRID":
            ctl.data_type = _CORRID_DTYPE[variant.corrid_type]
        elif variant.bool_controls:
            ctl.bool_false_true.extend([False, True])
        else:
            ctl.int32_false_true.extend([0, 1])
    if variant.flavour == "implicit":
        state = sb.state.add(input_name="INPUT_STATE", output_name="OUTPUT_STATE", data_type=dtype, dims=dims)
        if variant.initial_sum:
            state.initial_state.add(name="from_file", data_type=dtype, dims=dims, data_file=INITIAL_STATE_FILE)
            # What the file holds, for the fuzzer: a config read over the API names the file only.
            cfg.parameters["INITIAL_SUM"].string_value = str(variant.initial_sum)
        else:
            state.initial_state.add(name="zero", data_type=dtype, dims=dims, zero_data=True)
        state.use_same_buffer_for_input_output = variant.same_buffer
        state.use_growable_memory = variant.growable
        if variant.two_states:
            second = sb.state.add()
            second.CopyFrom(state)
            second.input_name, second.output_name = "INPUT_STATE_B", "OUTPUT_STATE_B"
    return cfg


def initial_state_bytes(variant: Variant) -> bytes:
    """The initial_state data file of a variant with an initial sum: every element of the state
    (dims without the batch dim), row-major, in the state's dtype (Triton copies it as it is)."""
    np_type = np.dtype(variant.dtype.replace("fp", "float")).newbyteorder("<")
    return np.full(variant.shape, variant.initial_sum, np_type).tobytes()


def step_config(variant: Variant) -> mc.ModelConfig:
    """The stateful step of an ensemble variant: the accumulator, named variant.step_name."""
    cfg = model_config(attrs.evolve(variant, ensemble=False, chunks=0))
    cfg.name = variant.step_name
    return cfg


def ensemble_config(variant: Variant) -> mc.ModelConfig:
    """An ensemble of the variant's stateful accumulator (behind the split step, for a split
    ensemble): INPUT in, its outputs out, the same batch size (an ensemble may not take larger
    batches than its steps)."""
    step = step_config(variant)
    cfg = mc.ModelConfig(name=variant.name, platform="ensemble", max_batch_size=step.max_batch_size)
    cfg.input.extend(step.input)
    cfg.output.extend(step.output)
    into = "INPUT"
    if variant.chunks:
        front = cfg.ensemble_scheduling.step.add(model_name=variant.split_name, model_version=-1)
        front.input_map["INPUT"] = "INPUT"
        front.output_map["CHUNK"] = into = "chunk"
    one = cfg.ensemble_scheduling.step.add(model_name=step.name, model_version=-1)
    one.input_map["INPUT"] = into
    for output in step.output:  # OUTPUT, and the step's diagnostic where it has one
        one.output_map[output.name] = output.name
    return cfg


def split_config(variant: Variant) -> mc.ModelConfig:
    """A split ensemble's first step (modelgen/native/split.c): decoupled, INPUT in, CHUNK out (the
    accumulator's INPUT), CHUNKS saying how many answers each request gets."""
    cfg = mc.ModelConfig(name=variant.split_name, backend=SPLIT_BACKEND, max_batch_size=0)
    cfg.model_transaction_policy.decoupled = True
    cfg.parameters["CHUNKS"].string_value = str(variant.chunks)
    cfg.input.add(name="INPUT", data_type=_DTYPE[variant.dtype], dims=[1])
    cfg.output.add(name="CHUNK", data_type=_DTYPE[variant.dtype], dims=[1])
    cfg.instance_group.add(count=1, kind=mc.ModelInstanceGroup.KIND_CPU)
    return cfg


def configs(variant: Variant) -> dict:
    """Every config the variant writes, by model name."""
    if variant.chunks:
        return {variant.name: ensemble_config(variant), variant.split_name: split_config(variant),
                variant.step_name: step_config(variant)}
    if variant.ensemble:
        return {variant.name: ensemble_config(variant), variant.step_name: step_config(variant)}
    return {variant.name: model_config(variant)}


def render(cfg: mc.ModelConfig) -> str:
    return text_format.MessageToString(cfg)


def parse(text: str) -> mc.ModelConfig:
    return text_format.Parse(text, mc.ModelConfig())
