"""The HTML report in a real headless browser (issue 24 §7): "the page loads with no network
request and no console error and every chart is visible in a screenshot"; and issue 31 item 16:
"A browser test checks, from the page's own layout in headless Chromium, that no two text labels
of a chart overlap and that every text's contrast against the fill under its centre is at least
4.5:1 (WCAG AA)". Debian's ``chromium`` (``make test`` and ``make browser-test`` install it
through apt where it is missing); skipped with a ``platform:`` reason where it is not on the PATH.

The browser is driven over the Chrome DevTools Protocol on 127.0.0.1 with aiohttp's websocket
client (a dependency already), so nothing is downloaded: Playwright's own browser cannot be had
here. Two pages, loaded once by one browser for every test here: the golden two-run labelled
report (noul, choice and score questions) given support-triage's long level labels, and a gated
run's report with its sweep and selective-prediction charts.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from htmlcheck import check_self_contained

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="platform: chromium is not on the PATH (make test installs it)"
)
pytest.importorskip("matplotlib", reason="platform: matplotlib (the html extra) is not installed")

from PIL import Image  # noqa: E402  (matplotlib's own dependency)

# Every text of every chart: its text, its box in page pixels, the box of its chart, its colour
# (fill, opacity); rotated text is measured by its upright bounding box, as it is laid out.
_LAYOUT = """JSON.stringify([...document.querySelectorAll('figure.chart')].map(fig => {
  const svg = fig.querySelector('svg'), s = svg.getBoundingClientRect();
  const box = r => [r.left + scrollX, r.top + scrollY, r.width, r.height];
  return {chart: fig.getAttribute('aria-label'), box: box(s),
    texts: [...svg.querySelectorAll('text')].filter(t => t.textContent.trim()).map(t => {
      const cs = getComputedStyle(t);
      return {text: t.textContent.trim(), box: box(t.getBoundingClientRect()), fill: cs.fill,
              alpha: Number(cs.fillOpacity) * Number(cs.opacity)};
    })};
}))"""
# The fill under each text is read from a screenshot taken with every chart's text hidden: what
# the page itself paints there (bars, heatmap rasters, grid, background), whatever drew it.
_HIDE_TEXT = """(() => { const s = document.createElement('style');
  s.textContent = 'figure.chart svg text { visibility: hidden !important; }';
  document.head.append(s);
  return [document.documentElement.scrollWidth, document.documentElement.scrollHeight]; })()"""


@dataclass
class _Loaded:
    events: list[dict[str, Any]]
    charts: list[dict[str, Any]]  # _LAYOUT's, each with "image": the chart without its text
    expected: int  # the charts the page's HTML holds


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

    async def value(self, expression: str) -> Any:
        found = await self.send("Runtime.evaluate", returnByValue=True, expression=expression)
        return found["result"]["value"]


async def _load(http: Any, port: int, url: str) -> tuple[list[dict[str, Any]], list[Any]]:
    async with http.put(f"http://127.0.0.1:{port}/json/new?about:blank") as r:
        target = await r.json(content_type=None)
    async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
        page = _Page(ws)
        for domain in ("Network", "Runtime", "Log", "Page"):
            await page.send(f"{domain}.enable")
        await page.send("Page.navigate", url=url)
        await page.until("Page.loadEventFired")
        charts = json.loads(await page.value(_LAYOUT))
        width, height = await page.value(_HIDE_TEXT)
        shot = await page.send(
            "Page.captureScreenshot", format="png", captureBeyondViewport=True,
            optimizeForSpeed=True,  # a faster PNG encoding, as lossless
            clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
        )  # fmt: skip
        whole = Image.open(io.BytesIO(base64.b64decode(shot["data"]))).convert("RGB")
        for chart in charts:  # one shot of the page, cut per chart: quicker than one per chart
            x, y, w, h = chart["box"]
            chart["image"] = whole.crop((round(x), round(y), round(x + w), round(y + h)))
        return page.events, charts


async def _drive(port: int, urls: list[str]) -> list[tuple[list[dict[str, Any]], list[Any]]]:
    import aiohttp

    async with aiohttp.ClientSession() as http:
        return [await _load(http, port, url) for url in urls]


def _free_port_chromium(profile: Path) -> tuple[subprocess.Popen[str], int]:
    assert CHROMIUM is not None
    proc = subprocess.Popen(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--window-size=1280,1024", "--force-device-scale-factor=1",
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


def _labelled_page(tmp: Path) -> Path:
    from test_report_chart_geometry import _long_inputs  # the long labels the issue saw cut

    run, after, labels = _long_inputs(tmp)
    page = tmp / "labelled.html"
    ran = run_cli("report", run, after, "--labels", labels, "--format", "html", "-o", str(page))
    assert ran.code == 0, ran.stderr
    return page


def _gated_page(tmp: Path) -> Path:
    from test_gates_sweep import _build  # a hand-built gated run, its labels and its gates

    gated = tmp / "gated"
    gated.mkdir()
    run, labels, gates, _ = _build(gated, n=30)
    page = tmp / "gated.html"
    ran = run_cli(
        "report", str(run), "--labels", str(labels), "--gates", str(gates), "--selective",
        "--format", "html", "-o", str(page),
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    return page


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, _Loaded]:
    tmp = tmp_path_factory.mktemp("browser")
    paths = {"labelled": _labelled_page(tmp), "gated": _gated_page(tmp)}
    proc, port = _free_port_chromium(tmp / "profile")
    try:
        loaded = asyncio.run(_drive(port, [p.as_uri() for p in paths.values()]))
    finally:
        proc.kill()
        proc.wait(10)
        assert proc.stderr is not None
        proc.stderr.close()
    return {
        name: _Loaded(events, charts, check_self_contained(path.read_text(encoding="utf-8")))
        for (name, path), (events, charts) in zip(paths.items(), loaded, strict=True)
    }


PAGES = [pytest.param(name, id=name) for name in ("labelled", "gated")]


def _drawn(image: Image.Image) -> bool:
    """The screenshot of a chart holds more than its background."""
    low, high = image.convert("L").getextrema()
    return image.width > 50 and image.height > 50 and high - low > 100


@pytest.mark.parametrize("name", PAGES)
def test_the_report_page_loads_offline_without_errors_and_every_chart_is_visible(
    pages: dict[str, _Loaded], name: str
) -> None:
    page = pages[name]
    requests = [
        e["params"]["request"]["url"]
        for e in page.events
        if e.get("method") == "Network.requestWillBeSent"
        and not e["params"]["request"]["url"].startswith(("file:", "data:"))
    ]
    assert requests == [], "the page asked the network for something"
    errors = [
        e for e in page.events
        if e.get("method") == "Runtime.exceptionThrown"
        or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error")
        or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")
    ]  # fmt: skip
    assert errors == []
    assert len(page.charts) == page.expected > 0
    assert all(_drawn(c["image"]) for c in page.charts), "a chart that shows nothing"


def _overlap(a: list[float], b: list[float]) -> bool:
    """The boxes share more than half a pixel each way (anti-aliasing's slack)."""
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    return min(ax + aw, bx + bw) - max(ax, bx) > 0.5 and min(ay + ah, by + bh) - max(ay, by) > 0.5


@pytest.mark.parametrize("name", PAGES)
def test_no_two_texts_of_a_chart_overlap_in_the_browser(
    pages: dict[str, _Loaded], name: str
) -> None:
    """Issue 31 item 16: "no two text labels of a chart overlap", each text's box as Chromium
    lays it out; and none runs past its chart's edge, where the SVG would cut it."""
    problems = []
    for chart in pages[name].charts:
        texts = chart["texts"]
        assert texts, f"{chart['chart']}: a chart with no text"
        cx, cy, cw, ch = chart["box"]
        for i, t in enumerate(texts):
            x, y, w, h = t["box"]
            if x < cx - 0.5 or y < cy - 0.5 or x + w > cx + cw + 0.5 or y + h > cy + ch + 0.5:
                problems.append(f"{chart['chart']}: {t['text']!r} runs past the chart's edge")
            problems += [
                f"{chart['chart']}: {t['text']!r} overlaps {u['text']!r}"
                for u in texts[i + 1 :]
                if _overlap(t["box"], u["box"])
            ]
    assert problems == []


def _rgb(css: str) -> tuple[float, float, float]:
    m = re.fullmatch(r"rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*[\d.]+)?\)", css)
    assert m, f"a text fill Chromium did not resolve to a colour: {css!r}"
    r, g, b = (float(v) / 255 for v in m.groups())
    return r, g, b


def _luminance(rgb: tuple[float, ...]) -> float:
    """WCAG 2.1 relative luminance (written here apart from the code under test)."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("name", PAGES)
def test_every_text_contrasts_with_the_fill_under_its_centre_in_the_browser(
    pages: dict[str, _Loaded], name: str
) -> None:
    """Issue 31 item 16: "every text's contrast against the fill under its centre is at least
    4.5:1 (WCAG AA)": the fill as the browser paints it, read from a screenshot of the chart
    with its text hidden; a translucent text is blended onto that fill first."""
    problems = []
    for chart in pages[name].charts:
        image = chart["image"]
        cx, cy, cw, ch = chart["box"]
        sx, sy = image.width / cw, image.height / ch
        for t in chart["texts"]:
            x, y, w, h = t["box"]
            px = min(image.width - 1, max(0, int((x + w / 2 - cx) * sx)))
            py = min(image.height - 1, max(0, int((y + h / 2 - cy) * sy)))
            r, g, b = image.getpixel((px, py))  # type: ignore[misc]
            under = (r / 255, g / 255, b / 255)
            a = t["alpha"]
            fg = tuple(a * f + (1 - a) * u for f, u in zip(_rgb(t["fill"]), under, strict=True))
            ratio = _contrast(fg, under)
            if ratio < 4.5:
                problems.append(
                    f"{chart['chart']}: {t['text']!r} is {t['fill']} on rgb{(r, g, b)}: "
                    f"{ratio:.2f}:1"
                )
    assert problems == []
