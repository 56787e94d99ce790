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
    _copy_library(Path(version_dir), native.SOURCE, native.BACKEND)


def write_split(variant, version_dir: Path) -> None:
    """A split ensemble's first step: the split backend's library (modelgen/native/split.c)."""
    _copy_library(Path(version_dir), native.SPLIT_SOURCE, native.SPLIT_BACKEND)


def _copy_library(version_dir: Path, source: str, backend: str) -> None:
    """The backend's library, built from `source` on first use, into the version folder."""
    try:
        library = native.build(source, backend)
    except native.NativeUnavailable as exc:
        raise BackendUnavailable(str(exc)) from None
    shutil.copyfile(library, version_dir / library.name)
