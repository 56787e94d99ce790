"""The accumulator as a serialized TensorRT engine (platform tensorrt_plan).

Building an engine needs TensorRT >= 10 and a CUDA device; a plan only loads on the GPU
architecture and TensorRT version it was built with, so build it where Triton will run it
(for example inside the NGC tritonserver container's matching TensorRT).
"""
from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path

from . import BackendUnavailable, control_shape

FILENAME = "model.plan"
MIN_MAJOR = 10  # int32 EQUAL/SELECT and explicit-batch-only networks are TensorRT 10 API
_WORKSPACE_BYTES = 1 << 24


def cuda_device_count() -> int:
    """CUDA devices visible through the driver API; 0 where there is no driver at all.
    ctypes keeps this check free of any CUDA Python package."""
    for lib in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            cuda = ctypes.CDLL(lib)
        except OSError:
            continue
        count = ctypes.c_int(0)
        if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return 0
        return count.value
    return 0


def unavailable_reason() -> str | None:
    if importlib.util.find_spec("tensorrt") is None:
        return ("the tensorrt package is not installed (pip install 'triton-seqfuzz[tensorrt]' on a "
                "machine with an NVIDIA GPU)")
    if cuda_device_count() == 0:
        return "no CUDA device is visible: building a TensorRT plan needs an NVIDIA GPU and driver"
    return None


def _import_trt():
    reason = unavailable_reason()
    if reason:
        raise BackendUnavailable(f"backend 'tensorrt': {reason}")
    import tensorrt as trt

    major = int(trt.__version__.split(".")[0])
    if major < MIN_MAJOR:
        raise BackendUnavailable(f"backend 'tensorrt' needs TensorRT >= {MIN_MAJOR}, found {trt.__version__}")
    return trt


def build(variant) -> bytes:
    """The serialized engine for `variant`."""
    trt = _import_trt()
    import numpy as np

    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    if builder is None:
        raise BackendUnavailable("backend 'tensorrt': trt.Builder could not start (CUDA initialization failed)")
    network = builder.create_network(0)  # TensorRT 10 networks are always explicit-batch
    dtype = {"int32": trt.int32, "fp32": trt.float32}[variant.dtype]
    batch = [-1] if variant.batching else []
    data_shape = batch + list(variant.shape)
    ctl_in_shape = batch + [1]

    x = network.add_input("INPUT", dtype, data_shape)
    state = network.add_input("INPUT_STATE", dtype, data_shape)
    controls = {}
    for name in ("START", "END", "READY", "CORRID"):
        if name in variant.controls:
            # CORRID is int32: TensorRT has no uint64 (the config says TYPE_INT32 to match).
            controls[name] = network.add_input(name, trt.int32, ctl_in_shape)
    # END and CORRID stay unused, as in Triton's own QA plans; Triton checks that every
    # configured control input is an engine I/O tensor, and the TensorRT test checks they are.

    keep_alive = []  # trt.Weights do not copy: the arrays must outlive build_serialized_network
    rank = len(data_shape)

    def constant(value, np_type):
        arr = np.full([1] * rank, value, dtype=np_type)
        keep_alive.append(arr)
        return network.add_constant(arr.shape, trt.Weights(arr)).get_output(0)

    def truth(tensor):
        # [B, 1] int32 -> [B, 1, ..., 1] bool (nonzero is true), the rank INPUT has, since
        # TensorRT only broadcasts between tensors of equal rank.
        target = control_shape(variant)
        if len(target) != len(tensor.shape):
            shuffle = network.add_shuffle(tensor)
            shuffle.reshape_dims = tuple(0 if d == -1 else d for d in target)  # 0 copies the batch dim
            tensor = shuffle.get_output(0)
        is_zero = network.add_elementwise(tensor, constant(0, np.int32), trt.ElementWiseOperation.EQUAL)
        return network.add_unary(is_zero.get_output(0), trt.UnaryOperation.NOT).get_output(0)

    start, ready = truth(controls["START"]), truth(controls["READY"])
    summed = network.add_elementwise(x, state, trt.ElementWiseOperation.SUM).get_output(0)
    # An initial state from data: Triton hands it at START, and the model adds it there too.
    started = network.add_select(start, x, summed).get_output(0) if variant.resets_on_start else summed
    new = network.add_select(ready, started, state).get_output(0)
    for name in ("OUTPUT", "OUTPUT_STATE"):  # one tensor cannot carry two output names
        out = network.add_identity(new).get_output(0)
        out.name = name
        network.mark_output(out)

    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, _WORKSPACE_BYTES)
    if variant.batching:
        # Triton needs the profile to cover batch sizes 1..max_batch_size.
        profile = builder.create_optimization_profile()
        mbs = variant.max_batch_size
        for i in range(network.num_inputs):
            tensor = network.get_input(i)
            rest = tuple(tensor.shape)[1:]
            profile.set_shape(tensor.name, (1, *rest), (mbs, *rest), (mbs, *rest))
        config.add_optimization_profile(profile)
    plan = builder.build_serialized_network(network, config)
    if plan is None:
        raise RuntimeError(f"TensorRT failed to build {variant.name}; see the TensorRT log above")
    return bytes(plan)


def write(variant, version_dir: Path) -> None:
    (Path(version_dir) / FILENAME).write_bytes(build(variant))
