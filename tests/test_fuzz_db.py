"""--fuzz-db: a failure one worker finds reaches another worker through a real Redis server
(Debian's redis-server; skipped when it is not installed) or a shared directory."""
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fuzz.db import DatabaseSpecError, open_database
from fuzz.harness.server import EmbeddedTriton, ServerDied, free_port
from modelgen import default_variants, write_model

ROOT = Path(__file__).resolve().parent.parent
MODEL = "py_implicit_direct_s1_i1_int32_csr"  # diverges on 2.51 (implicit state dropped): fails fast


@pytest.fixture(scope="module")
def db_triton(tmp_path_factory):
    """MODEL alone on a server of this module's own: the workers' campaigns start from a server
    no other test has used (the session's may carry another module's history). Not named
    `triton`: its death is this module's failure, not a reason to stop the run."""
    repo = tmp_path_factory.mktemp("fuzz-db-models")
    write_model(next(v for v in default_variants() if v.name == MODEL), repo)
    with EmbeddedTriton(repo, workdir=tmp_path_factory.mktemp("fuzz-db-triton")) as server:
        yield server


@pytest.fixture
def redis_url(tmp_path):
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (Debian: apt-get install -y redis-server)")
    pytest.importorskip("redis", reason="the redis package is not installed (pip install '.[redis]')")
    import redis

    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        client = redis.Redis(host="127.0.0.1", port=port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"redis-server did not start: {proc.stdout.read1().decode()}") from None
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def worker(triton, db, mode) -> dict:
    out = subprocess.run([sys.executable, "-m", "tests.fuzz_db_worker", triton.grpc_url, MODEL, db, mode],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    try:
        triton.check_alive()
    except ServerDied as death:  # how it died, not only the worker's "no Triton answers"
        pytest.fail(f"the server died during the {mode} worker's campaign: {death}\n{out.stdout}{out.stderr}")
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def diverges(triton) -> bool:
    from fuzz.checker.divergences import known_for
    from fuzz.spec import ModelSpec

    return any(d.key == "python-backend-drops-implicit-state"
               for d in known_for(ModelSpec.fetch(triton, MODEL), triton.version))


def pooled(triton, shared, empty):
    if not diverges(triton):
        pytest.skip(f"{MODEL} does not diverge on Triton {triton.version}: nothing to pool")
    found = worker(triton, shared, "find")
    assert found["failures"], f"the first worker found nothing to share: {found}"
    reused = worker(triton, shared, "reuse")
    # The same divergence, whichever promise showed it first (sums_match, or order_kept when
    # share_sequence met it): a worker's database may hold more than one failing example.
    divergences = lambda r: {d for _, d in r["failures"]}  # noqa: E731
    assert divergences(reused) == divergences(found) == {"python-backend-drops-implicit-state"}, (found, reused)
    # Each example the database held (the failure, sometimes a second failing one) and its final
    # replay; then the campaign fuzzes on past the divergence, taking it as built, and its reuse
    # phase fetches and replays them once more (now passes). Nothing more: nothing is generated.
    assert 1 <= reused["fetched"] and 2 * reused["examples"] <= 3 * reused["fetched"], \
        f"the failure was generated, not taken from the database: {reused}"
    control = worker(triton, empty, "reuse")
    assert control["failures"] == [] and control["examples"] == 0, control


def test_a_failure_reaches_another_worker_through_redis(db_triton, redis_url):
    pooled(db_triton, f"{redis_url}/0", f"{redis_url}/1")


def test_a_failure_reaches_another_worker_through_a_shared_directory(db_triton, tmp_path):
    pooled(db_triton, f"dir:{tmp_path / 'shared'}", f"dir:{tmp_path / 'empty'}")


@pytest.mark.parametrize("spec, message", [
    ("mysql://x", "expected redis://HOST:PORT/DB or dir:/PATH"),
    ("dir:", "needs a path"),
    ("redis://127.0.0.1:1/0", "no Redis answers there"),
    ("redis://127.0.0.1:6379/zero", "must be a database number"),
])
def test_a_bad_fuzz_db_is_a_clear_error(spec, message):
    if spec.startswith("redis://"):
        pytest.importorskip("redis")
    with pytest.raises(DatabaseSpecError, match=message):
        open_database(spec)
