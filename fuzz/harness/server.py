"""The Triton the fuzzer talks to: the embedded one from nvidia-pytriton, or an external one.

EmbeddedTriton finds tritonserver, the Python backend and the stub for this Python inside an
installed nvidia-pytriton, starts the server on a model repository, waits until the server and
every model are ready, and stops it so that no tritonserver or stub process outlives it.
ExternalTriton wraps a server someone else runs. Both answer `check_alive()`, which turns a dead
server into a ServerDied finding (with the log tail, where there is a log) instead of a hang.
"""
from __future__ import annotations

import atexit
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import weakref
from pathlib import Path

import attrs

from ..checker.server_stats import Snapshot
from ..values import CONTROL_TIMEOUT_S
from .. import leftovers
from . import crash

LOG_TAIL_LINES = 40
# Complaints every CPU-only start makes; they are not why anything failed.
_HARMLESS = re.compile(r"CudaDriverHelper|NVML|DCGM|CUDA driver")
_PR_SET_PDEATHSIG = 1



class TritonError(Exception):
    """Base of everything the harness reports."""


class InstallNotFound(TritonError):
    pass


class ServerStartError(TritonError):
    pass


def log_block(tail: str) -> str:
    """The server log's last lines, set off for a message ("" when there are none)."""
    return f"\n--- last lines of the server log ---\n{tail}" if tail else ""


class ServerDied(TritonError):
    """The server process ended (or stopped answering) while the fuzzer was using it: a finding.
    `reason` is the one line; the message adds the server log's last lines, where there is a log."""

    def __init__(self, reason: str, log_tail: str = ""):
        self.reason, self.log_tail = reason, log_tail
        super().__init__(reason + log_block(log_tail))


class Terminated(KeyboardInterrupt):
    """SIGTERM: the run stops, like Ctrl-C. A KeyboardInterrupt, because Hypothesis takes any
    Exception or SystemExit from a test for a failure, shrinks it against the server the harness
    has just stopped, and the corpus would get a finding that never happened."""


def stopping() -> bool:
    """True once this run was told to stop (SIGTERM, SIGINT), here or in the process that shares
    its stop marker (an xdist controller, which stops the server its workers use): nothing seen
    from a server now is a finding, and no example may go on checking (a drain in a teardown would)."""
    return bool(_STOP_REASON[0]) or (_STOP_MARKER[0] is not None and _STOP_MARKER[0].exists())


def share_stop(marker: Path | None) -> None:
    """Processes given one marker path stop together: a stop here creates it (before any server
    is stopped), and stopping() is true in each of them once it exists."""
    _STOP_MARKER[0] = Path(marker) if marker is not None else None


def stop_reason() -> str:
    """Why this process was told to stop ("" if it was not)."""
    return _STOP_REASON[0]


def mark_stopped(reason: str) -> None:
    """Stops the run from here on (a signal handler's first step, or pytest-timeout's alarm); the
    first reason given is the one kept."""
    _STOP_REASON[0] = _STOP_REASON[0] or reason
    if _STOP_MARKER[0] is not None:
        try:
            _STOP_MARKER[0].touch()
        except OSError:
            pass


