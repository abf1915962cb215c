"""A real headless Chromium driven over its DevTools protocol: open a page at a window width, measure it, screenshot it.

`chromium --dump-dom` gives the DOM but not the layout; what a reader sees (does anything spill off a 375 px screen,
which colour is each segment drawn in) needs the rendered page. The protocol's `Runtime.evaluate` runs in the page
without being a page script, so the pages' Content-Security-Policy (no script at all) stays as served.
"""

from __future__ import annotations

import base64
import itertools
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import websocket  # websocket-client, a dependency of the Slack bot

__all__ = ["Browser"]


class Browser:
    """One headless Chromium with one tab; `open` loads a URL at a width, `evaluate` and `screenshot` read it."""

    def __init__(self, chromium: str, profile: Path) -> None:
        profile.mkdir(parents=True, exist_ok=True)
        port_file = profile / "DevToolsActivePort"
        port_file.unlink(missing_ok=True)  # a previous browser's port: this one writes its own once listening
        self._process = subprocess.Popen(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.05)
        try:
            port = port_file.read_text().split()[0]
            pages = [t for t in httpx.get(f"http://127.0.0.1:{port}/json/list").json() if t["type"] == "page"]
            self._socket = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=60)
            self._ids = itertools.count(1)
            self._call("Page.enable")
        except BaseException:
            self.close()  # never leave a browser behind: a second one on the same profile would hand over to it
            raise

    def _call(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        self._socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})  # type: ignore[no-any-return]

    def open(self, url: str, width: int, height: int = 900) -> None:
        """Load `url` in a window `width` CSS pixels wide (a phone's at 500 and below), waiting for its load event."""
        self._call(
            "Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=width <= 500
        )
        ident = next(self._ids)
        self._socket.send(json.dumps({"id": ident, "method": "Page.navigate", "params": {"url": url}}))
        loaded = answered = False
        while not (loaded and answered):
            message = json.loads(self._socket.recv())
            answered = answered or message.get("id") == ident
            loaded = loaded or message.get("method") == "Page.loadEventFired"

    def evaluate(self, expression: str) -> Any:
        """The JSON value of `expression` evaluated in the page."""
        result = self._call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        """The whole page (not only the window) as a PNG at `path`."""
        data = self._call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        socket = getattr(self, "_socket", None)
        if socket is not None:
            socket.close()
        self._process.terminate()
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
