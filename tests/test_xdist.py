"""`pytest fuzz/ -n 2`: the workers share the session's Triton, and every test of one model (its
corpus replays and seeds) runs on one worker, so two workers never hold one model's slots."""
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PREFERRED = ("py_slot_direct_s1_i1_int32_csr", "py_corrid_direct_s1_i1_int32_cserc_u64")


def test_each_model_stays_on_one_worker(triton):
    pytest.importorskip("xdist", reason="pytest-xdist is not installed")
    from fuzz.seeds import SEEDS

    loaded = {m.name for m in triton.client().get_model_repository_index().models if m.state == "READY"}
    MODELS = [m for m in PREFERRED if m in loaded] or sorted(set(SEEDS) & loaded)[:2]
    if len(MODELS) < 2:
        pytest.skip(f"fewer than two models with seeds on this server ({sorted(loaded)})")
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-v",
            str(ROOT / "fuzz" / "test_seeds.py"), "--triton-url", triton.grpc_url,
            "--triton-http-url", triton.http_url]
    for m in MODELS:
        args += ["--model", m]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    workers = defaultdict(set)
    for worker, model in re.findall(r"\[(gw\d)\] \[\s*\d+%\] PASSED \S*test_seed\[(\S+?)-seed\d+\]", out.stdout):
        workers[model].add(worker)
    assert set(workers) == set(MODELS), out.stdout
    assert all(len(w) == 1 for w in workers.values()), dict(workers)


def test_an_empty_parameter_set_belongs_to_no_model():
    """--model naming a model with no corpus entry leaves pytest's NOTSET in corpus_item."""
    from types import SimpleNamespace

    from fuzz.xdist_support import model_of

    for name in ("corpus_item", "seed_case"):
        assert model_of(SimpleNamespace(callspec=SimpleNamespace(params={name: object()}))) is None
