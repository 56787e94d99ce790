"""Implicit-state accumulators as ONNX, TensorFlow SavedModel and TensorRT plan files, and on
modelgen's own native backend (its C source: modelgen/native/accumulator.c).

Every backend computes, per batch item (elementwise over `shape`):

    new          = INPUT_STATE                 if not READY   (a padding slot keeps its state)
                   INPUT                       if START       (a new sequence ignores stale state)
                   INPUT + INPUT_STATE         otherwise
    OUTPUT       = OUTPUT_STATE = new

which is INPUT + (READY and not START) * INPUT_STATE for every ready item. It is written with
selects rather than a multiply so that a stale non-finite state cannot leak into a START as NaN.
A variant whose initial state comes from a data file (initial_sum) drops the START case: the
state Triton hands a START is that file's value, and the model adds it, so a START that got
anything else (zero, another sequence's state) shows in its sum.
END and CORRID (oldest variants) are declared inputs that the graph does not use: Triton checks
that every configured control input exists in the model.

Each module imports its framework inside its functions, so `import modelgen` stays light.
"""
from __future__ import annotations

import importlib


class BackendUnavailable(RuntimeError):
    """The framework a backend needs (or, for TensorRT, a GPU) is missing on this machine."""


_MODULES = {"onnx": ".onnx", "tensorflow": ".tensorflow", "tensorrt": ".tensorrt", "native": ".native"}


def _module(backend: str):
    try:
        return importlib.import_module(_MODULES[backend], __name__)
    except KeyError:
        raise ValueError(f"no framework backend {backend!r}; known: {sorted(_MODULES)}") from None


def unavailable_reason(backend: str) -> str | None:
    """None when `backend` can write models here, else a sentence saying what is missing."""
    return _module(backend).unavailable_reason()


def writer(backend: str):
    return _module(backend).write


def control_shape(variant) -> list[int]:
    """Shape the [batch, 1] (or [1]) control tensors are reshaped to so they broadcast against
    INPUT item by item: one leading batch dim (-1) when batching, then a 1 per INPUT dim."""
    return ([-1] if variant.batching else []) + [1] * len(variant.shape)


def tensor_shape(variant, dims) -> list:
    """Model-side shape of a tensor whose config dims are `dims`: None marks the batch dim."""
    return ([None] if variant.batching else []) + list(dims)
