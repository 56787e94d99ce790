"""A TCP fault proxy on loopback, between the fuzz clients (gRPC or HTTP) and the server.

The nemesis uses it to hurt the network rather than the server: add latency, hold every byte
(a stall: nothing is closed, nothing moves), or cut every connection abruptly (RST on both sides,
as if a cable were pulled) while new connections are still accepted.

One thread runs a selector loop over the listening socket and every connection; the fault
controls are commands queued to that thread (a socketpair wakes it), so no socket is touched
from two threads and stop() leaves no thread and no socket behind. Stdlib only.
"""
from __future__ import annotations

import collections
import errno
import selectors
import socket
import struct
import threading
import time

import attrs

_CHUNK = 65536
# When nothing is due, the loop still wakes this often to notice delayed data becoming due.
_IDLE_WAKE_S = 0.5


@attrs.define
class ProxyStats:
    """Counters since start(). up: client to server; down: server to client."""

    accepted: int = 0  # client connections accepted
    active: int = 0  # connections open now
    refused: int = 0  # accepted, but the server could not be reached
    cut: int = 0  # connections closed by cut()
    bytes_up: int = 0  # forwarded to the server
    bytes_down: int = 0  # forwarded to the clients


class _Pipe:
    """One direction of a connection: bytes read from `src`, waiting to be written to `dst`."""

    def __init__(self, src: socket.socket, dst: socket.socket, name: str):
        self.src, self.dst, self.name = src, dst, name
        self.queue: collections.deque[tuple[float, memoryview]] = collections.deque()  # (due, data)
        self.eof = False  # src sent FIN; pass it on once the queue is empty
        self.shut = False  # FIN passed on to dst

    def due_data(self, now: float) -> bool:
        return bool(self.queue) and self.queue[0][0] <= now


class _Conn:
    def __init__(self, client: socket.socket, upstream: socket.socket):
        self.client, self.upstream = client, upstream
        self.connecting = True  # upstream connect() in progress
        self.up = _Pipe(client, upstream, "up")
        self.down = _Pipe(upstream, client, "down")

    @property
    def pipes(self):
        return (self.up, self.down)

    def socks(self):
        return (self.client, self.upstream)


