"""A TCP proxy in front of a real broker that drops a connection under a request, for real.

Used with ``DevBroker(advertised=proxy.address)``, so that clients reach the broker only
through the proxy (bootstrap and every later connection). :meth:`FlakyProxy.drop_next`
arms it: the next request of one of the given Kafka API keys is swallowed, as by a broker
that stopped answering, and after ``stall_s`` that connection is reset. The client then has a
request in flight on a dropped connection, which librdkafka reports as "Broker transport
failure", the error the admin client got from the dev broker under the parallel suite's load.

Threads: one accept thread, two pump threads per connection.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading

# Kafka API keys of the consumer group requests behind the REST offsets endpoints.
OFFSET_COMMIT, OFFSET_FETCH, DELETE_GROUPS = 8, 9, 42
# Bytes read per recv(): Kafka requests and responses of the tests are small.
_CHUNK = 65_536
_FRAME_HEADER = struct.Struct(">ih")  # request size, then the request's API key


class FlakyProxy:
    """``with FlakyProxy() as proxy: proxy.target = port; proxy.drop_next({9}, 1.0)``."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self.target: int | None = None  # the broker's port, set once it is known
        self._lock = threading.Lock()
        self._armed: tuple[frozenset[int], float] | None = None
        self._sockets: set[socket.socket] = set()
        self._closed = False
        self.dropped = 0  # requests swallowed so far
        threading.Thread(target=self._accept, name="flaky-proxy-accept", daemon=True).start()

    def __enter__(self) -> FlakyProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def drop_next(self, api_keys: set[int], stall_s: float) -> None:
        """Swallow the next request with one of ``api_keys``; reset its connection after
        ``stall_s``. Returns at once."""
        with self._lock:
            self._armed = (frozenset(api_keys), stall_s)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            victims = list(self._sockets)
            self._sockets.clear()
        for sock in victims:
            _reset(sock)

    def _take(self, api_key: int) -> float | None:
        """The stall, if this request is the one to drop (then disarmed)."""
        with self._lock:
            if self._armed is None or api_key not in self._armed[0]:
                return None
            stall_s = self._armed[1]
            self._armed = None
            self.dropped += 1
            return stall_s

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                assert self.target is not None, "set FlakyProxy.target first"
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=5)
            except (AssertionError, OSError):
                _reset(client)
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets.update((client, upstream))
            threading.Thread(
                target=self._requests, args=(client, upstream), name="flaky-proxy", daemon=True
            ).start()
            threading.Thread(
                target=self._responses, args=(upstream, client), name="flaky-proxy", daemon=True
            ).start()

    def _requests(self, client: socket.socket, upstream: socket.socket) -> None:
        """Client to broker, a whole request at a time, so one can be left out."""
        buffer = b""
        try:
            while True:
                data = client.recv(_CHUNK)
                if not data:
                    break
                buffer += data
                while len(buffer) >= _FRAME_HEADER.size:
                    size, api_key = _FRAME_HEADER.unpack_from(buffer)
                    if len(buffer) < 4 + size:
                        break
                    frame, buffer = buffer[: 4 + size], buffer[4 + size :]
                    stall_s = self._take(api_key)
                    if stall_s is None:
                        upstream.sendall(frame)
                        continue
                    timer = threading.Timer(stall_s, self._drop, args=(client, upstream))
                    timer.daemon = True
                    timer.start()
        except OSError:
            pass
        finally:
            self._drop(client, upstream)

    def _responses(self, upstream: socket.socket, client: socket.socket) -> None:
        try:
            while True:
                data = upstream.recv(_CHUNK)
                if not data:
                    break
                client.sendall(data)
        except OSError:
            pass
        finally:
            self._drop(client, upstream)

    def _drop(self, client: socket.socket, upstream: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(client)
            self._sockets.discard(upstream)
        _reset(client)
        _reset(upstream)


def _reset(sock: socket.socket) -> None:
    """Drop the connection with an RST (SO_LINGER 0), as a crashed broker's kernel would.

    shutdown() first: it wakes a pump thread blocked in recv() on this socket, which a
    close() from another thread would not.
    """
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
