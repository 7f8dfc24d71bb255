"""Static checks of a self-contained HTML report (issue 24 §7: "no <script>, no external
src/href/url(), every SVG parses with a viewBox and drawn marks"), shared by the report tests."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

__all__ = ["check_self_contained"]

_SVG = re.compile(r"<svg\b.*?</svg>", re.DOTALL)
_MARKS = ("path", "rect", "line", "polyline", "polygon", "circle", "ellipse", "use")


def check_self_contained(page: str) -> int:
    """Assert the page loads nothing from elsewhere and every chart is a drawn, scalable SVG;
    the number of SVGs."""
    assert "<script" not in page.lower()
    for attr in re.findall(r"""\b(?:src|href)\s*=\s*["']([^"']*)""", page):
        # an in-page anchor, or bytes inlined (matplotlib embeds a heatmap's raster)
        assert attr.startswith(("#", "data:")), f"external reference {attr[:60]!r}"
    for target in re.findall(r"url\(\s*([^)]*)\)", page):
        assert target.strip("'\" ").startswith(("#", "data:")), f"external url({target[:60]})"
    svgs = _SVG.findall(page)
    for svg in svgs:
        root = ET.fromstring(svg)
        assert root.get("viewBox"), "an SVG without a viewBox does not scale"
        drawn = [e for e in root.iter() if e.tag.rsplit("}", 1)[-1] in _MARKS]
        assert drawn, "an SVG with no drawn marks"
    return len(svgs)
