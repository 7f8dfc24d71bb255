"""Packing states into requests under an account's rate limit (issue 20), as a user runs it.

``toolnexus serve --synthetic --rate-limit 3000/min`` (its own process, one per run so its
``/_stats`` count that run alone), one noul, one 4-option choice and one 4-level score, through
``toolnexus batch --concurrency 64``:

- ``--pack 20`` over 3,000 states (150 requests, a few seconds at the limit);
- ``--pack 1`` over 1,000 states (1,000 requests, ~20 s at the limit: 3,000 would take a
  minute and say nothing more, the ratio is of rates).

Targets: states per second at ``--pack 20`` >= 15x ``--pack 1``; both with 0 error records and
every state decided exactly once. Printed beside it: input tokens per state as the server
counted them (``/_stats``), and the synthetic server's fixed overhead per request
(``toolnexus.serve.input_tokens``: 96 + about a token per 4 bytes of state and questions), which
a pack of N pays once for N states. The rate is states decided over the batch's own wall time
as its summary reports it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ratelimit import start_server, stats, stop, toolnexus
from toolnexus.serve import input_tokens

LIMIT_PER_MIN = 3000
RUNS = ((20, 3000), (1, 1000))  # (--pack, states)
TARGET_RATIO = 15.0
QUESTIONS: dict[str, Any] = {
    "questions": {
        "refund": {"type": "noul", "instructions": "Is the customer asking for money back?"},
        "desk": {
            "type": "choice",
            "instructions": "Which desk should own this ticket?",
            "criteria": {
                "billing": "own it here when the problem is money that moved",
                "shipping": "own it here when the problem is a parcel",
                "technical": "own it here when the product itself fails",
                "account": "own it here when the problem is a login or a setting",
            },
        },
        "urgency": {
            "type": "score",
            "instructions": "How fast does this ticket need a human?",
            "criteria": [
                "the customer is waiting on an answer",
                "the customer will chase if nobody replies today",
                "the customer is blocked right now",
                "the customer's whole team is blocked right now",
            ],
        },
    }
}


def run(pack: int, n: int, tmp: Path, qfile: Path, env: dict[str, str]) -> dict[str, Any]:
    src, out = tmp / f"in-{pack}.jsonl", tmp / f"out-{pack}.jsonl"
    with open(src, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"t{i}", "text": f"ticket {i}: charged twice"}) + "\n")
    proc, url = start_server("--rate-limit", f"{LIMIT_PER_MIN}/min", env=env)
    try:
        cmd = [*toolnexus(), "batch", str(qfile), str(src), "--id-field", "id", "--state-field",
               "text", "-o", str(out), "--concurrency", "64", "--pack", str(pack),
               "--base-url", f"{url}/v1"]  # fmt: skip
        started = time.perf_counter()
        ran = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        wall = time.perf_counter() - started
        served = stats(url)
    finally:
        stop(proc)
    records = [json.loads(x) for x in out.read_text().splitlines()]
    ids = Counter(r["id"] for r in records)
    m = re.search(r", ([0-9.]+) s$", ran.stderr.strip().splitlines()[-1])
    batch_wall = float(m.group(1)) if m else wall
    errors = sum("error" in r for r in records)
    return {
        "pack": pack,
        "states": n,
        "exit": ran.returncode,
        "errors": errors,
        "once": len(ids) == n and set(ids.values()) == {1},
        "rate": (len(records) - errors) / batch_wall,
        "wall": batch_wall,
        "requests": sum(served["statuses"].values()),
        "throttled": served["statuses"].get("429", 0),
        "tokens_per_state": served["usage"]["input_tokens"] / n,
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        qfile = Path(tmp) / "questions.yaml"  # JSON is YAML
        qfile.write_text(json.dumps(QUESTIONS), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k != "TYPESAFE_API_KEY"}
        env["TYPESAFE_API_KEY"] = "bench-key"
        got = [run(pack, n, Path(tmp), qfile, env) for pack, n in RUNS]
    overhead = input_tokens(b"", {})
    for r in got:
        print(
            f"--pack {r['pack']:>2}: {r['states']} states, exit {r['exit']}, {r['errors']} error "
            f"records, each decided once: {r['once']}; {r['rate']:.1f} states/s "
            f"({r['wall']:.1f} s, {r['requests']} requests, {r['throttled']} answered 429); "
            f"{r['tokens_per_state']:.1f} input tokens per state (server's overhead per request: "
            f"{overhead})"
        )
    ratio = got[0]["rate"] / got[1]["rate"]
    print(f"--pack 20 / --pack 1: {ratio:.1f}x states per second (target: >= {TARGET_RATIO}x)")
    ok = ratio >= TARGET_RATIO and all(r["errors"] == 0 and r["once"] for r in got)
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
