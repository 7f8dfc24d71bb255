"""The site's pictures, drawn at build time (issue 46 item 2): never a screenshot, never a timed
run, nothing fetched.

The report's charts are the SVGs ``toolnexus report --format html`` already emits, cut out of
its page: the bundled labelled sample (``examples/tickets.jsonl`` with
``examples/tickets-labels.csv``) is batch-scored through ``toolnexus serve --synthetic`` on a
free port of 127.0.0.1 (the shipped recordings hold no answers for these tickets, so the
answers are the synthetic server's seeded ones: the pictures show what the charts say, not how
good a model is), then reported with ``--selective`` and a gate whose outcome column is the
labels' own ``wants_money_back`` read as ``refund`` / ``route``.
"""

from __future__ import annotations

import csv
import html
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pacing  # docs/hooks/pacing.py: imported while MkDocs has the hooks' folder on sys.path

REPO = Path(__file__).resolve().parents[2]

#: Picture file -> the report figure's caption (its ``aria-label``).
REPORT_FIGURES = {
    "reliability-diagram.svg": "department: reliability diagram",
    "selective-prediction.svg": "department: risk against coverage",
    "floor-sweep.svg": "gate refund: risk against coverage",
}

GATE = """gates:
  refund:
    rules:
      - {question: wants_money_back, at_least: 0.5, action: refund}
    default: route
"""


def _toolnexus(*args: str, cwd: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolnexus", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"docs/hooks/charts.py: `toolnexus {args[0]}` exited {done.returncode}: "
            f"{done.stderr.strip()}"
        )


def _scored_run(work: Path) -> Path:
    """``batch`` the labelled tickets through a synthetic server that this function stops."""
    with subprocess.Popen(
        [sys.executable, "-m", "toolnexus", "serve", "--synthetic", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as server:
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            if not url.startswith("http://127.0.0.1:"):
                raise RuntimeError(f"toolnexus serve did not start: {url!r}")
            _toolnexus(
                "batch", str(REPO / "questions" / "support-triage.yaml"),
                str(REPO / "examples" / "tickets.jsonl"), "--id-field", "id",
                "--state-field", "text", "--base-url", f"{url}/v1", "-o", "run.jsonl",
                cwd=work,
            )  # fmt: skip
        finally:
            server.terminate()
            server.communicate(timeout=30)
    return work / "run.jsonl"


def report_figures() -> dict[str, str]:
    """The report's own SVG charts of the labelled sample, by picture file name."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        run = _scored_run(work)
        questions = (REPO / "questions" / "support-triage.yaml").read_text(encoding="utf-8")
        (work / "gated.yaml").write_text(questions + GATE, encoding="utf-8")
        with (REPO / "examples" / "tickets-labels.csv").open(encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        with (work / "labels.csv").open("w", encoding="utf-8", newline="") as f:
            out = csv.DictWriter(f, fieldnames=[*rows[0], "refund"])
            out.writeheader()
            for row in rows:
                out.writerow(
                    row | {"refund": "refund" if row["wants_money_back"] == "yes" else "route"}
                )
        _toolnexus(
            "report", str(run), "--labels", "labels.csv", "--gates", "gated.yaml", "--selective",
            "-o", "report.html", cwd=work,
        )  # fmt: skip
        page = (work / "report.html").read_text(encoding="utf-8")
    figures = {
        html.unescape(m.group(1)): m.group(2)
        for m in re.finditer(
            r'<figure class="chart" aria-label="([^"]*)">(<svg.*?</svg>)', page, re.S
        )
    }
    out = {}
    for name, caption in REPORT_FIGURES.items():
        svg = figures[caption]
        if "xmlns=" not in svg[:200]:
            svg = svg.replace("<svg", '<svg xmlns="http://www.w3.org/2000/svg"', 1)
        out[name] = svg
    return out


def pictures() -> dict[str, str]:
    """File name -> SVG text of every generated picture."""
    return {**report_figures(), "pacing-timeline.svg": pacing.timeline_svg()}
