"""Server restart and model reload, the faults a nemesis can inflict on the server itself."""
import signal
import subprocess
import time

import pytest

from fuzz.harness.client import GrpcClient, Request, StreamClient
from fuzz.harness.server import EmbeddedTriton, TritonError
from modelgen import Variant, write_model

START_ERROR = ("inference request for sequence {id} to model '{model}' must specify the START flag on the "
               "first request of the sequence")
A = Variant("corrid", "direct", 1, 1, controls=("START", "END", "READY", "CORRID"))
B = Variant("slot", "direct", 2, 1, controls=("START", "END", "READY"))
# The same model with a long idle timeout, so that its sequence outlives a reload of A (~1.5 s).
B_LONG = Variant("slot", "direct", 2, 1, controls=("START", "END", "READY"), idle_us=10_000_000)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def repo(tmp_path):
    for v in (A, B):
        write_model(v, tmp_path / "models")
    return tmp_path / "models"


@pytest.fixture
def long_repo(tmp_path):
    for v in (A, B_LONG):
        write_model(v, tmp_path / "long-models")
    return tmp_path / "long-models"


def gone(client, model, seq_id) -> bool:
    """The sequence is not live: a request without START gets the exact START-flag error."""
    outcome = client.infer(Request(model, seq_id, 1))
    assert (outcome.status, outcome.message) == ("INVALID_ARGUMENT", START_ERROR.format(id=seq_id, model=model)), outcome
    return True


def sums(client, model, seq_id, values):
    return [client.infer(Request(model, seq_id, v, start=(i == 0), end=(i == len(values) - 1))).value
            for i, v in enumerate(values)]