def _rst_close(sock: socket.socket) -> None:
    """Close with SO_LINGER 0: the peer gets a RST, not a FIN, and no TIME_WAIT is left."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class FaultProxy:
    """Forwards 127.0.0.1:`port` to target_host:target_port, with faults on demand.

    with FaultProxy("127.0.0.1", server.grpc_port) as proxy:
        client = StreamClient(proxy.url)
        proxy.delay(0.2)   # every byte, both ways, arrives 0.2 s later
        proxy.stall()      # nothing moves until resume(); connections stay open
        proxy.resume()
        proxy.cut()        # every current connection gets a RST on both sides
    """

    def __init__(self, target_host: str, target_port: int, *, listen_host: str = "127.0.0.1",
                 listen_port: int = 0):
        self.target = (target_host, int(target_port))
        self._listen_addr = (listen_host, listen_port)
        self._lock = threading.Lock()
        self.stats = ProxyStats()
        self._delay_s = 0.0
        self._stalled = False
        self._commands: collections.deque = collections.deque()
        self._conns: list[_Conn] = []
        self._thread: threading.Thread | None = None
        self._listener: socket.socket | None = None
        self._wake_r = self._wake_w = None
        self._stopping = False
        self.port: int | None = None
        self.error: BaseException | None = None  # what ended the loop, if it was not stop()

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> "FaultProxy":
        if self._thread is not None:
            raise RuntimeError("proxy already started")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(self._listen_addr)
            listener.listen(128)
        except OSError:
            listener.close()
            raise
        listener.setblocking(False)
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=f"fault-proxy-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Closes the listener and every connection (with a RST) and joins the thread. Idempotent."""
        thread = self._thread
        if thread is None:
            return
        self._stopping = True
        self._wake()
        thread.join(timeout)
        if thread.is_alive():
            raise RuntimeError(f"fault proxy thread did not stop within {timeout} s")
        self._thread = None
        for s in (self._wake_r, self._wake_w):
            s.close()
        self._wake_r = self._wake_w = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def url(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- faults -------------------------------------------------------------------------------
    def delay(self, seconds: float) -> None:
        """Data read from now on, in both directions, is forwarded `seconds` later (0: no delay).
        Latency is added without cutting throughput: chunks queue, each with its own due time."""
        if seconds < 0:
            raise ValueError(f"delay must be >= 0, got {seconds}")
        self._call(lambda: setattr(self, "_delay_s", float(seconds)))

    def stall(self) -> None:
        """Stop reading and forwarding on every connection, current and new; nothing is closed.
        What is already queued stays queued; the kernel buffers fill and the senders block."""
        self._call(lambda: setattr(self, "_stalled", True))

    def resume(self) -> None:
        """Undo stall(): everything held is forwarded (delay still applies to new data)."""
        self._call(lambda: setattr(self, "_stalled", False))

    def cut(self) -> int:
        """Close every current connection abruptly, both sides (RST), dropping what was queued.
        The listener stays open: new connections are accepted and forwarded. Returns how many
        connections were cut."""
        return self._call(self._cut_all)

    @property
    def delay_s(self) -> float:
        return self._delay_s

    @property
    def stalled(self) -> bool:
        return self._stalled

    def snapshot(self) -> ProxyStats:
        """A copy of the counters."""
        with self._lock:
            return attrs.evolve(self.stats)

    # -- the loop -----------------------------------------------------------------------------
    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except (BlockingIOError, OSError):
            pass  # already awake (buffer full) or stopping

    def _call(self, fn, timeout: float = 10.0):
        """Run fn on the loop thread and return its result (directly when not running)."""
        if not self.running:
            return fn()
        done = threading.Event()
        box = {}

        def command():
            try:
                box["value"] = fn()
            except BaseException as err:  # handed back to the caller
                box["error"] = err
            done.set()

        self._commands.append(command)
        self._wake()
        if not done.wait(timeout):
            raise RuntimeError("fault proxy did not answer a command in time")
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        self._sel = sel
        sel.register(self._listener, selectors.EVENT_READ, "listen")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        try:
            while not self._stopping:
                while self._commands:
                    self._commands.popleft()()
                now = time.monotonic()
                self._update_interest(sel, now)
                timeout = self._next_due(now)
                for key, events in sel.select(timeout):
                    tag = key.data
                    if tag == "listen":
                        self._accept(sel)
                    elif tag == "wake":
                        try:
                            while self._wake_r.recv(4096):
                                pass
                        except BlockingIOError:
                            pass
                    else:
                        conn, sock = tag
                        if conn not in self._conns:
                            continue  # closed earlier in this round
                        self._service(conn, sock, events)
                self._flush_due(time.monotonic())
        except BaseException as err:  # a bug here must not hang the clients: close everything
            self.error = err
            raise
        finally:
            for conn in list(self._conns):
                self._close(conn, reset=True)
            sel.close()
            self._listener.close()
            # Commands that raced with stop() still get an answer.
            while self._commands:
                self._commands.popleft()()

    def _next_due(self, now: float) -> float:
        if self._commands:
            return 0.0
        if self._stalled:
            return _IDLE_WAKE_S
        dues = [p.queue[0][0] for c in self._conns for p in c.pipes if p.queue]
        return max(0.0, min(dues) - now) if dues else _IDLE_WAKE_S

    def _update_interest(self, sel, now: float) -> None:
        for conn in self._conns:
            for sock in conn.socks():
                want = 0
                if conn.connecting:
                    if sock is conn.upstream:
                        want = selectors.EVENT_WRITE
                elif not self._stalled:
                    # Read while the pipe out of this socket is open; write when its inbound is due.
                    out_pipe = conn.up if sock is conn.client else conn.down
                    in_pipe = conn.down if sock is conn.client else conn.up
                    if not out_pipe.eof:
                        want |= selectors.EVENT_READ
                    if in_pipe.due_data(now):
                        want |= selectors.EVENT_WRITE
                key = sel.get_map().get(sock)
                if key is None:
                    if want:
                        sel.register(sock, want, (conn, sock))
                elif not want:
                    sel.unregister(sock)
                elif key.events != want:
                    sel.modify(sock, want, (conn, sock))

    def _accept(self, sel) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            client.setblocking(False)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            upstream.setblocking(False)
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Conn(client, upstream)
            with self._lock:
                self.stats.accepted += 1
                self.stats.active += 1
            self._conns.append(conn)
            err = upstream.connect_ex(self.target)
            if err == 0:
                conn.connecting = False
            elif err not in (errno.EINPROGRESS, errno.EWOULDBLOCK):
                self._refused(conn)

    def _refused(self, conn: _Conn) -> None:
        with self._lock:
            self.stats.refused += 1
        self._close(conn, reset=True)

    def _service(self, conn: _Conn, sock: socket.socket, events: int) -> None:
        if conn.connecting:
            err = conn.upstream.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self._refused(conn)
            else:
                conn.connecting = False
            return
        if self._stalled:
            return
        if events & selectors.EVENT_READ:
            pipe = conn.up if sock is conn.client else conn.down
            try:
                data = sock.recv(_CHUNK)
            except (BlockingIOError, InterruptedError):
                data = None
            except OSError:  # reset by the peer: pass the reset on
                self._close(conn, reset=True)
                return
            if data is not None:
                if data:
                    pipe.queue.append((time.monotonic() + self._delay_s, memoryview(data)))
                else:
                    pipe.eof = True
        if events & selectors.EVENT_WRITE:
            self._flush_pipe(conn, conn.down if sock is conn.client else conn.up, time.monotonic())

    def _flush_due(self, now: float) -> None:
        if self._stalled:
            return
        for conn in list(self._conns):
            for pipe in conn.pipes:
                if conn in self._conns and not conn.connecting:
                    self._flush_pipe(conn, pipe, now)

    def _flush_pipe(self, conn: _Conn, pipe: _Pipe, now: float) -> None:
        while pipe.due_data(now):
            due, data = pipe.queue[0]
            try:
                sent = pipe.dst.send(data)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._close(conn, reset=True)
                return
            with self._lock:
                if pipe.name == "up":
                    self.stats.bytes_up += sent
                else:
                    self.stats.bytes_down += sent
            if sent < len(data):
                pipe.queue[0] = (due, data[sent:])
                return
            pipe.queue.popleft()
        if pipe.eof and not pipe.queue and not pipe.shut:
            pipe.shut = True
            try:
                pipe.dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        if conn.up.shut and conn.down.shut:
            self._close(conn, reset=False)

    def _close(self, conn: _Conn, *, reset: bool) -> None:
        if conn not in self._conns:
            return
        self._conns.remove(conn)
        with self._lock:
            self.stats.active -= 1
        sel = getattr(self, "_sel", None)
        for sock in conn.socks():
            if sel is not None and sock in sel.get_map():
                sel.unregister(sock)
            if reset:
                _rst_close(sock)
            else:
                sock.close()

    def _cut_all(self) -> int:
        conns = list(self._conns)
        for conn in conns:
            self._close(conn, reset=True)
        with self._lock:
            self.stats.cut += len(conns)
        return len(conns)

    def __repr__(self):
        state = "running" if self.running else "stopped"
        faults = [f"delay={self._delay_s}s"] if self._delay_s else []
        faults += ["stalled"] if self._stalled else []
        return (f"<FaultProxy {self.url} -> {self.target[0]}:{self.target[1]} {state}"
                f"{' ' + ' '.join(faults) if faults else ''}>")