@attrs.frozen
class TritonInstall:
    """Where the pieces of one Triton build live inside an nvidia-pytriton installation."""

    server_bin: Path
    python_backend: Path  # folder with libtriton_python.so and triton_python_backend_utils.py
    stub: Path  # triton_python_backend_stub for the running Python version
    libs: Path  # nvidia_pytriton.libs: the shared libraries the server and the stub link to

    @classmethod
    def find(cls, site_packages: str | os.PathLike | None = None) -> "TritonInstall":
        """The install in `site_packages` (a folder holding pytriton/ and nvidia_pytriton.libs/,
        e.g. from `pip install --target DIR nvidia-pytriton==0.5.0`), else the imported one."""
        if site_packages is None:
            try:
                import pytriton
            except ImportError:
                raise InstallNotFound("nvidia-pytriton is not installed: pip install nvidia-pytriton") from None
            root = Path(pytriton.__file__).resolve().parent.parent
        else:
            root = Path(site_packages).resolve()
        server_root = root / "pytriton" / "tritonserver"
        pyver = f"{sys.version_info.major}.{sys.version_info.minor}"
        install = cls(
            server_bin=server_root / "bin" / "tritonserver",
            python_backend=server_root / "backends" / "python",
            stub=server_root / "python_backend_stubs" / pyver / "triton_python_backend_stub",
            libs=root / "nvidia_pytriton.libs",
        )
        for what, path in [("tritonserver binary", install.server_bin),
                           ("Python backend", install.python_backend / "libtriton_python.so"),
                           (f"Python {pyver} backend stub", install.stub),
                           ("shared libraries", install.libs)]:
            if not path.exists():
                stubs = server_root / "python_backend_stubs"
                have = sorted(p.name for p in stubs.iterdir()) if stubs.is_dir() else []
                hint = f" (stubs present for Python {', '.join(have)})" if "stub" in what and have else ""
                raise InstallNotFound(f"no {what} at {path}{hint}; is {root} an nvidia-pytriton installation?")
        return install

    def make_backend_dir(self, into: Path) -> Path:
        """A backend directory whose python/ holds the backend and this Python's stub."""
        python_dir = Path(into) / "python"
        python_dir.mkdir(parents=True, exist_ok=True)
        for src in [*self.python_backend.iterdir(), self.stub]:
            if src.is_file():
                link = python_dir / src.name
                if not link.exists():
                    link.symlink_to(src)
        return Path(into)


def digest_log(text: str, lines: int = LOG_TAIL_LINES) -> str:
    """The server's error lines first (Triton prints them above its option tables, where a plain
    tail misses them), then the last lines of the log without the tables."""
    all_lines = text.splitlines()
    errors = [ln for ln in all_lines
              if (ln[:1] == "E" and ln[1:5].isdigit() or ln.startswith(("error:", "[libprotobuf ERROR")))
              and not _HARMLESS.search(ln)]
    prose = [ln for ln in all_lines if ln.strip() and not ln.startswith(("+", "|"))]
    parts = []
    if errors:
        parts += ["errors:", *errors[-lines:], "tail:"]
    parts += prose[-lines:]
    return "\n".join(parts)


def free_ports(count: int, avoid=()) -> list[int]:
    """`count` distinct free ports. They are held open together while chosen: one at a time,
    the OS may hand the same port out twice (seen: HTTP and metrics on one port)."""
    held, ports = [], []
    try:
        while len(ports) < count:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            held.append(s)
            port = s.getsockname()[1]
            if port not in avoid:
                ports.append(port)
    finally:
        for s in held:
            s.close()
    return ports


def lost_port_race(start_error: str) -> bool:
    """Whether a start-up failed on a port another process took after it was found free: gRPC and
    HTTP say "address already in use", the metrics service "Socket '127.0.0.1:N' already in use"
    (CI met the latter, and a module of tests lost its server)."""
    return re.search(r"(address|socket '[^']*') already in use", start_error.lower()) is not None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return True
    return False


def _die_with_parent():
    # Runs in the child between fork and exec: if the fuzzer is killed (even with SIGKILL) the
    # kernel sends the server SIGKILL too; the stubs notice their parent is gone and exit.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


