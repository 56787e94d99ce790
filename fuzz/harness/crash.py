"""Where a crashed tritonserver was: its signal handler's backtrace, read into one line.

Triton's handler prints `Signal (11) received.` and then frames as raw addresses (`2# 0x000055C4569BA97E
in /.../tritonserver`), which differ from run to run. The load address of each file the server mapped,
read from /proc/PID/maps while it runs (`load_bases`), turns a frame into an offset in its file
(`tritonserver+0x1fe97e`): the same in every run of a build, and what addr2line reads. Where addr2line
is installed, it names the function too. A death's reason line then says where, so a record that keeps
only a failure's first lines (a CI's) still does.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import attrs

SIGNAL = re.compile(r"Signal \((\d+)\) received")
FRAME = re.compile(r"^\s*(\d+)# 0x([0-9A-Fa-f]+) in (\S+)\s*$")
SHOWN = 3  # frames a reason line names


@attrs.frozen
class Frame:
    index: int
    address: int
    path: str
    offset: int | None = None  # in its file, where its load address is known
    function: str = ""  # addr2line's name, without its arguments

    def describe(self) -> str:
        name = os.path.basename(self.path)
        where = f"{name}+0x{self.offset:x}" if self.offset is not None else f"0x{self.address:x} in {name}"
        return f"{self.function} ({where})" if self.function else where


def load_bases(pid: int) -> dict[str, int]:
    """Each mapped file's load address (its real path -> the address of its offset 0), from
    /proc/PID/maps; {} where it cannot be read."""
    try:
        text = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return {}
    return bases_of(text)


def bases_of(maps: str) -> dict[str, int]:
    bases: dict[str, int] = {}
    for line in maps.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) < 6 or not parts[5].startswith("/"):
            continue
        base = int(parts[0].split("-")[0], 16) - int(parts[2], 16)
        path = parts[5].strip()
        bases[path] = min(base, bases.get(path, base))
    return bases


def crash(log_text: str, bases: dict[str, int]) -> tuple[int | None, list[Frame]]:
    """(the signal of the log's last `Signal (N) received.`, the frames printed after it, each with
    its offset where `bases` knows its file); (None, []) where the log shows no such crash."""
    lines = log_text.splitlines()
    at = next((i for i in range(len(lines) - 1, -1, -1) if SIGNAL.search(lines[i])), None)
    if at is None:
        return None, []
    frames = []
    for line in lines[at + 1:]:
        m = FRAME.match(line)
        if m is None:
            if frames:
                break
            continue
        address, path = int(m.group(2), 16), m.group(3)
        base = bases.get(path, bases.get(os.path.realpath(path)))
        frames.append(Frame(int(m.group(1)), address, path, None if base is None else address - base))
    return int(SIGNAL.search(lines[at]).group(1)), frames


def named(frames: list[Frame], timeout_s: float = 10.0) -> list[Frame]:
    """The frames with addr2line's function names, where it is installed and knows them."""
    tool = shutil.which("addr2line")
    if tool is None:
        return frames
    names: dict[tuple, str] = {}
    for path in {f.path for f in frames if f.offset is not None}:
        offsets = [f.offset for f in frames if f.path == path and f.offset is not None]
        try:
            out = subprocess.run([tool, "-f", "-C", "-e", path, *map(hex, offsets)], capture_output=True, text=True,
                                 timeout=timeout_s).stdout.splitlines()
        except (OSError, subprocess.SubprocessError):
            continue
        for offset, function in zip(offsets, out[0::2]):
            names[path, offset] = _short(function)
    return [attrs.evolve(f, function=names.get((f.path, f.offset), "")) for f in frames]


def _short(function: str, most: int = 100) -> str:
    """A demangled name without its arguments, cut to `most` characters; "" for none or one that
    stayed mangled (a lambda's local symbol: hundreds of characters nobody reads)."""
    if not function or function.startswith(("??", "_Z")):
        return ""
    name = function.split("(", 1)[0]
    return name if len(name) <= most else name[:most - 3] + "..."


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def where(log_text: str, bases: dict[str, int], most: int = SHOWN) -> str:
    """'SIGSEGV in f (tritonserver+0x1fe97e) <- g (...)': the crash the log shows, below its
    signal handler and the kernel's return to it (frames 0 and 1); "" where it shows none."""
    number, frames = crash(log_text, bases)
    if number is None:
        return ""
    shown = named([f for f in frames if f.index >= 2][:most])
    return signal_name(number) + (" in " + " <- ".join(f.describe() for f in shown) if shown else "")
