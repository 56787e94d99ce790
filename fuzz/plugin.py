"""pytest plugin: the options and the session-wide Triton that fuzz/ and tests/ share.

Loaded through the pytest11 entry point, so `pytest fuzz/` works from anywhere once the project
is installed.
"""
from __future__ import annotations

import pytest

from .server import EmbeddedTriton, ExternalTriton, TritonInstall


def pytest_addoption(parser):
    group = parser.getgroup("triton-seqfuzz", "Triton sequence-batcher fuzzing")
    group.addoption("--triton-url", metavar="HOST:PORT",
                    help="gRPC address of an external Triton to test instead of starting the embedded one")
    group.addoption("--triton-http-url", metavar="HOST:PORT",
                    help="HTTP address of that external Triton (HTTP steps are skipped without it)")
    group.addoption("--triton-install", metavar="DIR",
                    help="site-packages folder of another nvidia-pytriton (e.g. from `pip install --target "
                         "DIR nvidia-pytriton==0.5.0`) whose tritonserver to start instead of the installed one")
    group.addoption("--models-dir", metavar="DIR",
                    help="model repository for the embedded Triton (default: a fresh `python -m modelgen` one)")


def _make_server(config, tmp_path_factory):
    url = config.getoption("--triton-url")
    http_url = config.getoption("--triton-http-url")
    if url:
        return ExternalTriton(url, http_url)
    if http_url:
        raise pytest.UsageError("--triton-http-url needs --triton-url (the embedded server has its own)")
    models_dir = config.getoption("--models-dir")
    if models_dir is None:
        from modelgen import python_variants, write_repository

        models_dir = tmp_path_factory.mktemp("models")
        write_repository(python_variants(), models_dir)
    install_dir = config.getoption("--triton-install")
    install = TritonInstall.find(install_dir) if install_dir else None
    return EmbeddedTriton(models_dir, install=install, workdir=tmp_path_factory.mktemp("triton")).start()


@pytest.fixture(scope="session")
def triton(request, tmp_path_factory):
    """The Triton under test for the whole session: started once, stopped at the end."""
    server = _make_server(request.config, tmp_path_factory)
    try:
        yield server
    finally:
        server.stop()


def pytest_report_header(config):
    url = config.getoption("--triton-url")
    return f"triton: external at {url}" if url else "triton: embedded (nvidia-pytriton)"
