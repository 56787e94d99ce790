"""The embedded Triton, live: start, stop, errors, and every generated model's sums."""
import itertools
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fuzz.harness.client import GrpcClient, Request, StreamClient
from fuzz.checker.divergences import known_for
from fuzz.checker.model import Answer, BatcherModel, Refusal, batcher_error, normalize_message
from fuzz.harness.server import (EmbeddedTriton, ExternalTriton, InstallNotFound, ServerDied, ServerStartError,
    TritonInstall)
from fuzz.spec import ModelSpec
from modelgen import Variant, default_variants, python_variants, write_model

from .conftest import triton_pids

START_ERROR = ("inference request for sequence {id} to model '{model}' must specify the START flag on the "
               "first request of the sequence")


@pytest.fixture
def one_model_repo(tmp_path):
    write_model(Variant("corrid", "direct", 1, 1, controls=("START", "END", "READY", "CORRID")), tmp_path / "models")
    return tmp_path / "models"


def group_pids(pgid: int) -> set[int]:
    out = subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


def wait_gone(pids, timeout=10.0) -> set[int]:
    deadline = time.monotonic() + timeout
    while (alive := {p for p in pids if os.path.exists(f"/proc/{p}")}) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


# -- every generated model, on the shared session server ---------------------------------------

def ids_for(variant: Variant):
    if "CORRID" in variant.controls and variant.corrid_type == "string":
        return ["alpha", "beta"]
    return [41, 2**40 + 3]


