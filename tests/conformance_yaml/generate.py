"""Write the conformance fixtures' question sets as YAML (run once; the test keeps them honest).

    .venv/bin/python tests/conformance_yaml/generate.py            # tests/conformance_yaml/*.yaml
    .venv/bin/python tests/conformance_yaml/generate.py --captures # questions/<capture>.yaml

Every string is written double-quoted (a JSON string is a valid YAML double-quoted scalar), so
no YAML 1.1 surprise (``no``, ``1e3``, ``2024-01-01``) can change a value; keys are quoted only
when another YAML reader would take them for something other than a string.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FIXTURES = REPO / "tests" / "fixtures"
SCHEMA_LINE = "# yaml-language-server: $schema={}\n"

CAPTURES = {
    "choice_small": "choice-small",
    "choice_wide": "choice-wide",
    "mixed_batch": "mixed-batch",
    "noul_small": "noul-small",
    "score_short": "score-short",
    "score_ten": "score-ten",
}

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_YAML11_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}


def _key(key: str) -> str:
    if _PLAIN_KEY.match(key) and key.lower() not in _YAML11_WORDS:
        return key
    return json.dumps(key, ensure_ascii=False)


def _scalar(value: Any) -> str:
    if isinstance(value, str) and _PLAIN_KEY.match(value) and value.lower() not in _YAML11_WORDS:
        return value
    return json.dumps(value, ensure_ascii=False)


def emit(value: Any, indent: int = 0) -> list[str]:
    """Block-style YAML lines for a JSON value that is a mapping."""
    pad = "  " * indent
    lines: list[str] = []
    for key, item in value.items():
        if isinstance(item, dict) and item:
            lines.append(f"{pad}{_key(key)}:")
            lines.extend(emit(item, indent + 1))
        elif isinstance(item, list) and item:
            lines.append(f"{pad}{_key(key)}:")
            lines.extend(_emit_list(item, indent + 1))
        else:
            empty = "{}" if isinstance(item, dict) else "[]" if isinstance(item, list) else None
            lines.append(f"{pad}{_key(key)}: {empty or _scalar(item)}")
    return lines


def _emit_list(items: list[Any], indent: int) -> list[str]:
    pad = "  " * indent
    lines: list[str] = []
    for item in items:
        if isinstance(item, dict) and item:
            inner = emit(item, indent + 1)
            lines.append(f"{pad}- {inner[0].lstrip()}")
            lines.extend(inner[1:])
        elif isinstance(item, list) and item:
            raise ValueError("nested lists are not used by any fixture")
        else:
            empty = "{}" if isinstance(item, dict) else "[]" if isinstance(item, list) else None
            lines.append(f"{pad}- {empty or _scalar(item)}")
    return lines


def conformance_header(fixture_name: str) -> str:
    return f"# Generated from tests/fixtures/conformance/{fixture_name} by generate.py\n"


def question_set_yaml(model: str, questions: dict[str, Any], header: str, schema: str) -> str:
    # Question fields in reading order (type, instructions, criteria), not the fixture's order.
    ordered = {
        key: {f: q[f] for f in ("type", "instructions", "criteria") if f in q}
        for key, q in questions.items()
    }
    body = emit({"model": model, "questions": ordered})
    return SCHEMA_LINE.format(schema) + header + "\n".join(body) + "\n"


def main() -> None:
    if "--captures" in sys.argv:
        for name, stem in CAPTURES.items():
            capture = json.loads(
                (FIXTURES / "recordings-live" / f"hfiguera_{name}.json").read_text()
            )
            request = capture["request"]
            header = (
                f"# The question set of the live capture hfiguera_{name}.json in\n"
                "# tests/fixtures/recordings-live/ (System One, requested jev-latest, served "
                "jev-1.13.0).\n# Its canonical bytes equal the capture's request questions.\n"
            )
            text = question_set_yaml(
                request["model"],
                request["questions"],
                header,
                "../src/toolnexus/question-set.schema.json",
            )
            (REPO / "questions" / f"{stem}.yaml").write_text(text, encoding="utf-8")
        return
    for fixture in sorted((FIXTURES / "conformance").glob("*.json")):
        data = json.loads(fixture.read_text(encoding="utf-8"))
        request = (data["entries"][0] if "entries" in data else data)["request"]
        header = conformance_header(fixture.name)
        text = question_set_yaml(
            request["model"],
            request["questions"],
            header,
            "../../src/toolnexus/question-set.schema.json",
        )
        (HERE / f"{fixture.stem}.yaml").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
