"""config.pbtxt from Triton's own schema: a ModelConfig message, printed with text_format.

Building the protobuf message (rather than filling a text template) means a field Triton does
not know is an AttributeError here, not a load failure in the server.
"""
from __future__ import annotations

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from .variants import Variant

_DTYPE = {"int32": mc.TYPE_INT32, "fp32": mc.TYPE_FP32}
_CONTROL_KIND = {
    "START": mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_START,
    "END": mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_END,
    "READY": mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_READY,
    "CORRID": mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_CORRID,
}


def model_config(variant: Variant) -> mc.ModelConfig:
    cfg = mc.ModelConfig(name=variant.name, max_batch_size=variant.slots)
    if variant.backend == "python":
        cfg.backend = "python"
        cfg.parameters["FLAVOUR"].string_value = variant.flavour
        cfg.parameters["STRATEGY"].string_value = variant.strategy
    else:  # other backends plug their platform fields in their own writer
        raise ValueError(f"no config rule for backend {variant.backend!r}")

    dtype = _DTYPE[variant.dtype]
    cfg.input.add(name="INPUT", data_type=dtype, dims=[1])
    cfg.output.add(name="OUTPUT", data_type=dtype, dims=[1])
    cfg.instance_group.add(count=variant.instances, kind=mc.ModelInstanceGroup.KIND_CPU)

    sb = cfg.sequence_batching
    sb.max_sequence_idle_microseconds = variant.idle_us
    if variant.strategy == "direct":
        sb.direct.SetInParent()
    else:
        sb.oldest.max_candidate_sequences = variant.slots
    for name in ("START", "END", "READY", "CORRID"):
        if name not in variant.controls:
            continue
        ctl = sb.control_input.add(name=name).control.add(kind=_CONTROL_KIND[name])
        if name == "CORRID":
            ctl.data_type = mc.TYPE_UINT64 if variant.corrid_type == "uint64" else mc.TYPE_STRING
        else:
            ctl.int32_false_true.extend([0, 1])
    if variant.flavour == "implicit":
        state = sb.state.add(input_name="INPUT_STATE", output_name="OUTPUT_STATE", data_type=dtype, dims=[1])
        state.initial_state.add(name="zero", data_type=dtype, dims=[1], zero_data=True)
    return cfg


def render(cfg: mc.ModelConfig) -> str:
    return text_format.MessageToString(cfg)


def parse(text: str) -> mc.ModelConfig:
    return text_format.Parse(text, mc.ModelConfig())