class _Base:
    grpc_url: str
    http_url: str | None
    # unary calls the deadlines fault gave up on this server since it (re)started: a death seen
    # later is what such calls do (issue 7368), even where it comes examples after them
    calls_given_up: int = 0
    # the same for a decoupled model's calls, cancelled with their streams
    streams_given_up: int = 0

    def client(self):
        import tritonclient.grpc as grpcclient

        return grpcclient.InferenceServerClient(self.grpc_url)

    def server_version(self) -> str:
        return self.client().get_server_metadata(client_timeout=CONTROL_TIMEOUT_S).version

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return ""

    def statistics(self, model: str) -> Snapshot | None:
        """The statistics extension's figures for `model`, read at once (None when they cannot be read)."""
        stats = self._model_stats(model)
        return None if stats is None else Snapshot.of(stats)

    def execution_count(self, model: str) -> int | None:
        """How many batches the server has run for `model` (None when it will not say)."""
        snap = self.statistics(model)
        return None if snap is None else snap.execution_count

    def _model_stats(self, model: str) -> list | None:
        """The statistics extension's model_stats of `model` (None when they cannot be read)."""
        try:
            return list(self.client().get_inference_statistics(model, client_timeout=CONTROL_TIMEOUT_S).model_stats)
        except Exception:
            return None

    def batch_sizes(self, model: str) -> dict | None:
        """How many executions the server has run for `model` at each batch size (its batch_stats;
        None when it will not say)."""
        snap = self.statistics(model)
        return None if snap is None else dict(snap.batches)

    def executions_and_inferences(self, model: str) -> tuple | None:
        """(execution_count, inference_count) of `model`, read at once (None when unreadable)."""
        snap = self.statistics(model)
        return None if snap is None else (snap.execution_count, snap.inference_count)

    def check_alive(self, within_s: float = 0.0) -> None:
        """Raises ServerDied if the server is gone. `within_s`: a server seen live that recently
        counts as live (a server that must be asked over the network is asked less often)."""
        raise NotImplementedError

    def wait_models_ready(self, names, timeout: float = 30.0) -> None:
        """Waits for every named model to be READY; a model that fails to load ends the wait."""
        client = self.client()
        deadline = time.monotonic() + timeout
        pending = set(names)
        while pending:
            self.check_alive()
            index = {m.name: m for m in client.get_model_repository_index(client_timeout=CONTROL_TIMEOUT_S).models}
            for name in list(pending):
                entry = index.get(name)
                if entry is not None and entry.state == "READY":
                    pending.discard(name)
                elif entry is not None and entry.state == "UNAVAILABLE" and entry.reason:
                    raise ServerStartError(f"model {name!r} failed to load: {entry.reason}{self._tail_block()}")
            if pending and time.monotonic() > deadline:
                missing = {n: (index[n].state if n in index else "not in repository") for n in sorted(pending)}
                raise ServerStartError(f"models not ready after {timeout:.0f} s: {missing}{self._tail_block()}")
            if pending:
                time.sleep(0.1)

    def _tail_block(self) -> str:
        return log_block(self.log_tail())


def explicit_control(models_dir) -> dict:
    """EmbeddedTriton's arguments for explicit model control with every model of the repository
    loaded at start: it serves what the default mode serves, and a model can be reloaded."""
    names = sorted(p.name for p in Path(models_dir).iterdir() if (p / "config.pbtxt").is_file())
    return dict(model_control_mode="explicit", load_models=names)


