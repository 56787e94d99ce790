"""The campaign summary as a user reads it, from a child `pytest fuzz/` run."""
from .test_stops import pytest_fuzz

MODELS = ("py_slot_direct_s1_i1_int32_csr", "py_slot_oldest_s1_i2_int32_csr")


def test_a_build_s_guards_are_said_once_for_all_its_models(tmp_path):
    args = [a for m in MODELS for a in ("--model", m)]
    proc = pytest_fuzz(tmp_path, *args, "--hypothesis-profile", "ci", "-k", "test_sequence_batcher")
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    guards = [line for line in out.splitlines() if "steering around a known divergence" in line]
    assert guards, out  # 2.39, 2.41 and 2.51 all leave a cancelled backlogged START's id behind
    assert len(guards) == len(set(guards)), out
    assert all(line.startswith(f"guard (2 of {len(MODELS)} models): ") for line in guards), out
