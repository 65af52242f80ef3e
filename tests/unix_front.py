"""A loopback TCP port in front of a Unix domain socket: edgeprint speaks IPP over TCP only,
and LPrint in its namespace (tests/lprint_rig.py) is reachable only by its Unix socket.

Bytes pass both ways untouched, one Unix connection per TCP connection (so HTTP keep-alive
works as it would at the printer)::

    with UnixFront(rig.socket_path) as front:
        uri = f"ipp://127.0.0.1:{front.port}/ipp/print"

Stdlib only; threads, stopped and joined on exit.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class UnixFront:
    """Accept on 127.0.0.1 (a free port) and relay each connection to ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._stopped = threading.Event()

    def __enter__(self) -> UnixFront:
        self._start(self._accept, "unix-front-accept")
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for s in self._open:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
        for t in self._threads:
            t.join(5)

    def _start(self, target: object, name: str, *args: object) -> None:
        t = threading.Thread(target=target, args=args, name=name, daemon=True)  # type: ignore[arg-type]
        self._threads.append(t)
        t.start()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.path)
            except OSError:
                client.close()
                upstream.close()
                continue
            with self._lock:
                self._open.update((client, upstream))
            done = threading.Barrier(2, action=lambda c=client, u=upstream: self._close(c, u))
            self._start(self._pipe, "unix-front-up", client, upstream, done)
            self._start(self._pipe, "unix-front-down", upstream, client, done)

    def _pipe(self, src: socket.socket, dst: socket.socket, done: threading.Barrier) -> None:
        try:
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)
        with contextlib.suppress(threading.BrokenBarrierError):
            done.wait()

    def _close(self, *pair: socket.socket) -> None:
        with self._lock:
            for s in pair:
                self._open.discard(s)
                s.close()
