"""Other Triton builds, side by side: each nvidia-pytriton release unpacked into its own folder.

The wheel alone is enough for the server: it carries tritonserver, the Python backend, the stubs
for Python 3.8-3.11 (3.8-3.13 from 0.5.14 on) and every shared library they need in
nvidia_pytriton.libs/. Its Python dependencies are for pytriton's own API, which the harness
does not use, hence --no-deps. What the stub takes from the machine: libpython<ver>.so.1.0 of
the running Python and numpy in the environment EmbeddedTriton puts first on PATH.

    install = install_release("0.5.0")          # downloads once, then reuses the folder
    with EmbeddedTriton(repo, install=install) as server: ...
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .server import InstallNotFound, TritonInstall

# Read from server_version at start-up on this kind of machine.
TRITON_VERSION = {
    "0.4.0": "2.36.0",
    "0.4.2": "2.39.0",
    "0.5.0": "2.41.0",
    "0.5.5": "2.44.0",
    "0.5.8": "2.46.0",
    "0.5.14": "2.51.0",
    "0.6.0": "2.51.0",
    "0.7.0": "2.51.0",
}
# The release matrix's builds (`python -m fuzz.matrix --all-releases`): the sequence-batcher
# fixes of 2023-2024 fall between them. 0.7.0 is the installed default.
MATRIX_RELEASES = ("0.4.0", "0.4.2", "0.5.0", "0.5.5", "0.5.8", "0.7.0")
ENV_DIR = "TRITON_SEQFUZZ_RELEASES_DIR"
_DONE = ".installed"


class ReleaseInstallError(InstallNotFound):
    pass


def triton_version_of(install_dir: str | os.PathLike) -> str | None:
    """The Triton version of the nvidia-pytriton installed in `install_dir` (--target), if known."""
    from importlib import metadata

    for dist in metadata.distributions(path=[str(install_dir)]):
        if (dist.metadata["Name"] or "").lower().replace("_", "-") == "nvidia-pytriton":
            return TRITON_VERSION.get(dist.version)
    return None


def releases_dir() -> Path:
    """Where releases are unpacked: $TRITON_SEQFUZZ_RELEASES_DIR, else ~/.cache/triton-seqfuzz/releases."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "triton-seqfuzz" / "releases"


def release_dir(version: str, root: str | os.PathLike | None = None) -> Path:
    return Path(root or releases_dir()) / f"nvidia-pytriton-{version}"


def is_installed(version: str, root: str | os.PathLike | None = None) -> bool:
    return (release_dir(version, root) / _DONE).is_file()


def install_release(version: str, root: str | os.PathLike | None = None, *, timeout: float = 900.0,
                    pip_args=()) -> TritonInstall:
    """The TritonInstall of nvidia-pytriton `version`, installed with pip into its own folder under
    `root` the first time (about 40 MB to download, 110 MB on disk) and reused afterwards.
    Concurrent callers wait for one another (a file lock); a failed install leaves no folder."""
    target = release_dir(version, root)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / _DONE).is_file():
            _pip_install(version, target, timeout, pip_args)
    return TritonInstall.find(target)


def _pip_install(version: str, target: Path, timeout: float, pip_args) -> None:
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
               "--no-deps", "--no-compile", "--target", str(staging), f"nvidia-pytriton=={version}", *pip_args]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ReleaseInstallError(f"pip did not install nvidia-pytriton=={version} within {timeout:.0f} s") from None
        if done.returncode != 0:
            errors = [ln for ln in (done.stderr + done.stdout).splitlines() if "Location 'file:" not in ln]
            raise ReleaseInstallError(f"pip could not install nvidia-pytriton=={version}:\n" + "\n".join(errors[-15:]))
        TritonInstall.find(staging)  # every piece the harness needs is there (else: which one is not)
        (staging / _DONE).write_text(f"nvidia-pytriton=={version}\n")
        if target.exists():  # a half-finished folder from a killed run
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
