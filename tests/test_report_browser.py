"""The HTML report in a real headless browser (issue 24 §7): "the page loads with no network
request and no console error and every chart is visible in a screenshot". Debian's
``chromium`` (``make browser-test`` installs it through apt); skipped with a ``platform:``
reason where it is not on the PATH.

The browser is driven over the Chrome DevTools Protocol on 127.0.0.1 with aiohttp's websocket
client (a dependency already), so nothing is downloaded: Playwright's own browser cannot be had
here.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from htmlcheck import check_self_contained

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="platform: chromium is not on the PATH (make browser-test installs it)"
)
GOLDEN_INPUTS = Path(__file__).parent / "golden" / "report-inputs"


class _Page:
    """One page target over CDP: commands by id, events collected."""

    def __init__(self, ws: Any) -> None:
        self.ws, self.next_id, self.events = ws, 0, []

    async def send(self, method: str, **params: Any) -> Any:
        self.next_id += 1
        mine = self.next_id
        await self.ws.send_json({"id": mine, "method": method, "params": params})
        while True:
            msg = await self.ws.receive_json(timeout=60)
            if msg.get("id") == mine:
                assert "error" not in msg, msg
                return msg.get("result", {})
            self.events.append(msg)

    async def until(self, method: str) -> None:
        if any(e.get("method") == method for e in self.events):
            return
        while True:
            msg = await self.ws.receive_json(timeout=60)
            self.events.append(msg)
            if msg.get("method") == method:
                return


async def _drive(port: int, url: str) -> tuple[list[dict[str, Any]], list[bytes], int]:
    import aiohttp

    async with aiohttp.ClientSession() as http:
        async with http.put(f"http://127.0.0.1:{port}/json/new?about:blank") as r:
            target = await r.json(content_type=None)
        async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            page = _Page(ws)
            for domain in ("Network", "Runtime", "Log", "Page"):
                await page.send(f"{domain}.enable")
            await page.send("Page.navigate", url=url)
            await page.until("Page.loadEventFired")
            found = await page.send(
                "Runtime.evaluate",
                returnByValue=True,
                expression="""JSON.stringify([...document.querySelectorAll('figure.chart svg')]
                  .map(s => { const r = s.getBoundingClientRect();
                    return [r.left + scrollX, r.top + scrollY, r.width, r.height]; }))""",
            )
            rects = json.loads(found["result"]["value"])
            shots = []
            for x, y, w, h in rects:
                shot = await page.send(
                    "Page.captureScreenshot", format="png", captureBeyondViewport=True,
                    clip={"x": x, "y": y, "width": w, "height": h, "scale": 1},
                )  # fmt: skip
                shots.append(base64.b64decode(shot["data"]))
            return page.events, shots, len(rects)


def _free_port_chromium(profile: Path) -> tuple[subprocess.Popen[str], int]:
    assert CHROMIUM is not None
    proc = subprocess.Popen(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
         f"--user-data-dir={profile}", "about:blank"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
        if m:
            return proc, int(m.group(1))
    proc.kill()
    proc.wait(10)
    proc.stderr.close()
    raise AssertionError("chromium printed no DevTools address")


def _drawn(png: bytes) -> bool:
    """The screenshot of a chart holds more than its background."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("L")
    low, high = image.getextrema()
    return image.width > 50 and image.height > 50 and high - low > 100


def test_the_report_page_loads_offline_without_errors_and_every_chart_is_visible(
    tmp_path: Path,
) -> None:
    page_path = tmp_path / "report.html"
    ran = run_cli(
        "report", str(GOLDEN_INPUTS / "run.jsonl"), str(GOLDEN_INPUTS / "after.jsonl"),
        "--labels", str(GOLDEN_INPUTS / "labels.csv"), "--format", "html", "-o", str(page_path),
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    charts = check_self_contained(page_path.read_text(encoding="utf-8"))
    proc, port = _free_port_chromium(tmp_path / "profile")
    try:
        events, shots, shown = asyncio.run(_drive(port, page_path.as_uri()))
    finally:
        proc.kill()
        proc.wait(10)
        assert proc.stderr is not None
        proc.stderr.close()
    requests = [
        e["params"]["request"]["url"]
        for e in events
        if e.get("method") == "Network.requestWillBeSent"
        and not e["params"]["request"]["url"].startswith(("file:", "data:"))
    ]
    assert requests == [], "the page asked the network for something"
    errors = [
        e for e in events
        if e.get("method") == "Runtime.exceptionThrown"
        or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error")
        or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")
    ]  # fmt: skip
    assert errors == []
    assert shown == charts > 0
    assert all(_drawn(png) for png in shots), "a chart that shows nothing in the screenshot"
