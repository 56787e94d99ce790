"""What a killed run left behind, found and stopped by the next run.

Every embedded server is registered here (a small file per process group) while it runs. The
kernel's PR_SET_PDEATHSIG already takes a server down with the fuzzer that started it, but it
fires when the *thread* that forked it ends, it does not reach a stub whose server hung instead of
dying, and it is Linux-only. So each start first stops any registered group whose owner is gone.
A group is only touched if its leader is still the process that was registered (same start time):
a recycled pid is never killed.
"""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

ENV_DIR = "TRITON_SEQFUZZ_RUN_DIR"
STUB = b"triton_python_backend_stub"
REGION_PREFIX = b"triton_python_backend_shm_region_"
SHM_DIR = Path("/dev/shm")


def registry_dir() -> Path:
    """$TRITON_SEQFUZZ_RUN_DIR, else $XDG_RUNTIME_DIR/triton-seqfuzz, else ~/.cache/triton-seqfuzz/run."""
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR])
    if os.environ.get("XDG_RUNTIME_DIR"):
        return Path(os.environ["XDG_RUNTIME_DIR"]) / "triton-seqfuzz"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "triton-seqfuzz" / "run"


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), or None if
    there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # fields after "(comm)" start at field 3


def register(pgid: int) -> Path | None:
    """Records that this process owns the process group `pgid`. Best effort: a registry that
    cannot be written only loses the next run's clean-up."""
    path = registry_dir() / f"{pgid}.group"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{os.getpid()} {start_time(os.getpid())} {start_time(pgid)}\n")
    except OSError:
        return None
    return path


def unregister(pgid: int) -> None:
    try:
        (registry_dir() / f"{pgid}.group").unlink()
    except OSError:
        pass


def reap(quiet: bool = False) -> list[int]:
    """Stops (SIGKILL) every registered group whose owner has exited; returns their pgids."""
    reaped = []
    try:
        entries = sorted(registry_dir().glob("*.group"))
    except OSError:
        return reaped
    for path in entries:
        try:
            pgid = int(path.stem)
            owner, owner_started, leader_started = path.read_text().split()
            owner = int(owner)
        except (OSError, ValueError):
            path.unlink(missing_ok=True)  # unreadable: nothing can be proven about it
            continue
        if start_time(owner) == owner_started:
            continue  # its owner still runs (maybe another fuzzer right now)
        if start_time(pgid) == leader_started:
            regions = stub_regions(pgid)
            try:
                os.killpg(pgid, signal.SIGKILL)
                reaped.append(pgid)
            except ProcessLookupError:
                pass
            unlink_regions(regions)
        path.unlink(missing_ok=True)
    if reaped and not quiet:
        print(f"triton-seqfuzz: stopped {len(reaped)} server group(s) left by a run that was killed: "
              f"{reaped}", file=sys.stderr)
    return reaped


def stub_regions(pgid: int) -> list[str]:
    """The shared-memory regions held by the Python-backend stubs in process group `pgid` (a
    stub's second argument names its region). A stub that shuts down cleanly unlinks its own; a
    killed one (a crash restart, SIGKILL after the grace, a run killed outright) leaves it in
    /dev/shm, 1 MiB or more each, until the machine reboots: 3.2 GiB of them had piled up here
    after a day of test runs."""
    names = []
    try:
        pids = [int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit()]
    except OSError:
        return names
    for pid in pids:
        try:
            if os.getpgid(pid) != pgid:
                continue
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(args) > 2 and args[0].endswith(STUB) and args[2].startswith(REGION_PREFIX) and b"/" not in args[2]:
            names.append(args[2].decode(errors="replace"))
    return names


def unlink_regions(names) -> None:
    """Removes these regions' names from /dev/shm, where still there (the memory goes once the
    last process that maps one is gone)."""
    for name in names:
        try:
            (SHM_DIR / name).unlink()
        except OSError:
            pass
