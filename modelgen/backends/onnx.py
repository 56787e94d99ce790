"""The accumulator as an ONNX graph (platform onnxruntime_onnx), built with onnx.helper."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from . import BackendUnavailable, control_shape, tensor_shape

# Opset 13 / IR 7 (onnx 1.8): every op used here exists there unchanged, and ONNX Runtime
# builds in Triton containers from 2021 on load it. Pinned so the file does not depend on
# whichever onnx version happens to write it.
OPSET = 13
IR_VERSION = 7
FILENAME = "model.onnx"


def unavailable_reason() -> str | None:
    if importlib.util.find_spec("onnx") is None:
        return "the onnx package is not installed (pip install 'triton-seqfuzz[onnx]')"
    return None


def _import_onnx():
    try:
        import onnx
    except ImportError as exc:
        raise BackendUnavailable(f"backend 'onnx' needs the onnx package "
                                 f"(pip install 'triton-seqfuzz[onnx]'): {exc}") from exc
    return onnx


def build(variant):
    """The ModelProto for `variant` (checked with onnx.checker)."""
    onnx = _import_onnx()
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np

    dtype = {"int32": TensorProto.INT32, "fp32": TensorProto.FLOAT}[variant.dtype]
    data = tensor_shape(variant, variant.shape)
    ctl = tensor_shape(variant, [1])
    inputs = [helper.make_tensor_value_info("INPUT", dtype, data),
              helper.make_tensor_value_info("INPUT_STATE", dtype, data)]
    for name in ("START", "END", "READY"):
        if name in variant.controls:
            inputs.append(helper.make_tensor_value_info(name, TensorProto.INT32, ctl))
    if "CORRID" in variant.controls:
        inputs.append(helper.make_tensor_value_info("CORRID", TensorProto.UINT64, ctl))
    outputs = [helper.make_tensor_value_info("OUTPUT", dtype, data),
               helper.make_tensor_value_info("OUTPUT_STATE", dtype, data)]

    # Controls are int32 0/1 of shape [B, 1] (or [1]); reshape to [B, 1, ..., 1] so Where
    # broadcasts them over each item's INPUT dims, then read nonzero as true.
    ctl_shape = numpy_helper.from_array(np.array(control_shape(variant), dtype=np.int64), "ctl_shape")
    nodes = [
        helper.make_node("Reshape", ["START", "ctl_shape"], ["start_r"]),
        helper.make_node("Reshape", ["READY", "ctl_shape"], ["ready_r"]),
        helper.make_node("Cast", ["start_r"], ["start"], to=TensorProto.BOOL),
        helper.make_node("Cast", ["ready_r"], ["ready"], to=TensorProto.BOOL),
        helper.make_node("Add", ["INPUT", "INPUT_STATE"], ["summed"]),
        # An initial state from data: Triton hands it at START, and the model adds it there too.
        helper.make_node("Where", ["start", "INPUT", "summed"], ["started"]) if variant.resets_on_start
        else helper.make_node("Identity", ["summed"], ["started"]),
        helper.make_node("Where", ["ready", "started", "INPUT_STATE"], ["new"]),
        # Two outputs of one value need two nodes: an ONNX name is produced exactly once.
        helper.make_node("Identity", ["new"], ["OUTPUT"]),
        helper.make_node("Identity", ["new"], ["OUTPUT_STATE"]),
    ]
    graph = helper.make_graph(nodes, variant.name, inputs, outputs, initializer=[ctl_shape])
    model = helper.make_model(graph, producer_name="modelgen", ir_version=IR_VERSION,
                              opset_imports=[helper.make_operatorsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    return model


def write(variant, version_dir: Path) -> None:
    onnx = _import_onnx()
    onnx.save(build(variant), str(Path(version_dir) / FILENAME))
