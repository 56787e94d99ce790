"""The release matrix's builds: what a build is (a release, the installed one, a URL), and getting
it ready to run (installing a release, checking that a URL answers)."""
from __future__ import annotations

import re
from pathlib import Path

import attrs

import fuzz

FUZZ_DIR = Path(fuzz.__file__).resolve().parent
PROJECT_CORPUS = FUZZ_DIR.parent / "corpus"  # there in a checkout; pass --corpus-dir otherwise


class BuildUnavailable(Exception):
    """A build that cannot be run: not installable, or nothing answers at its URL."""


@attrs.frozen
class Build:
    kind: str  # "release" (an nvidia-pytriton version), "installed" (this environment's), "url"
    name: str  # the nvidia-pytriton version, or the gRPC address
    http_url: str | None = None

    @property
    def label(self) -> str:
        return {"release": f"pytriton {self.name}", "installed": f"pytriton {self.name} (installed)",
                "url": f"url {self.name}"}[self.kind]

    @property
    def slug(self) -> str:
        """Its folder under --out."""
        return re.sub(r"[^A-Za-z0-9.]+", "-", f"{self.kind}-{self.name}")


@attrs.frozen
class Prepared:
    args: tuple  # the pytest options that select this build
    triton_version: str | None  # as far as it is known before running


def installed_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("nvidia-pytriton")
    except metadata.PackageNotFoundError:
        return "not-installed"


def prepare(build: Build, url_timeout: float = 10.0) -> Prepared:
    """Installs a release if needed, or checks that the URL answers. Raises BuildUnavailable."""
    from ..harness.releases import TRITON_VERSION, install_release, release_dir
    from ..harness.server import ExternalTriton, TritonError, TritonInstall

    try:
        if build.kind == "release":
            install_release(build.name)
            return Prepared(("--triton-install", str(release_dir(build.name))), TRITON_VERSION.get(build.name))
        if build.kind == "installed":
            TritonInstall.find()
            return Prepared((), TRITON_VERSION.get(build.name))
        server = ExternalTriton(build.name, build.http_url, timeout=url_timeout)
        http = ("--triton-http-url", build.http_url) if build.http_url else ()
        return Prepared(("--triton-url", build.name, *http), server.version)
    except TritonError as err:
        raise BuildUnavailable(one_line(str(err))) from None


def one_line(text: str) -> str:
    """First and last lines of a message (pip's errors end with the reason)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if len(lines) <= 1:
        return lines[0] if lines else ""
    return f"{lines[0].rstrip(':')}: {lines[-1]}"
