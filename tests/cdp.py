"""A small driver of headless Chromium over the DevTools protocol (``--remote-debugging-pipe``: JSON
messages ending in NUL on file descriptors 3 and 4), for the report tests: console errors, element
positions, mouse hover, and the network switched off. Standard library only.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless Chromium with one page (a flattened session)."""

    def __init__(self, profile: Path, width: int = 1280, height: int = 800) -> None:
        assert CHROMIUM is not None
        to_child_r, self._w = os.pipe()
        self._r, from_child_w = os.pipe()

        def fds() -> None:  # in the child: the protocol's fds 3 (commands in) and 4 (answers out)
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-default-apps", f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=fds,
            close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self._id = 0
        self._answers: dict[int, dict[str, Any]] = {}
        self._cv = threading.Condition()
        self.events: "queue.Queue[dict[str, Any]]" = queue.Queue()
        self.log: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)
        self.height = height

    def _read(self) -> None:
        buf = b""
        with os.fdopen(self._r, "rb", buffering=0) as f:
            while True:
                chunk = f.read(65536)
                if not chunk:
                    return
                buf += chunk
                while b"\0" in buf:
                    msg, buf = buf.split(b"\0", 1)
                    m = json.loads(msg)
                    if "id" in m:
                        with self._cv:
                            self._answers[m["id"]] = m
                            self._cv.notify_all()
                    else:
                        self.log.append(m)
                        self.events.put(m)

    def call(self, method: str, session: bool = False, timeout: float = 60.0, **params: Any) -> dict[str, Any]:
        self._id += 1
        i = self._id
        msg: dict[str, Any] = {"id": i, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        with self._cv:
            ok = self._cv.wait_for(lambda: i in self._answers, timeout)
        assert ok, f"no answer to {method}"
        ans = self._answers.pop(i)
        assert "error" not in ans, f"{method}: {ans['error']}"
        return dict(ans.get("result", {}))

    def js(self, expr: str) -> Any:
        r = self.call("Runtime.evaluate", session=True, expression=expr, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in r, r["exceptionDetails"]
        return r["result"].get("value")

    def offline(self) -> None:
        self.call("Network.emulateNetworkConditions", session=True, offline=True, latency=0,
                  downloadThroughput=0, uploadThroughput=0)

    def open(self, url: str, timeout: float = 120.0) -> None:
        self.call("Page.navigate", session=True, url=url)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                e = self.events.get(timeout=1.0)
            except queue.Empty:
                continue
            if e.get("method") == "Page.loadEventFired":
                return
        raise AssertionError(f"{url} did not load within {timeout} s")

    def wait_for(self, expr: str, timeout: float = 60.0) -> Any:
        end = time.monotonic() + timeout
        while True:
            v = self.js(expr)
            if v or time.monotonic() > end:
                return v
            time.sleep(0.2)

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries so far."""
        out = []
        for e in self.log:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(json.dumps(p.get("exceptionDetails", {}))[:500])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(json.dumps(p.get("args", []))[:500])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(json.dumps(p["entry"])[:500])
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.log if e.get("method") == "Network.requestWillBeSent"]

    def hover(self, x: float, y: float) -> None:
        self.call("Input.dispatchMouseEvent", session=True, type="mouseMoved", x=x, y=y)

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=10)
        except AssertionError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self._w)
