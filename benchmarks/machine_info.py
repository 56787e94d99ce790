"""Where a benchmark ran: enough to tell whether two result files are comparable."""
from __future__ import annotations

import os
import platform
import sys
import time
from importlib import metadata


def _cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _commit() -> str:
    import subprocess

    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                             cwd=os.path.dirname(os.path.abspath(__file__)), timeout=10)
        return out.stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def machine_info(triton_version: str) -> dict:
    return {
        "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "load_average_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "python": sys.version.split()[0],
        "triton": triton_version,
        "nvidia_pytriton": _version("nvidia-pytriton"),
        "hypothesis": _version("hypothesis"),
        "tritonclient": _version("tritonclient"),
        "code": _commit(),
    }
