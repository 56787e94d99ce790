"""Writes a model repository: one folder per variant, config.pbtxt plus version 1."""
from __future__ import annotations

import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path

from .backends import native as _native
from .backends import onnx as _onnx
from .backends import tensorflow as _tensorflow
from .backends import tensorrt as _tensorrt
from .config import INITIAL_STATE_DIR, INITIAL_STATE_FILE, configs, initial_state_bytes, render
from .variants import Variant


def _write_python_model(variant: Variant, version_dir: Path) -> None:
    template = resources.files("modelgen") / "templates" / "accumulator.py"
    (version_dir / "model.py").write_text(template.read_text())


# Framework writers import their framework only when called, so this table costs nothing.
WRITERS = {"python": _write_python_model, "onnx": _onnx.write, "tensorflow": _tensorflow.write,
           "tensorrt": _tensorrt.write, "native": _native.write}


def write_model(variant: Variant, models_dir: Path) -> Path:
    """Writes one model (an ensemble variant: the ensemble and its steps) and returns its folder.
    Each folder is built beside the target and renamed into place, so an interrupted run never
    leaves a half-written model behind."""
    models_dir = Path(models_dir)
    models_dir.mkdir(parents=True, exist_ok=True)
    try:
        writer = WRITERS[variant.backend]
    except KeyError:
        raise ValueError(f"no model writer for backend {variant.backend!r}; known: {sorted(WRITERS)}") from None
    # The step first: a reader that sees the ensemble finds its step there.
    for name, cfg in reversed(configs(variant).items()):
        stateful = cfg.HasField("sequence_batching")
        write = writer if stateful else _native.write_split if name == variant.split_name else None
        _write_folder(models_dir, name, cfg, lambda d: write(variant, d) if write else None,
                      {f"{INITIAL_STATE_DIR}/{INITIAL_STATE_FILE}": initial_state_bytes(variant)}
                      if stateful and variant.initial_sum else {})
    return models_dir / variant.name


def _write_folder(models_dir: Path, name: str, cfg, write_version, files: dict) -> None:
    """One model folder: config.pbtxt, version 1 (empty for an ensemble) and `files` (relative
    path -> bytes) beside them."""
    target = models_dir / name
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=models_dir))
    try:
        (staging / "1").mkdir()
        write_version(staging / "1")
        for relative, data in files.items():
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            (staging / relative).write_bytes(data)
        (staging / "config.pbtxt").write_text(render(cfg))
        if target.exists():
            shutil.rmtree(target)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_repository(variants, models_dir) -> list[Path]:
    """Every folder written (an ensemble variant writes two)."""
    for v in variants:
        write_model(v, Path(models_dir))
    return [Path(models_dir) / name for v in variants for name in v.model_names]
