"""The accumulator as a TensorFlow SavedModel (platform tensorflow_savedmodel).

Triton's TensorFlow backend binds config names to the "serving_default" signature's input and
output keys, so the signature is built from TensorSpecs named exactly as in config.pbtxt.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from . import BackendUnavailable, control_shape, tensor_shape

FILENAME = "model.savedmodel"  # a folder, as Triton's default_model_filename expects


def unavailable_reason() -> str | None:
    if importlib.util.find_spec("tensorflow") is None:
        return "tensorflow is not installed (pip install 'triton-seqfuzz[tensorflow]')"
    return None


def _import_tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep the CLI output readable
    try:
        import tensorflow as tf
    except ImportError as exc:
        raise BackendUnavailable(f"backend 'tensorflow' needs tensorflow "
                                 f"(pip install 'triton-seqfuzz[tensorflow]'): {exc}") from exc
    return tf


def input_specs(variant, tf) -> list:
    """Signature inputs in a fixed order; names are the config names."""
    dtype = {"int32": tf.int32, "fp32": tf.float32}[variant.dtype]
    data = tensor_shape(variant, variant.shape)
    ctl = tensor_shape(variant, [1])
    specs = [tf.TensorSpec(data, dtype, name="INPUT"), tf.TensorSpec(data, dtype, name="INPUT_STATE")]
    specs += [tf.TensorSpec(ctl, tf.int32, name=n) for n in ("START", "END", "READY") if n in variant.controls]
    if "CORRID" in variant.controls:
        specs.append(tf.TensorSpec(ctl, tf.uint64, name="CORRID"))
    return specs


def build(variant):
    """A tf.Module whose `serve` concrete function is the serving signature."""
    tf = _import_tf()
    specs = input_specs(variant, tf)
    names = [s.name for s in specs]
    ctl_shape = control_shape(variant)

    def accumulate(*args):
        t = dict(zip(names, args))
        # int32 0/1 controls of shape [B, 1] (or [1]) -> bool [B, 1, ..., 1], broadcast per item.
        start = tf.reshape(tf.cast(t["START"], tf.bool), ctl_shape)
        ready = tf.reshape(tf.cast(t["READY"], tf.bool), ctl_shape)
        summed = t["INPUT"] + t["INPUT_STATE"]
        # An initial state from data: Triton hands it at START, and the model adds it there too.
        started = tf.where(start, t["INPUT"], summed) if variant.resets_on_start else summed
        new = tf.where(ready, started, t["INPUT_STATE"])
        return {"OUTPUT": tf.identity(new, name="OUTPUT"), "OUTPUT_STATE": tf.identity(new, name="OUTPUT_STATE")}

    module = tf.Module()
    module.serve = tf.function(accumulate, input_signature=specs)
    return module


def write(variant, version_dir: Path) -> None:
    tf = _import_tf()
    module = build(variant)
    tf.saved_model.save(module, str(Path(version_dir) / FILENAME),
                        signatures={"serving_default": module.serve.get_concrete_function()})