class EmbeddedTriton(_Base):
    """A tritonserver process this harness starts and owns.

    Use as a context manager, or call start() and stop(). stop() is also registered with atexit,
    and SIGTERM kills the servers at once (stop() reaps them), so an interrupted run leaves no
    server or stub behind.
    """

    def __init__(self, model_repository, *, install: TritonInstall | None = None, workdir=None,
                 grpc_port: int | None = None, http_port: int | None = None,
                 model_control_mode: str | None = None, load_models=(), extra_args=(), env=None,
                 startup_timeout: float = 60.0, stop_grace: float = 10.0):
        self.model_repository = Path(model_repository).resolve()
        self.install = install or TritonInstall.find()
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="triton-seqfuzz-"))
        if workdir is None:  # ours: its log and backends go when this process ends (a run left 250 of them)
            _OWN_WORKDIRS.append(self.workdir)
        self._fixed_ports = (grpc_port, http_port)
        self.model_control_mode = model_control_mode
        # Under explicit model control: what is loaded at start-up (and again on restart());
        # load_model() and unload_model() keep it up to date.
        self.load_models = list(load_models)
        if self.load_models and model_control_mode != "explicit":
            raise ValueError("load_models needs model_control_mode='explicit'")
        self.restarts = 0
        self.extra_args = tuple(extra_args)
        self.env = dict(env or {})
        self.startup_timeout = startup_timeout
        self.stop_grace = stop_grace
        self.process: subprocess.Popen | None = None
        self.load_bases: dict[str, int] = {}  # the running server's mapped files' load addresses
        self.log_path = self.workdir / "tritonserver.log"
        self.grpc_url = self.http_url = None
        self.grpc_port = self.http_port = self.metrics_port = None
        self.ports_changed = False
        self.version: str | None = None

    # -- lifecycle ----------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self) -> "EmbeddedTriton":
        if self.process is not None:
            raise TritonError("server already started")
        if not (self.model_repository / ".").is_dir():
            raise ServerStartError(f"model repository {self.model_repository} is not a folder")
        leftovers.reap()  # what an earlier run, killed before it could stop its servers, left
        self.calls_given_up = self.streams_given_up = 0
        grpc_port, http_port = self._fixed_ports
        for name, port in [("gRPC", grpc_port), ("HTTP", http_port)]:
            if port is not None and port_in_use(port):
                raise ServerStartError(f"{name} port {port} is already in use; pick another or leave it unset "
                                       "for a free one")
        # A free port found now can be taken before the server binds it; retry on that race only.
        for attempt in range(3):
            fresh = iter(free_ports(3, avoid=(grpc_port, http_port)))
            self._launch(grpc_port or next(fresh), http_port or next(fresh), next(fresh))
            try:
                self._wait_ready()
                return self
            except ServerStartError as err:
                self.stop()
                if lost_port_race(str(err)) and None in self._fixed_ports and attempt < 2:
                    continue
                raise
        raise AssertionError("unreachable")

    def _launch(self, grpc_port: int, http_port: int, metrics_port: int) -> None:
        backend_dir = self.install.make_backend_dir(self.workdir / "backends")
        cmd = [str(self.install.server_bin),
               f"--model-repository={self.model_repository}",
               f"--backend-directory={backend_dir}",
               "--grpc-address=127.0.0.1", f"--grpc-port={grpc_port}",
               "--http-address=127.0.0.1", f"--http-port={http_port}",
               "--metrics-address=127.0.0.1", f"--metrics-port={metrics_port}",
               "--allow-cpu-metrics=false", "--allow-gpu-metrics=false",
               "--log-verbose=0"]
        if self.model_control_mode:
            cmd.append(f"--model-control-mode={self.model_control_mode}")
        cmd.extend(f"--load-model={name}" for name in self.load_models)
        cmd.extend(self.extra_args)
        if not any("shm-region-prefix-name" in arg for arg in self.extra_args):
            cmd.append(f"--backend-config=python,shm-region-prefix-name={self._region_prefix()}")
        env = os.environ.copy()
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in [str(self.install.libs), env.get("LD_LIBRARY_PATH", "")] if p)
        # The stub embeds Python and imports model.py in the interpreter it finds on PATH
        # (PYTHONPATH is not honoured), so put this environment's interpreter first: numpy and
        # anything the model imports must come from here.
        scripts = sysconfig.get_path("scripts")
        env["PATH"] = os.pathsep.join([scripts, os.path.dirname(sys.executable), env.get("PATH", "")])
        env.update(self.env)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")
        try:
            self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=env, start_new_session=True, preexec_fn=_die_with_parent)
        finally:
            log.close()
        _LIVE.add(self)
        STARTED_GROUPS.append(self.process.pid)
        leftovers.register(self.process.pid)
        self.grpc_port, self.http_port, self.metrics_port = grpc_port, http_port, metrics_port
        self.grpc_url = f"127.0.0.1:{grpc_port}"
        self.http_url = f"127.0.0.1:{http_port}"

    def _region_prefix(self) -> str:
        """A shared-memory name prefix no other server uses. Builds up to 2.36 name a stub's region
        by a counter from 1, so two servers at once (pytest -n 2) took the same names and one's
        stub found its region unlinked by the other's ("Unable to initialize shared memory key
        ... No such file or directory", then a double free). It starts with the default prefix,
        so the stub clean-up still knows these regions."""
        return f"{leftovers.REGION_PREFIX.decode()}{os.getpid()}_{id(self):x}_{self.restarts}_"

    def _wait_ready(self) -> None:
        import tritonclient.grpc as grpcclient

        client = grpcclient.InferenceServerClient(self.grpc_url)
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self.process.poll() is not None:
                raise ServerStartError(f"tritonserver exited with status {self.process.returncode} during "
                                       f"start-up (repository {self.model_repository}){self._tail_block()}")
            try:
                if client.is_server_ready():
                    break
            except Exception:
                pass
            if time.monotonic() > deadline:
                raise ServerStartError(f"tritonserver not ready after {self.startup_timeout:.0f} s"
                                       f"{self._tail_block()}")
            time.sleep(0.1)
        self.version = client.get_server_metadata().version
        if not self.model_control_mode or self.model_control_mode == "none":
            names = [m.name for m in client.get_model_repository_index().models]
        else:
            names = self.load_models
        self.wait_models_ready(names, timeout=max(1.0, deadline - time.monotonic()))
        # where its files are mapped, to read a crash's backtrace by (crash.py)
        self.load_bases = crash.load_bases(self.process.pid)

    def stop(self, graceful: bool = True) -> None:
        """SIGTERM to the server's process group, SIGKILL after the grace period; graceful=False,
        or once this run was told to stop (nothing the server does then is a finding, and the
        user waits on it), SIGKILL at once. The Python-backend stubs' shared memory is removed
        too: a killed stub leaves its region in /dev/shm. Idempotent. A stop (SIGTERM, Ctrl-C)
        that lands in the grace period still kills it, and it stays this run's to reap (the
        teardown's or atexit's stop) until it is reaped."""
        proc = self.process
        if proc is None:
            return
        regions = leftovers.stub_regions(proc.pid)
        try:
            if graceful and not stopping():
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                try:
                    proc.wait(timeout=self.stop_grace)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            _kill_group(proc, regions)
        _reap(proc)
        self.process = None
        _LIVE.discard(self)
        leftovers.unregister(proc.pid)

    def kill_from_signal_handler(self) -> None:
        """SIGKILL to the server's process group and its stubs' regions unlinked, without reaping
        it: a signal handler runs between two bytecodes of the main thread, which may be inside
        this Popen's poll() holding its waitpid lock, and a wait() here would then block forever
        (a SIGTERM'ed run once hung so in CI). stop(), later and outside the handler, reaps it."""
        if self.process is not None:
            _kill_group(self.process, leftovers.stub_regions(self.process.pid))

    def restart(self, *, graceful: bool = True, port_wait: float = 10.0) -> "EmbeddedTriton":
        """Stop the server and start it again on the same repository (and, under explicit model
        control, the same loaded models). It comes back on the same ports, so clients and proxies
        aimed at them reach the new server, unless another process took a port meanwhile: then,
        where the ports were not fixed by the caller, it picks fresh ones (grpc_url and http_url
        change) and `ports_changed` says so. Every sequence the old server held is gone.

        graceful: SIGTERM, as stop() does. Triton then waits for its live sequences to end or
        idle out (they count as in-flight inferences), up to stop_grace. graceful=False: SIGKILL
        at once, a crash."""
        if self.grpc_url is None:
            raise TritonError("restart() needs a server that was started")
        ports = (self.grpc_port, self.http_port, self.metrics_port)
        self.stop(graceful=graceful)
        self._keep_log()
        deadline = time.monotonic() + port_wait
        while any(port_in_use(p) for p in ports) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.restarts += 1
        self.calls_given_up = self.streams_given_up = 0  # they count what this server process saw
        self.ports_changed = any(port_in_use(p) for p in ports)
        if self.ports_changed:
            taken = [p for p in ports if port_in_use(p)]
            if any(self._fixed_ports):
                raise ServerStartError(f"cannot restart on fixed port(s): {taken} still in use after {port_wait} s")
            return self.start()
        self._launch(*ports)
        try:
            self._wait_ready()
        except ServerStartError:
            self.stop()
            raise
        return self

    def _keep_log(self) -> None:
        """The stopped server's log moves to tritonserver.log.<n>; the next one starts afresh."""
        if self.log_path.exists():
            n = 1
            while self.log_path.with_name(f"{self.log_path.name}.{n}").exists():
                n += 1
            self.log_path.rename(self.log_path.with_name(f"{self.log_path.name}.{n}"))

    # -- model control (model_control_mode="explicit") ------------------------------------------
    def _need_explicit(self, what: str) -> None:
        if self.model_control_mode != "explicit":
            raise TritonError(f"{what} needs model_control_mode='explicit' (this server runs "
                              f"{self.model_control_mode or 'none'})")

    def load_model(self, name: str, timeout: float = 60.0) -> None:
        """Load `name` through the repository API, or reload it if it is loaded: Triton loads a
        new copy and retires the old one. Returns when the model is READY."""
        self._need_explicit("load_model")
        from tritonclient.utils import InferenceServerException

        self.check_alive()
        try:
            self.client().load_model(name, client_timeout=timeout)
        except InferenceServerException as err:
            raise TritonError(f"loading model {name!r} failed: {err.message()}{self._tail_block()}") from None
        self.wait_models_ready([name], timeout=timeout)
        self.load_bases = crash.load_bases(self.process.pid)  # (a backend's library may load again elsewhere)
        if name not in self.load_models:
            self.load_models.append(name)

    def reload_model(self, name: str, timeout: float = 60.0) -> None:
        """Load a new copy of `name`, retiring the old one and its sequences: unload, then load.
        A load of a loaded model reloads it only when its files changed (seen live on 2.51: a
        second load of an unchanged model is a no-op that keeps its sequences). Touching its
        files made it reload, as far as was seen, but rests on how Triton compares them (a test
        of a reload right after start-up failed once in a way a kept copy would explain); after
        an unload a load always starts a new copy, and the repository is left alone."""
        self.unload_model(name, timeout)
        self.load_model(name, timeout)

    def unload_model(self, name: str, timeout: float = 60.0) -> None:
        """Unload `name` through the repository API and wait until it no longer serves."""
        self._need_explicit("unload_model")
        from tritonclient.utils import InferenceServerException

        self.check_alive()
        client = self.client()
        try:
            client.unload_model(name, client_timeout=timeout)
        except InferenceServerException as err:
            raise TritonError(f"unloading model {name!r} failed: {err.message()}{self._tail_block()}") from None
        if name in self.load_models:
            self.load_models.remove(name)
        deadline = time.monotonic() + timeout
        while client.is_model_ready(name):
            self.check_alive()
            if time.monotonic() > deadline:
                raise TritonError(f"model {name!r} still ready {timeout:.0f} s after unload{self._tail_block()}")
            time.sleep(0.01)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def check_alive(self, within_s: float = 0.0) -> None:
        if self.process is None:
            raise ServerDied("the embedded tritonserver is not running (stopped or never started)")
        if self.process.poll() is not None:
            log = self._log_text()  # read once: the crash site and the tail
            raise ServerDied(f"tritonserver (pid {self.process.pid}) died with status {self.process.returncode}"
                             f"{self._crash_site(log)} while the fuzzer was using it", digest_log(log, LOG_TAIL_LINES))

    def _crash_site(self, log: str) -> str:
        """' (SIGSEGV in f (tritonserver+0x...) <- ...)' where its log shows the crash (crash.py),
        ' (SIGKILL)' for another signal; '' for an exit."""
        code = self.process.returncode
        site = crash.where(log, self.load_bases)
        return f" ({site})" if site else f" ({crash.signal_name(-code)})" if code < 0 else ""

    def _log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return digest_log(self._log_text(), lines)

    def __repr__(self):
        state = f"running at {self.grpc_url}" if self.running else "stopped"
        return f"<EmbeddedTriton {self.version or '?'} {state}, repository {self.model_repository}>"


