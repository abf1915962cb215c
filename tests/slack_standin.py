"""A stand-in for Slack on 127.0.0.1: the Web API methods the bot calls (HTTP) and the Socket Mode WebSocket.

It speaks Slack's documented wire format: `apps.connections.open` (with the app-level token) answers the WebSocket
URL; a connection gets `hello`, then the envelopes a test sends (`{envelope_id, type, payload,
accepts_response_payload}` as in slack_sdk/bolt's own Socket Mode fixtures), and records the bot's acks
(`{envelope_id, payload?}`) and every Web API call (`chat.postMessage`, `chat.postEphemeral`, `views.open`).
`drop()` cuts the socket without a close handshake, as a network failure would.

Test infrastructure, not a tool for users, so it has no command of its own: it answers only the Web API methods the
bot calls, and its envelopes come from test code (tests/e2e/test_slackbot.py). To try the Slack answers on a laptop,
README's "Try the HTTP endpoint locally" signs a slash command as Slack would; the Socket Mode bot shares its parser
and Block Kit answers (service/slack/).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

from websockets.asyncio.server import ServerConnection, serve

APP_TOKEN = "xapp-1-A0001-1111-standin"
BOT_TOKEN = "xoxb-1111-2222-standin"
BOT_USER = "UBOT0001"


class SlackStandIn:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.acks: list[dict[str, Any]] = []
        self.sockets_served = 0
        self._lock = threading.Lock()
        self._ts = 0
        self._loop = asyncio.new_event_loop()
        self._sockets: set[ServerConnection] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._ws_server = asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(timeout=10)
        self.ws_port = self._ws_server.sockets[0].getsockname()[1]
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.api_url = f"http://127.0.0.1:{self._http.server_address[1]}/api/"
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    # Socket Mode -----------------------------------------------------------------------------------------------
    async def _serve(self) -> Any:
        return await serve(self._connection, "127.0.0.1", 0)

    async def _connection(self, socket: ServerConnection) -> None:
        with self._lock:
            self._sockets.add(socket)
            self.sockets_served += 1
        hello = {
            "type": "hello",
            "num_connections": 1,
            "debug_info": {"host": "applink-standin", "build_number": 1, "approximate_connection_time": 18060},
            "connection_info": {"app_id": "A0001"},
        }
        try:
            await socket.send(json.dumps(hello))
            async for message in socket:
                with self._lock:
                    self.acks.append(json.loads(message))
        except Exception:
            pass
        finally:
            self._sockets.discard(socket)

    def connected(self) -> int:
        return len(self._sockets)

    def send(self, envelope: dict[str, Any]) -> None:
        """Send one envelope on every open socket (there is one, the bot's)."""

        async def send() -> None:
            for socket in list(self._sockets):
                await socket.send(json.dumps(envelope))

        asyncio.run_coroutine_threadsafe(send(), self._loop).result(timeout=10)

    def drop(self) -> None:
        """Cut every socket without a close frame, and forget it at once: until its handler notices, a cut socket
        would still count as connected and take the next envelope into the void."""

        async def drop() -> None:
            for socket in list(self._sockets):
                socket.transport.abort()
                self._sockets.discard(socket)

        asyncio.run_coroutine_threadsafe(drop(), self._loop).result(timeout=10)

    # Web API ---------------------------------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                method = self.path.removeprefix("/api/").split("?")[0]
                raw = self.rfile.read(int(self.headers.get("content-length") or 0)).decode()
                if self.headers.get("content-type", "").startswith("application/json"):
                    params = json.loads(raw or "{}")
                else:
                    params = {key: values[0] for key, values in parse_qs(raw).items()}
                token = self.headers.get("authorization", "").removeprefix("Bearer ")
                body = standin.answer(method, token, params)
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json; charset=utf-8")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def answer(self, method: str, token: str, params: dict[str, Any]) -> dict[str, Any]:
        expected = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
        if token != expected:
            return {"ok": False, "error": "invalid_auth"}
        with self._lock:
            self.calls.append((method, params))
            self._ts += 1
            ts = f"1700000000.{self._ts:06d}"
        if method == "apps.connections.open":
            return {"ok": True, "url": f"ws://127.0.0.1:{self.ws_port}/link/?ticket={uuid.uuid4()}&app_id=A0001"}
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://example.slack.com/",
                "team": "Example",
                "user": "worthit",
                "team_id": "T0001",
                "user_id": BOT_USER,
                "bot_id": "B0001",
                "is_enterprise_install": False,
            }
        if method == "chat.postMessage":
            message = {
                "type": "message",
                "user": BOT_USER,
                "ts": ts,
                "text": params.get("text"),
                "blocks": params.get("blocks"),
            }
            return {"ok": True, "channel": params.get("channel"), "ts": ts, "message": message}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": ts}
        if method == "views.open":
            view = dict(params.get("view") or {})
            return {"ok": True, "view": view | {"id": f"V{self._ts:08d}", "team_id": "T0001", "state": {"values": {}}}}
        return {"ok": False, "error": "unknown_method"}

    # Waiting -----------------------------------------------------------------------------------------------------
    def wait(self, what: Callable[[], Any], timeout: float = 60) -> Any:
        """Poll until `what()` is truthy; generous, because CI machines are shared."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                found = what()
            if found:
                return found
            time.sleep(0.05)
        raise AssertionError(f"timed out after {timeout} s; calls: {[c[0] for c in self.calls]}, acks: {self.acks}")

    def posts(self) -> list[tuple[str, dict[str, Any]]]:
        return [call for call in self.calls if call[0] in ("chat.postMessage", "chat.postEphemeral")]

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()

        async def stop() -> None:
            self._ws_server.close()
            await self._ws_server.wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
