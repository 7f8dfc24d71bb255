"""Print one short line per record of a ``toolnexus batch`` JSONL file: the id, then each
answer's label (score) or probability (noul) or choice, with its band. Used by ``make demo``."""

from __future__ import annotations

import json
import sys


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record.get("error"):
                print(f"   {record['id']:40} error: {record['error'].get('message')}")
                continue
            parts = []
            for key, answer in sorted(record["answers"].items()):
                value = answer.get("label", answer.get("choice", answer.get("noul")))
                parts.append(f"{key}={value} ({answer.get('band')})")
            print(f"   {record['id']:40} " + "  ".join(parts))


if __name__ == "__main__":
    main(sys.argv[1])