@pytest.mark.parametrize("variant", default_variants(), ids=lambda v: v.name)
def test_every_model_loads_and_sums_a_sequence(triton, variant):
    # A decoupled model takes streams only; an ensemble's batcher errors name its step.
    # (A split ensemble is one: its front step is decoupled, and it answers each request twice.)
    spec = ModelSpec.fetch(triton, variant.name)
    client = StreamClient(triton.grpc_url) if spec.decoupled else GrpcClient(triton.grpc_url)
    lo, hi = spec.sum_range
    # a fraction on a float model (on FP16 one past where its sums are exact: 2049.5 rounds to
    # 2050), else a value past 16 bits where the dtype holds it; none below 0 on an unsigned one
    values = {"fp32": [3, -1, 7.5], "fp16": [3, -1, 2047.5]}.get(variant.dtype, [3, -1 if lo < 0 else 1, min(70000, hi // 2)])
    known = {d.key for d in known_for(variant, triton.version)}
    if spec.iterations:
        # A sequence is its START, run `iterations` times: one running sum per execution. (What
        # comes after it is timed by the core: tests/test_iterative.py.)
        for seq_id in ids_for(variant):
            got = client.infer(Request(variant.name, seq_id, 3, start=True, dtype=variant.dtype.upper()))
            assert (got.value, got.partials) == (3 * spec.iterations, tuple(range(3, 3 * spec.iterations, 3))), got
        client.close()
        return
    for seq_id in ids_for(variant):
        sent = [Request(variant.name, seq_id, v, start=(i == 0), end=(i == len(values) - 1),
                        dtype=variant.dtype.upper(), batch_dim=variant.batching) for i, v in enumerate(values)]
        got = [client.infer(r) for r in sent]
        if "string-corrid-control-rejected" in known:
            # A known divergence of this build: pin its symptom so a fix is noticed.
            assert all(o.status == "INVALID_ARGUMENT" and "unexpected number of string elements" in o.message
                       for o in got), got
            continue
        if "python-backend-drops-implicit-state" in known:
            assert [o.value for o in got] == values, got  # each OUTPUT is its own INPUT
        else:
            # (a native model whose state starts from a data file starts from its value)
            running = list(itertools.accumulate(values, spec.add, initial=spec.initial_sum))[1:]
            assert [o.value for o in got] == running, got
            assert all(o.partials == spec.chunk_answers(o.value) for o in got), got
        if "ensemble-step-refusal-unanswered" in known:
            continue  # the step's refusal never comes back (tests/test_ensemble_flags.py)
        after_end = client.infer(Request(variant.name, seq_id, 1, dtype=variant.dtype.upper(),
                                         batch_dim=variant.batching))
        assert after_end.status == ("ERROR" if spec.decoupled else "INVALID_ARGUMENT")  # a stream's has none
        assert after_end.message == batcher_error(spec, START_ERROR, id=seq_id)
    client.close()


def test_a_model_without_a_batch_dimension_takes_1_and_refuses_2_as_the_model_says(triton):
    variant = next(v for v in python_variants() if not v.batching)
    spec = ModelSpec.fetch(triton, variant.name)
    model = BatcherModel(spec, margin_s=0.1)
    client = GrpcClient(triton.grpc_url)
    for req in (spec.request(77, 5, start=True), spec.request(77, 1, batch=2), spec.request(77, 2, end=True)):
        exp, got = model.expect(req, 0.0), client.infer(req)
        if isinstance(exp, Refusal):
            assert (got.status, normalize_message(got.message)) == (exp.status, exp.message), got
        else:
            assert got.value == exp.value, got
    assert spec.max_batch_size == 0 and exp == Answer(7)


def _answers_as_the_model_says(triton, name: str, program, client) -> BatcherModel:
    """Sends the requests one by one; each answer must be what the reference model expects."""
    spec = ModelSpec.fetch(triton, name)
    model = BatcherModel(spec, margin_s=0.1)
    for args, flags in program:
        req = spec.request(*args, **flags)
        exp, got = model.expect(req, time.monotonic()), client.infer(req)
        if isinstance(exp, Refusal):
            assert normalize_message(got.message) == exp.message, (req, got)
        else:
            assert got.value == exp.value, (req, exp, got)
    return model


def test_an_ensemble_answers_as_its_stateful_step_and_names_it_in_the_batchers_errors(triton):
    """Ensemble scheduling passes the request's sequence id and flags to the step; the step's
    sequence batcher's refusals come back naming the step, after "in ensemble '<name>', "."""
    variant = next(v for v in python_variants() if v.ensemble)
    spec = ModelSpec.fetch(triton, variant.name)
    assert (spec.step, spec.strategy, spec.capacity) == (variant.step_name, "oldest", 1)
    program = [((881, 3), dict(start=True)), ((881, 4), {}), ((881, 5), dict(end=True)),
               ((881, 1), {}),  # no START: the step's error
               ((0, 1), dict(start=True)), ((882, 1), dict(start=True, batch=2)),  # id 0, batch > max
               ((882, 1), dict(start=True, dtype="FP32"))]  # the ensemble's own check
    _answers_as_the_model_says(triton, variant.name, program, GrpcClient(triton.grpc_url))
    assert f"in ensemble '{variant.name}', " in BatcherModel(spec, margin_s=0.1).expect(
        spec.request(881, 1), 0.0).message


def test_a_decoupled_model_answers_over_a_stream_and_refuses_unary_calls(triton):
    variant = next(v for v in python_variants() if v.decoupled)
    stream = StreamClient(triton.grpc_url)
    program = [((883, 2), dict(start=True)), ((883, 3), {}), ((883, 4), dict(end=True)), ((883, 1), {}),
               ((0, 1), dict(start=True))]
    try:
        _answers_as_the_model_says(triton, variant.name, program, stream)
    finally:
        stream.close()
    unary = GrpcClient(triton.grpc_url).infer(Request(variant.name, 884, 1, start=True))
    assert unary.status == "UNIMPLEMENTED" and "decoupled" in unary.message, unary


@pytest.mark.parametrize("corrid_type", ["int32", "uint32", "int64"])
def test_every_integer_corrid_type_keeps_sequences_apart_across_its_range(triton, corrid_type):
    """Ids past 2**31 (a negative INT32), 2**32 - 1, and on INT64 ids past 2**63 (negative there)
    are sequences of their own; the fuzzer keeps ids below 2**32 on a 32-bit CORRID, which Triton
    cuts them to (ids equal modulo 2**32 reach the model as one CORRID)."""
    variant = next(v for v in python_variants() if "CORRID" in v.controls and v.corrid_type == corrid_type)
    ids = [7, 2**31 + 7, 2**32 - 1] + ([2**63 + 7, 2**64 - 1] if corrid_type == "int64" else [])
    assert ModelSpec.fetch(triton, variant.name).id_bits == (64 if corrid_type == "int64" else 32)
    client = GrpcClient(triton.grpc_url)
    for seq_id in ids:  # one at a time: a model with 2 slots
        program = [((seq_id, 2), dict(start=True)), ((seq_id, 3), {}), ((seq_id, 4), dict(end=True))]
        _answers_as_the_model_says(triton, variant.name, program, client)
    if corrid_type == "int32":  # the bool controls model
        assert variant.bool_controls


def test_first_request_without_start_gets_the_exact_error(triton):
    model = python_variants()[0].name
    outcome = GrpcClient(triton.grpc_url).infer(Request(model, 987654321, 5))
    assert (outcome.status, outcome.message) == ("INVALID_ARGUMENT", START_ERROR.format(id=987654321, model=model))


@pytest.mark.parametrize("cancel", [False, True], ids=["half-closed", "cancelled"])
def test_a_closed_stream_leaves_no_thread_behind(triton, cancel):
    # gRPC reads a stream's requests on a thread of its own; after a cancel it waited in the
    # request iterator forever (about two threads an example of a long campaign, and their memory).
    import threading
    before = threading.active_count()
    streams = [StreamClient(triton.grpc_url) for _ in range(5)]
    for i, stream in enumerate(streams):  # as an example's clients do: answered, then closed
        got = stream.infer(Request("py_slot_direct_s1_i1_int32_csr", 424_242 + i, 1, start=True, end=True))
        assert got.ok, got
        stream.close(cancel_requests=cancel, timeout_s=5.0)
    deadline = time.monotonic() + 5.0
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= before, [t.name for t in threading.enumerate()]


def test_a_stream_reopened_before_its_last_call_ended_keeps_the_new_calls_requests(triton):
    """close() waits only so long for its call's reader; a request sent on the next call must not
    be failed when that reader ends later (it failed every request then unanswered: a START
    waiting in the backlog came back STREAM_CLOSED while the server still held it). The old
    call is kept open by a START of its own in the backlog, so its reader surely ends after the
    next call's request went out: when that START is let in."""
    model, unary, stream = "py_slot_direct_s1_i1_int32_csr", GrpcClient(triton.grpc_url), StreamClient(triton.grpc_url)
    holder, old_start, waiter = 525_250, 525_251, 525_252
    try:
        assert unary.infer(Request(model, holder, 1, start=True)).ok  # the one slot
        stream.send(Request(model, old_start, 1, start=True))  # the old call: it waits in the backlog
        old_reader = stream._reader
        stream.close(timeout_s=0)  # half-closed: the server keeps the call open for that START
        box = stream.send(Request(model, waiter, 7, start=True))  # a new call; it waits behind it
        assert old_reader.is_alive()
        assert unary.infer(Request(model, holder, 0, end=True)).ok  # the slot goes to the old call's START
        old_reader.join(5)
        assert not old_reader.is_alive()  # answered, its call ended while the waiter's START was unanswered
        assert unary.infer(Request(model, old_start, 0, end=True)).ok  # the slot goes to the waiter
        got = StreamClient.wait(box, 10)
        assert got.ok and got.value == 7, got
    finally:
        for seq_id in (holder, old_start, waiter):
            unary.infer(Request(model, seq_id, 0, end=True))
        stream.close()


def test_the_default_build_is_the_pinned_one(triton):
    # Tests that skip on other builds (the known divergences of 2.51) would pass vacuously on an
    # unpinned newer nvidia-pytriton: the pin, the installed package and the running server agree.
    import re
    from importlib.metadata import version
    from pathlib import Path

    from fuzz.harness.releases import TRITON_VERSION

    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    (pin,) = re.findall(r'"nvidia-pytriton==([\d.]+)"', pyproject)
    assert version("nvidia-pytriton") == pin
    if not isinstance(triton, EmbeddedTriton):
        pytest.skip("a server given with --triton-url is not the installed build")
    assert triton.version == TRITON_VERSION[pin]


def test_external_server_wraps_a_running_triton(triton):
    external = ExternalTriton(triton.grpc_url, triton.http_url)
    assert external.version == triton.server_version()
    external.check_alive()


def test_external_server_death_is_seen_by_a_fresh_check(one_model_repo, tmp_path):
    """A liveness check within `within_s` of the last answer trusts it (the fuzzer's per-step
    check); a check without it asks, and sees the death at once."""
    server = EmbeddedTriton(one_model_repo, workdir=tmp_path / "w").start()
    external = ExternalTriton(server.grpc_url, server.http_url)
    try:
        external.check_alive()
        server.stop(graceful=False)
        external.check_alive(within_s=60.0)
        with pytest.raises(ServerDied, match="stopped answering"):
            external.check_alive()
    finally:
        server.stop()
        external.stop()


def test_external_server_that_is_not_there(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ServerStartError, match=f"no Triton answers at gRPC 127.0.0.1:{port}"):
        ExternalTriton(f"127.0.0.1:{port}", timeout=1.0)


# -- harness lifecycle, each with its own small server -----------------------------------------

def test_start_reports_version_and_stop_leaves_no_process(one_model_repo, tmp_path):
    server = EmbeddedTriton(one_model_repo, workdir=tmp_path / "w").start()
    try:
        assert server.version and server.version[0].isdigit()
        pids = group_pids(server.process.pid)
        assert len(pids) >= 2, "expected tritonserver plus a Python stub"
        server.check_alive()
    finally:
        server.stop()
    assert wait_gone(pids) == set()
    server.stop()  # idempotent
    with pytest.raises(ServerDied, match="not running"):
        server.check_alive()


def test_unparseable_config_is_a_clear_start_error(one_model_repo, tmp_path):
    (one_model_repo / "broken").mkdir()
    (one_model_repo / "broken" / "config.pbtxt").write_text("max_batch_size: {{ nonsense")
    before = triton_pids()
    with pytest.raises(ServerStartError) as info:
        EmbeddedTriton(one_model_repo, workdir=tmp_path / "w").start()
    text = str(info.value)
    assert "exited with status" in text and "last lines of the server log" in text
    assert "broken" in text
    assert wait_gone(triton_pids() - before) == set()


def test_port_already_in_use_is_a_clear_start_error(one_model_repo, tmp_path):
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ServerStartError, match=f"gRPC port {port} is already in use"):
            EmbeddedTriton(one_model_repo, workdir=tmp_path / "w", grpc_port=port).start()


def test_missing_repository_and_missing_install(tmp_path):
    with pytest.raises(ServerStartError, match="is not a folder"):
        EmbeddedTriton(tmp_path / "nowhere").start()
    with pytest.raises(InstallNotFound, match="nvidia-pytriton installation"):
        TritonInstall.find(tmp_path)


def test_server_death_is_reported_with_log_tail(one_model_repo, tmp_path):
    server = EmbeddedTriton(one_model_repo, workdir=tmp_path / "w").start()
    try:
        pids = group_pids(server.process.pid)
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait(10)
        with pytest.raises(ServerDied) as info:
            server.check_alive()
        assert "died with status -9" in str(info.value)
        assert "Started GRPCInferenceService" in str(info.value)  # the log tail came along
    finally:
        server.stop()
    assert wait_gone(pids) == set()


def test_a_killed_server_leaves_no_shared_memory_behind(one_model_repo, tmp_path):
    # A Python stub killed with its server cannot unlink its region: 1 MiB or more in /dev/shm,
    # per model instance, per crash restart, until reboot.
    from fuzz import leftovers

    server = EmbeddedTriton(one_model_repo, workdir=tmp_path / "w").start()
    try:
        regions = leftovers.stub_regions(server.process.pid)
        assert regions and all((leftovers.SHM_DIR / r).exists() for r in regions), regions
    finally:
        server.stop(graceful=False)
    assert [r for r in regions if (leftovers.SHM_DIR / r).exists()] == []


def test_killing_the_fuzzer_with_sigkill_takes_the_server_down(one_model_repo, tmp_path):
    script = textwrap.dedent(f"""
        import os, sys, time
        from fuzz.harness.server import EmbeddedTriton
        s = EmbeddedTriton({str(one_model_repo)!r}, workdir={str(tmp_path / 'w')!r}).start()
        print(s.process.pid, flush=True)
        time.sleep(600)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(child.stdout.readline())
        pids = group_pids(server_pid)
        assert server_pid in pids
    finally:
        child.kill()
        child.wait()
    assert wait_gone(pids, timeout=15) == set(), "tritonserver or its stubs outlived a SIGKILLed parent"


def test_sigterm_stops_a_run_whose_main_thread_is_polling_its_server(one_model_repo, tmp_path):
    """The SIGTERM handler runs between two bytecodes of the main thread, which may be inside the
    server's Popen.poll() (every liveness check) holding its waitpid lock: a handler that waited
    on that process blocked forever. Here the main thread does nothing but poll."""
    script = textwrap.dedent(f"""
        import sys
        from fuzz.harness.server import EmbeddedTriton, Terminated
        s = EmbeddedTriton({str(one_model_repo)!r}, workdir={str(tmp_path / 'w')!r}).start()
        print(s.process.pid, flush=True)
        try:
            while s.running:
                pass
        except Terminated:
            print("terminated", flush=True)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(child.stdout.readline())
        pids = group_pids(server_pid)
        time.sleep(0.5)
        child.send_signal(signal.SIGTERM)  # a handler that can deadlock here does so nine times in ten
        out, _ = child.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        child.kill()
        pytest.fail("a SIGTERM'ed run polling its server did not stop within 30 s")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "terminated" in out, out
    assert wait_gone(pids, timeout=15) == set(), "tritonserver or its stubs outlived the SIGTERM'ed run"


def test_a_server_s_own_work_folder_goes_when_the_process_ends(one_model_repo):
    """A server given no workdir makes one (its log, its backends); it outlives stop() (a restart
    reuses it, a report reads the log) and goes when the process exits, stopped or not."""
    script = textwrap.dedent(f"""
        import sys
        from fuzz.harness.server import EmbeddedTriton
        s = EmbeddedTriton({str(one_model_repo)!r}).start()
        print(s.workdir, flush=True)
        if sys.argv[1] == "stop":
            s.stop()
            assert s.log_path.exists(), "the log went with stop()"
    """)
    for how in ("stop", "exit"):
        out = subprocess.run([sys.executable, "-c", script, how], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        folder = Path(out.stdout.split()[0])
        assert folder.name.startswith("triton-seqfuzz-") and not folder.exists(), (how, folder)


def test_the_oldest_strategys_queue_delay_and_preferred_batch_shape_its_batches(tmp_path):
    """L0_sequence_batcher's queue-delay tests, for the oldest strategy: with preferred batch size
    4 and a 1 s queue delay, four sequences' requests sent together run as one batch at once, and
    two run as one batch once the oldest has waited out the delay. Sums stay each sequence's."""
    variant = Variant("corrid", "oldest", 4, 1, "int32", "uint64", ("START", "END", "READY", "CORRID"),
                      preferred_batch=(4,), queue_delay_us=1_000_000)
    write_model(variant, tmp_path / "models")
    with EmbeddedTriton(tmp_path / "models", workdir=tmp_path / "w") as server:
        streams = [StreamClient(server.grpc_url) for _ in range(4)]
        try:
            def together(requests):
                before, started = server.execution_count(variant.name), time.monotonic()
                boxes = [s.send(r) for s, r in zip(streams, requests)]
                got = [StreamClient.wait(b, 10) for b in boxes]
                took = time.monotonic() - started
                # The server counts an execution just after it answers (seen in CI: 0 right after).
                deadline = time.monotonic() + 2
                while server.execution_count(variant.name) == before and time.monotonic() < deadline:
                    time.sleep(0.01)
                return got, server.execution_count(variant.name) - before, took

            got, executions, took = together([Request(variant.name, 900 + i, i, start=True) for i in range(4)])
            assert [g.value for g in got] == [0, 1, 2, 3] and executions == 1, (got, executions)
            assert took < 0.9, took  # a preferred batch goes at once, not after the delay
            got, executions, took = together([Request(variant.name, 900 + i, 10) for i in range(2)])
            assert [g.value for g in got] == [10, 11] and executions == 1, (got, executions)
            assert took >= 0.9, took  # two of four: the oldest waits out the queue delay
        finally:
            for s in streams:
                s.close()


@pytest.mark.parametrize("strategy", ["direct", "oldest"])
def test_a_running_sequence_answers_however_short_its_requests_timeout(triton, strategy):
    """The per-request timeout is checked only while a sequence waits in the backlog (core
    r24.10): once it holds a slot, a request with a 1 us timeout is still answered, under both
    strategies, as the fuzzer's continue/end/restart rules assume."""
    variant = next(v for v in python_variants() if v.strategy == strategy and v.flavour == "corrid"
                   and v.batching and not (v.ensemble or v.decoupled) and v.corrid_type == "uint64")
    program = [((885, 2), dict(start=True)), ((885, 3), dict(timeout_us=1)), ((885, 4), dict(timeout_us=1)),
               ((885, 5), dict(start=True, timeout_us=1)), ((885, 6), dict(end=True, timeout_us=1))]
    model = _answers_as_the_model_says(triton, variant.name, program, GrpcClient(triton.grpc_url))
    assert not model.is_live(("u", 885))


def test_a_start_pipelined_behind_an_end_on_its_id_can_run_ahead_of_it_under_oldest(triton):
    """Why no rule pipelines a START behind an END on its id, and a rule that reuses ids at once
    must wait for the END's answer on a model given the id (a CORRID control): under the oldest
    strategy, with other clients keeping the model busy, a START+END on id X with a START on X
    pipelined right behind it on one stream is sometimes run after that START (in one batch or a
    later one), so the accumulator, keyed by the CORRID, forgets what the START set: the next
    request sums onto 0. No promise covers two sequences of one id (the batcher owes them no
    order); sent once the END's answer came, the START always keeps its state (the END ran). Seen
    live on 2.51: 6-16 in 100 pipelined, 0 in 100 after the answer."""
    import threading

    variant = next(v for v in default_variants() if v.strategy == "oldest" and v.slots == 4 and v.flavour == "corrid"
                   and "END" in v.controls and v.corrid_type == "uint64")
    name, dtype = variant.name, variant.dtype.upper()
    stop = threading.Event()

    def keep_busy(k):
        client = StreamClient(triton.grpc_url)
        try:
            for i in range(10**6):
                if stop.is_set():
                    break
                boxes = [client.send(Request(name, 3 * 10**9 + 10**6 * k + 3 * i + j, 1, start=True, end=True,
                                             dtype=dtype)) for j in range(3)]
                for box in boxes:
                    StreamClient.wait(box, 5.0)
        finally:
            client.close(cancel_requests=True, timeout_s=5)

    def then_on(client, seq_id, pipelined: bool):
        first = client.send(Request(name, seq_id, 2, start=True, end=True, dtype=dtype))
        if not pipelined:
            assert StreamClient.wait(first, 5.0).value == 2
        second = client.send(Request(name, seq_id, 3, start=True, dtype=dtype))
        if pipelined:
            assert StreamClient.wait(first, 5.0).value == 2
        assert StreamClient.wait(second, 5.0).value == 3
        return StreamClient.wait(client.send(Request(name, seq_id, 4, end=True, dtype=dtype)), 5.0).value

    load = [threading.Thread(target=keep_busy, args=(k,)) for k in (1, 2)]
    for t in load:
        t.start()
    client = StreamClient(triton.grpc_url)
    try:
        after_answer = [then_on(client, 4 * 10**9 + i, pipelined=False) for i in range(30)]
        pipelined = []
        while 4 not in pipelined and len(pipelined) < 500:
            pipelined.append(then_on(client, 5 * 10**9 + len(pipelined), pipelined=True))
    finally:
        stop.set()
        for t in load:
            t.join()
        client.close(cancel_requests=True, timeout_s=5)
    assert after_answer == [7] * 30, after_answer
    assert 4 in pipelined, f"the START kept its state in all {len(pipelined)} pipelined tries"
    assert set(pipelined) <= {4, 7}, pipelined
    print(f"\npipelined: the START's state lost after {len(pipelined)} tries")


@pytest.mark.parametrize("release", [None, "0.4.0"], ids=["2.51", "2.36"])
def test_two_servers_started_at_once_each_get_their_own_stub_regions(tmp_path, release):
    """Builds up to 2.36 name a stub's shared memory by a counter from 1: two servers started at
    once (pytest -n 2 in CI) took the same names and both died in start-up, one with a
    boost lock_exception, the other not ready after 60 s, until each server got a prefix of its own."""
    from concurrent.futures import ThreadPoolExecutor

    from fuzz import leftovers

    from .release_installs import embedded_install

    wide = Variant("corrid", "direct", 4, 2, controls=("START", "END", "READY", "CORRID"))
    servers = []
    for k in range(2):
        write_model(wide, tmp_path / f"models{k}")
        servers.append(EmbeddedTriton(tmp_path / f"models{k}", workdir=tmp_path / f"w{k}", **embedded_install(release)))
    # A server dies with the thread that started it (PR_SET_PDEATHSIG): the pool outlives the test.
    pool = ThreadPoolExecutor(2)
    try:
        list(pool.map(EmbeddedTriton.start, servers))
        regions = [leftovers.stub_regions(s.process.pid) for s in servers]
        assert all(len(r) == 2 for r in regions) and not set(regions[0]) & set(regions[1]), regions
        for s in servers:
            spec, client = ModelSpec.fetch(s, wide.name), GrpcClient(s.grpc_url)
            answers = [client.infer(spec.request(7, value, start=value == 1, end=value == 3)) for value in (1, 2, 3)]
            client.close()
            assert [a.value for a in answers] == [1, 3, 6], answers
    finally:
        for s in servers:
            s.stop()
        pool.shutdown()


def test_a_start_up_that_lost_a_port_to_another_process_is_told_apart():
    """The ports are found free, then bound by tritonserver a moment later: another process can
    take one in between. Those start-ups are retried on new ports; other failures are not."""
    from fuzz.harness.server import lost_port_race

    assert lost_port_race('E1204 main.cc:293] "failed to start Metrics service: Unavailable - '
                          "Socket '127.0.0.1:36173' already in use \"")
    assert lost_port_race("failed to listen on 127.0.0.1:8001: Address already in use")
    assert not lost_port_race("model 'm' failed to load: unexpected shape")
