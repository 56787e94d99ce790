"""Older Triton builds for live tests: a release that is installed is used; one that is not is
downloaded only when TRITON_SEQFUZZ_RELEASES=1 asks for it, else the test is skipped."""
from __future__ import annotations

import os

import pytest

from fuzz.harness.releases import install_release, is_installed


def embedded_install(release: str | None) -> dict:
    """EmbeddedTriton's keyword for nvidia-pytriton `release` (None: the installed build, none)."""
    if release is None:
        return {}
    if not (is_installed(release) or os.environ.get("TRITON_SEQFUZZ_RELEASES") == "1"):
        pytest.skip(f"nvidia-pytriton {release} is not installed; set TRITON_SEQFUZZ_RELEASES=1 to download it")
    return {"install": install_release(release)}
