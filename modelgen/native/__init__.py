"""The native implicit-state accumulator: a Triton backend compiled from accumulator.c on first use.

Triton looks for backend NAME's library, libtriton_NAME.so, in the model's version folder first,
then the model folder, then `<backend-dir>/NAME/`; modelgen copies it into each native model's
version folder, so any Triton that can read the repository loads it. The library is built with the machine's C compiler into the user's cache, once per source (a hash of the source
and the compile command names the file), and reused from there. It declares the backend API
itself and leaves those symbols to the server's library, so one build serves every Triton here
(it uses nothing newer than backend API 1.4 and checks the major version when it loads).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

BACKEND = "seqfuzz_accum"
SOURCE = (resources.files(__name__) / "accumulator.c").read_text()
# The decoupled step in front of a split ensemble's accumulator (split.c): each request as two chunks.
SPLIT_BACKEND = "seqfuzz_split"
SPLIT_SOURCE = (resources.files(__name__) / "split.c").read_text()
_FLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC")


class NativeUnavailable(RuntimeError):
    """No C compiler here, or it refused the source: the native models are left out."""


def compiler() -> str | None:
    """The C compiler to build with: $CC, else cc or gcc on PATH."""
    found = (shutil.which(name) for name in (os.environ.get("CC"), "cc", "gcc") if name)
    return next((path for path in found if path), None)


def unavailable_reason() -> str | None:
    """None when the backend can be built (or is built) here, else one sentence why not."""
    if compiler() is None:
        return "no C compiler (cc, gcc or $CC) on PATH to build the native implicit-state backend"
    return None


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "triton-seqfuzz" / "native"


def library_name(backend: str = BACKEND) -> str:
    return f"libtriton_{backend}.so"


def build(source: str = SOURCE, backend: str = BACKEND, into: Path | None = None) -> Path:
    """The library built from `source` for backend `backend`, compiled unless the cache has it.

    Compiled beside its final name and renamed into place, so concurrent first uses (xdist
    workers) and an interrupted build never leave a half-written library."""
    cc = compiler()
    if cc is None:
        raise NativeUnavailable(unavailable_reason())
    key = hashlib.sha256("\0".join((source, Path(cc).name, *_FLAGS)).encode()).hexdigest()[:16]
    folder = Path(into or cache_dir()) / f"{backend}-{key}"
    target = folder / library_name(backend)
    if target.exists():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".build.") as tmp:
        src = Path(tmp) / "accumulator.c"
        src.write_text(source)
        out = Path(tmp) / target.name
        done = subprocess.run([cc, *_FLAGS, "-o", str(out), str(src)], capture_output=True, text=True)
        if done.returncode != 0:
            first = next((line for line in done.stderr.splitlines() if "error" in line), done.stderr.strip())
            raise NativeUnavailable(f"{Path(cc).name} could not build the native backend {backend!r}: {first}")
        os.replace(out, target)
    return target
