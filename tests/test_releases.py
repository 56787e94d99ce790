"""Older Triton builds from older nvidia-pytriton releases, each started on a small repository.

Each release is ~40 MB to download, so these run only with TRITON_SEQFUZZ_RELEASES=1 or when the
release is already unpacked under fuzz.harness.releases.releases_dir().
"""
import os
import time

import pytest

from fuzz.harness.client import GrpcClient, Request
from fuzz.harness.releases import MATRIX_RELEASES, TRITON_VERSION, install_release, is_installed, release_dir
from fuzz.harness.server import EmbeddedTriton
from modelgen import Variant, write_model

START_ERROR = ("inference request for sequence {id} to model '{model}' must specify the START flag on the "
               "first request of the sequence")
# Every build of the matrix but the installed one (the session's server covers that).
RELEASES = [r for r in MATRIX_RELEASES if r != "0.7.0"]
WANTED = os.environ.get("TRITON_SEQFUZZ_RELEASES") == "1"

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    path = tmp_path_factory.mktemp("release-models")
    write_model(Variant("corrid", "direct", 1, 1, controls=("START", "END", "READY", "CORRID")), path)
    write_model(Variant("slot", "oldest", 1, 2, controls=("START", "READY")), path)
    return path


@pytest.mark.parametrize("release", RELEASES)
def test_release_starts_and_sums_a_sequence(release, repo, tmp_path):
    if not (WANTED or is_installed(release)):
        pytest.skip(f"nvidia-pytriton {release} is not under {release_dir(release).parent}; "
                    "set TRITON_SEQFUZZ_RELEASES=1 to download it")
    install = install_release(release)
    assert install.server_bin.is_relative_to(release_dir(release))
    started = time.monotonic()
    with EmbeddedTriton(repo, install=install, workdir=tmp_path / "w") as server:
        assert server.version == TRITON_VERSION[release]
        assert time.monotonic() - started < 60
        client = GrpcClient(server.grpc_url)
        for model in sorted(p.name for p in repo.iterdir()):
            values = [3, -1, 70000]
            got = [client.infer(Request(model, 77, v, start=(i == 0), end=(i == 2))).value
                   for i, v in enumerate(values)]
            assert got == [3, 2, 70002], (model, got)
            after = client.infer(Request(model, 77, 1))
            assert (after.status, after.message) == ("INVALID_ARGUMENT", START_ERROR.format(id=77, model=model))


def test_install_is_cached(tmp_path):
    if not (WANTED or is_installed("0.5.0")):
        pytest.skip("set TRITON_SEQFUZZ_RELEASES=1 to download nvidia-pytriton 0.5.0")
    first = install_release("0.5.0")
    mtime = release_dir("0.5.0").stat().st_mtime
    assert install_release("0.5.0") == first
    assert release_dir("0.5.0").stat().st_mtime == mtime


def test_a_version_pip_cannot_find_is_a_clear_error(tmp_path):
    if not WANTED:
        pytest.skip("asks the package index; set TRITON_SEQFUZZ_RELEASES=1")
    from fuzz.harness.releases import ReleaseInstallError

    with pytest.raises(ReleaseInstallError, match="nvidia-pytriton==0.0.999"):
        install_release("0.0.999", tmp_path)
    assert not any(tmp_path.iterdir()) or [p.name for p in tmp_path.iterdir()] == [".nvidia-pytriton-0.0.999.lock"]


def test_2_41_refuses_string_ids_where_2_51_takes_them(repo, tmp_path):
    """Pins the known divergence string-ids-refused (found by the release matrix)."""
    from fuzz.checker.divergences import KNOWN
    from fuzz.checker.model import normalize_message

    if not (WANTED or is_installed("0.5.0")):
        pytest.skip("set TRITON_SEQFUZZ_RELEASES=1 to download nvidia-pytriton 0.5.0")
    (known,) = [d for d in KNOWN if d.key == "string-ids-refused"]
    with EmbeddedTriton(repo, install=install_release("0.5.0"), workdir=tmp_path / "w") as server:
        assert server.version in known.versions
        client = GrpcClient(server.grpc_url)
        for model in sorted(p.name for p in repo.iterdir()):  # a uint64 CORRID, and no CORRID
            got = client.infer(Request(model, "abc", 1, start=True, end=True))
            assert (got.status, normalize_message(got.message)) == ("INVALID_ARGUMENT", known.signatures[0]), \
                (model, got)
