"""`pytest fuzz/` writes what it finds to the corpus (JSON + reproducer) unless --no-corpus-write,
and does not write a finding the corpus already holds. Sub-sessions on the session's Triton,
each fuzzing one diverging model with a tiny generation-only profile."""
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz import corpus

ROOT = Path(__file__).resolve().parent.parent
MODEL = "py_implicit_direct_s1_i1_int32_csr"  # Python backend drops implicit state on 2.51


def fuzz_session(triton, corpus_dir, *extra):
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.tiny_profile",
            "--hypothesis-profile", "tiny", str(ROOT / "fuzz" / "test_fuzz.py"), "--triton-url", triton.grpc_url,
            "--model", MODEL, "--corpus-dir", str(corpus_dir), "-q", *extra]
    return subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_a_finding_is_written_once_and_not_with_no_corpus_write(triton, tmp_path):
    from fuzz.checker.divergences import known_for
    from fuzz.spec import ModelSpec

    if not known_for(ModelSpec.fetch(triton, MODEL), triton.version):
        pytest.skip(f"{MODEL} has no known divergence on Triton {triton.version}")
    off = fuzz_session(triton, tmp_path / "off", "--no-corpus-write")
    assert off.returncode == 0, off.stdout + off.stderr
    assert not (tmp_path / "off").exists(), "--no-corpus-write wrote files"

    first = fuzz_session(triton, tmp_path / "on")
    assert first.returncode == 0, first.stdout + first.stderr
    items = corpus.load_dir(tmp_path / "on")
    assert len(items) == 1 and items[0].error is None, first.stdout
    entry = items[0].entry
    assert (entry.model, entry.status, entry.divergence) == (MODEL, "known-divergence",
                                                             "python-backend-drops-implicit-state")
    assert entry.divergence_versions == (triton.version,) and entry.invariant == "sums_match"
    assert items[0].path.with_suffix(".py").is_file()
    assert f"corpus: wrote {items[0].path}" in first.stdout

    again = fuzz_session(triton, tmp_path / "on")
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"corpus: finding already held by {items[0].path}" in again.stdout
    assert len(list((tmp_path / "on").glob("*.json"))) == 1
