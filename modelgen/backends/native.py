"""The accumulator on modelgen's own native backend (modelgen/native): the version folder gets the
backend library itself, built on first use, so the model loads on any server without a backend
folder of ours."""
from __future__ import annotations

import shutil
from pathlib import Path

from . import BackendUnavailable
from .. import native


def unavailable_reason() -> str | None:
    return native.unavailable_reason()


def write(variant, version_dir: Path) -> None:
    try:
        library = native.build()
    except native.NativeUnavailable as exc:
        raise BackendUnavailable(str(exc)) from None
    shutil.copyfile(library, Path(version_dir) / library.name)


def write_split(variant, version_dir: Path) -> None:
    """A split ensemble's first step: the split backend's library (modelgen/native/split.c)."""
    try:
        library = native.build(native.SPLIT_SOURCE, native.SPLIT_BACKEND)
    except native.NativeUnavailable as exc:
        raise BackendUnavailable(str(exc)) from None
    shutil.copyfile(library, Path(version_dir) / library.name)