def stubs(server) -> list[int]:
    out = subprocess.run(["pgrep", "-g", str(server.process.pid), "-f", "triton_python_backend_stub"],
                         capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


@pytest.mark.parametrize("graceful", [True, False], ids=["sigterm", "sigkill"])
def test_restart_forgets_every_sequence_and_keeps_the_ports(repo, tmp_path, graceful):
    with EmbeddedTriton(repo, workdir=tmp_path / "w") as server:
        client = GrpcClient(server.grpc_url)
        assert client.infer(Request(A.name, 5, 10, start=True)).value == 10
        assert client.infer(Request(B.name, 6, 20, start=True)).value == 20
        ports, version, old_pid = (server.grpc_port, server.http_port), server.version, server.process.pid
        server.restart(graceful=graceful)
        assert (server.grpc_port, server.http_port) == ports and not server.ports_changed
        assert server.process.pid != old_pid and server.version == version and server.restarts == 1
        # The client made before the restart reaches the new server on the same address.
        assert gone(client, A.name, 5) and gone(client, B.name, 6)
        assert sums(client, A.name, 5, [1, 2, 3]) == [1, 3, 6]
        assert sums(client, B.name, 6, [4, 4]) == [4, 8]
        assert (server.workdir / "tritonserver.log.1").is_file()  # the first server's log is kept


def test_restart_of_a_server_never_started_is_refused(repo, tmp_path):
    with pytest.raises(TritonError, match="needs a server that was started"):
        EmbeddedTriton(repo, workdir=tmp_path / "w").restart()


def test_reload_forgets_that_models_sequences_only(long_repo, tmp_path):
    with EmbeddedTriton(long_repo, workdir=tmp_path / "w", model_control_mode="explicit",
                        load_models=[A.name, B.name]) as server:
        client = GrpcClient(server.grpc_url)
        assert client.infer(Request(A.name, 1, 5, start=True)).value == 5
        assert client.infer(Request(B.name, 2, 7, start=True)).value == 7
        server.reload_model(A.name)
        assert gone(client, A.name, 1)
        assert client.infer(Request(B.name, 2, 1)).value == 8  # B's sequence lives on
        assert sums(client, A.name, 3, [2, 3]) == [2, 5]
        assert client.infer(Request(B.name, 2, 1, end=True)).value == 9


def test_every_reload_forgets_the_sequences(repo, tmp_path):
    """Triton skips loading a loaded model whose files did not change (the second raw load below
    keeps the sequence); reload_model touches the files so that each reload is real."""
    with EmbeddedTriton(repo, workdir=tmp_path / "w", model_control_mode="explicit",
                        load_models=[A.name]) as server:
        client = GrpcClient(server.grpc_url)
        server.client().load_model(A.name)  # the first load after start-up does reload
        assert client.infer(Request(A.name, 5, 2, start=True)).value == 2
        server.client().load_model(A.name)  # unchanged: a no-op
        assert client.infer(Request(A.name, 5, 1)).value == 3
        for _ in range(2):
            server.reload_model(A.name)
            assert gone(client, A.name, 5)
            assert client.infer(Request(A.name, 5, 4, start=True)).value == 4


def test_unload_then_load_again(long_repo, tmp_path):
    with EmbeddedTriton(long_repo, workdir=tmp_path / "w", model_control_mode="explicit",
                        load_models=[A.name, B.name]) as server:
        client = GrpcClient(server.grpc_url)
        assert client.infer(Request(A.name, 1, 5, start=True)).value == 5
        assert client.infer(Request(B.name, 2, 7, start=True)).value == 7
        server.unload_model(A.name)
        assert server.load_models == [B.name]
        missing = client.infer(Request(A.name, 1, 1))
        assert missing.status == "NOT_FOUND" and f"Request for unknown model: '{A.name}'" in missing.message
        assert client.infer(Request(B.name, 2, 1)).value == 8
        server.load_model(A.name)
        assert gone(client, A.name, 1)
        assert sums(client, A.name, 1, [4, 4]) == [4, 8]
        assert client.infer(Request(B.name, 2, 1, end=True)).value == 9
        # restart() loads what was loaded last, not what was loaded at start-up.
        server.unload_model(B.name)
        server.restart()
        assert client.infer(Request(A.name, 9, 1, start=True, end=True)).value == 1
        assert client.infer(Request(B.name, 9, 1, start=True)).status == "NOT_FOUND"


def test_model_control_needs_explicit_mode(repo, tmp_path):
    with pytest.raises(ValueError, match="explicit"):
        EmbeddedTriton(repo, load_models=[A.name])
    server = EmbeddedTriton(repo, workdir=tmp_path / "w")
    with pytest.raises(TritonError, match="needs model_control_mode='explicit'"):
        server.reload_model(A.name)


def test_an_open_stream_keeps_an_unloaded_model_alive(repo, tmp_path):
    """Observed on 2.51.0 (pinned so that a change is noticed): after a gRPC stream has sent a
    request to a model, unloading (or reloading) the model retires it for new requests, but the
    old copy and its stub stay until the stream closes, and SIGTERM waits for them (we SIGKILL
    after stop_grace). Sequences are not what holds it: an ENDed one does the same."""
    with EmbeddedTriton(repo, workdir=tmp_path / "w", model_control_mode="explicit",
                        load_models=[A.name]) as server:
        stream = StreamClient(server.grpc_url)
        try:
            assert stream.infer(Request(A.name, 1, 5, start=True, end=True)).value == 5
            assert len(stubs(server)) == 1
            server.unload_model(A.name)
            time.sleep(2.0)
            assert len(stubs(server)) == 1, "the unloaded model's stub is gone while the stream is open"
        finally:
            stream.close()
        deadline = time.monotonic() + 10
        while stubs(server) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert stubs(server) == []


def test_a_server_a_known_divergence_killed_is_started_again_for_the_models_after_it(repo, tmp_path):
    """`pytest fuzz/`: a campaign that met a known crash (iterative-cancel-crash) passes, and the
    embedded server it killed is started again, so that the next model's campaign has one; a
    death that no known divergence explains is left as it is (the run stops on it)."""
    from types import SimpleNamespace

    from fuzz.campaign import Failure
    from fuzz.test_fuzz import start_again_after_a_known_crash

    def died(known):
        return SimpleNamespace(model=A.name, failures=(Failure("server_alive", "died", 1.0, 3, (),
                                                               expected_divergence=known),))

    with EmbeddedTriton(repo, workdir=tmp_path / "w") as server:
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(10)
        start_again_after_a_known_crash(server, died(None))
        with pytest.raises(TritonError):
            server.check_alive()
        start_again_after_a_known_crash(server, died("iterative-cancel-crash"))
        server.check_alive()
        assert GrpcClient(server.grpc_url).infer(Request(A.name, 5, 2, start=True, end=True)).value == 2
