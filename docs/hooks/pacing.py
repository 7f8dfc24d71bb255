"""The pacing timeline: a batch riding an account limit, drawn from the simulated scheduler
clock (``tests/simulated_limit.py``: the scheduler's own ``Window`` against a seeded model of
the limit, no real time passing), never from a timed run.

600 states at concurrency 64 against 1,200 requests per minute, the limit halved at t = 15 s
(another process starts on the same key): successes and 429s per simulated second, beside the
limit."""

from __future__ import annotations

import io
import random
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2] / "tests"


def _latency(rng: random.Random) -> float:
    return rng.uniform(0.2, 0.6)


def timeline_svg() -> str:
    sys.path.insert(0, str(TESTS))
    try:
        from simulated_limit import Server, simulate
    finally:
        sys.path.remove(str(TESTS))
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure

    halve_at = 15.0
    run = simulate(
        Server(per_minute=1200, whole_seconds=False),
        concurrency=64,
        states=600,
        latency=_latency,
        seed=0,
        halve_at=halve_at,
    )
    seconds = int(run.finish) + 1
    ok = [sum(s <= t < s + 1 for t in run.ok) for s in range(seconds)]
    throttled = [sum(s <= t < s + 1 for t in run.throttled) for s in range(seconds)]
    fig = Figure(figsize=(7.5, 3.2))
    FigureCanvasSVG(fig)
    ax = fig.add_subplot()
    xs = list(range(seconds))
    ax.bar(xs, ok, width=0.9, color="#2b6cb0", label="answered (200)")
    ax.bar(xs, throttled, bottom=ok, width=0.9, color="#dd6b20", label="refused (429)")
    ax.step([0, halve_at, halve_at, seconds], [20, 20, 10, 10], where="post", color="#222",
            linestyle="--", label="the account's limit")  # fmt: skip
    ax.set_xlabel("simulated seconds")
    ax.set_ylabel("replies per second")
    ax.set_xlim(-0.5, seconds)
    ax.legend(loc="upper right", frameon=False, fontsize=8)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None})
    text = out.getvalue()
    return text[text.index("<svg") :]