class ExternalTriton(_Base):
    """A server someone else runs. check_alive() asks it; it cannot be stopped or restarted here."""

    def __init__(self, grpc_url: str, http_url: str | None = None, *, timeout: float = 10.0):
        self.grpc_url = grpc_url.removeprefix("grpc://")
        self.http_url = http_url.removeprefix("http://") if http_url else None
        self.version = None
        self._live_client = None  # kept: a channel per liveness check cost a step 15 % of its time
        self._live_at = float("-inf")  # when it last said it was live
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.client().is_server_live():
                    break
            except Exception as err:
                if time.monotonic() > deadline:
                    raise ServerStartError(f"no Triton answers at gRPC {self.grpc_url}: {err}") from None
            time.sleep(0.2)
        self.version = self.server_version()

    def check_alive(self, within_s: float = 0.0) -> None:
        now = time.monotonic()
        if now - self._live_at <= within_s:
            return
        if self._live_client is None:
            self._live_client = self.client()
        try:
            live = self._live_client.is_server_live(client_timeout=CONTROL_TIMEOUT_S)
        except Exception as err:
            raise ServerDied(f"the Triton at {self.grpc_url} stopped answering: {err}") from None
        if not live:
            raise ServerDied(f"the Triton at {self.grpc_url} reports it is not live")
        self._live_at = now

    def stop(self) -> None:
        if self._live_client is not None:  # the server is someone else's: only our channel closes
            self._live_client.close()
            self._live_client = None

    def __repr__(self):
        return f"<ExternalTriton {self.version} at {self.grpc_url}>"


