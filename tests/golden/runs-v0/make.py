"""How the runs in this folder were made: ``toolnexus batch`` of main at 2c1278f (the last
commit before records carried ``schema_version``, issue 30 item 7), run once and kept byte for
byte, so that ``tests/test_schema_version.py`` proves ``report`` and ``batch --resume`` still
read runs written by earlier versions. Never re-run it against newer code: these bytes ARE the
old shape.

    PYTHONPATH=src:tests python tests/golden/runs-v0/make.py   # at 2c1278f

Each run is one question set with a gate (``q.yaml``) over five states, asked with
``--calibration cal.json`` (a map fitted by ``report --fit-calibration`` on 60 states): every
decision record is gated and recalibrated, and state ``s-err`` got a 400 (an error record).
The same run is written as JSONL, JSON, CSV and Parquet.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from clirun import run_cli
from hostile_server import HostileServer, Reply

HERE = Path(__file__).parent
QUESTIONS = """\
questions:
  urgent: {type: noul, instructions: Is the ticket urgent?}
  desk:
    type: choice
    instructions: Which desk should take it?
    criteria:
      billing: the ticket is about a charge or an invoice
      shipping: the ticket is about a parcel
gates:
  route:
    rules:
      - {question: urgent, below: 0.5, action: hold}
    default: permit
"""


def _noul(text: str) -> float:
    return round(0.05 + 0.9 * ((sum(map(ord, text)) * 37) % 100) / 100, 2)


def _answer(req: Any) -> Reply:
    state = str(req.json["state"])
    if state == "s-err":
        body = {"error": {"code": "invalid_state", "message": "the state s-err is refused"}}
        return Reply(400, json.dumps(body).encode())
    p = _noul(state)
    answers = {
        "urgent": {"type": "noul", "noul": p},
        "desk": {
            "type": "choice",
            "choice": "billing" if p >= 0.5 else "shipping",
            "probabilities": {"billing": p, "shipping": round(1 - p, 2)},
            "confidence": 0.8,
        },
    }
    body = {"model": "m-1", "answers": answers, "usage": {"input_tokens": 3, "output_tokens": 2}}
    return Reply(200, json.dumps(body).encode())


def _lines(path: Path, ids: list[str]) -> None:
    path.write_text("".join(json.dumps({"id": i, "text": i}) + "\n" for i in ids), "utf-8")


def main() -> None:
    os.environ["TYPESAFE_API_KEY"] = "tn-runs-v0-key-0123456789"
    work = Path(tempfile.mkdtemp())
    os.chdir(HERE)  # relative names: the records say "cal.json", not this checkout's path
    qfile = Path("q.yaml")
    qfile.write_text(QUESTIONS, "utf-8")
    with HostileServer(_answer) as server:

        def batch(inp: Path, out: Path, *extra: str) -> None:
            ran = run_cli(
                "batch", str(qfile), str(inp), "--id-field", "id", "--state-field", "text",
                "--ordered", "--base-url", server.base_url, "--retries", "0", "-o", str(out),
                *extra,
            )  # fmt: skip
            assert ran.code in (0, 1, 3), ran.stderr

        fit_ids = [f"f{i}" for i in range(60)]
        _lines(work / "fit.jsonl", fit_ids)
        batch(work / "fit.jsonl", work / "fit-run.jsonl")
        labels = "id,urgent\n" + "".join(
            f"{i},{'yes' if _noul(i) > 0.4 + (n % 5) / 10 else 'no'}\n"
            for n, i in enumerate(fit_ids)
        )
        (work / "labels.csv").write_text(labels, "utf-8")
        fitted = run_cli("report", str(work / "fit-run.jsonl"), "--labels",
                         str(work / "labels.csv"), "--fit-calibration", "cal.json")  # fmt: skip
        assert fitted.code == 0, fitted.stderr
        _lines(Path("states.jsonl"), ["s1", "s2", "s-err", "s4", "s5"])
        for fmt in ("jsonl", "json", "csv", "parquet"):
            batch(Path("states.jsonl"), Path(f"run.{fmt}"), "--format", fmt,
                  "--calibration", "cal.json")  # fmt: skip
    shutil.rmtree(work)


if __name__ == "__main__":
    sys.exit(main())