# Process groups of every server this process started (the tests check none outlives them).
STARTED_GROUPS: list = []

# Servers still running when the interpreter exits or is told to terminate get stopped.
_LIVE: "weakref.WeakSet[EmbeddedTriton]" = weakref.WeakSet()


def _kill_group(proc: subprocess.Popen, regions) -> None:
    """SIGKILL to a server's process group (its stubs share it: none may linger), and the stubs'
    shared-memory `regions` unlinked (a killed stub leaves its own in /dev/shm)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    leftovers.unlink_regions(regions)


def _reap(proc: subprocess.Popen, timeout_s: float = 2.0) -> None:
    """Waits for a killed server. A stop (SIGTERM, Ctrl-C) raised between two bytecodes of a
    Popen.poll() can leave the Popen's waitpid lock taken for good, and its plain wait() would
    then block forever: a wait with a timeout only tries the lock, and waitpid itself reaps it."""
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        try:
            _, status = os.waitpid(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        except ChildProcessError:  # reaped meanwhile
            pass


def _stop_all(*_):
    for server in list(_LIVE):
        server.stop()


# Work folders made for servers (their logs and backend links): removed when this process exits,
# after the servers stop, not at stop(): a restart reuses the folder, and a failure's report
# reads the log after its server is gone.
_OWN_WORKDIRS: list = []


def _remove_workdirs():
    for folder in _OWN_WORKDIRS:
        shutil.rmtree(folder, ignore_errors=True)


_STOP_MARKER: list = [None]
_STOP_REASON = [""]  # "" until this process is told to stop


def _on_sigterm(signum, frame):
    mark_stopped(f"terminated by signal {signum}")  # before the servers go: a worker must know their end is not a finding
    for server in list(_LIVE):  # killed now, reaped by stop() when the stop unwinds (or at exit)
        server.kill_from_signal_handler()
    previous = _PREVIOUS_SIGTERM
    if callable(previous):
        previous(signum, frame)
    raise Terminated(f"terminated by signal {signum}; the servers this run started were stopped")


def _on_sigint(signum, frame):
    mark_stopped("KeyboardInterrupt (Ctrl-C)")
    raise KeyboardInterrupt


atexit.register(_remove_workdirs)  # atexit runs last-registered first: the servers stop before
atexit.register(_stop_all)
_PREVIOUS_SIGTERM = None
try:
    _PREVIOUS_SIGTERM = signal.signal(signal.SIGTERM, _on_sigterm)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # Ctrl-C as Python's, plus the flag
        signal.signal(signal.SIGINT, _on_sigint)
except ValueError:  # not the main thread: atexit and PDEATHSIG still cover us
    pass
