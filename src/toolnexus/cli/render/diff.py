"""The words form of ``toolnexus diff``: one line per change, breaking ones marked, then the
request digest and the question-set digest before and after, and what still applies. Plain
text: it reads the same in a terminal, a pipe and a code review."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from ...core import QUESTIONS_DIGEST, REQUEST_DIGEST

__all__ = ["write_diff"]


def write_diff(data: Mapping[str, Any], out: IO[str]) -> None:
    old, new = data["old"], data["new"]
    lines = [f"--- {old['source']}", f"+++ {new['source']}"]
    changes = data["changes"]
    if not changes and data["equal"]:
        lines.append("no change: the canonical bytes are equal")
    elif not changes:
        lines.append("no question changed (the YAML differs only in form)")
    by_key: dict[str | None, list[Mapping[str, Any]]] = {}
    for c in changes:
        by_key.setdefault(c["key"], []).append(c)
    for key, group in by_key.items():
        if key is None:
            for c in group:
                lines.append(("BREAKING " if c["breaking"] else "") + c["message"])
            continue
        kinds = {c["kind"] for c in group}
        mark = "+" if "question_added" in kinds else "-" if "question_removed" in kinds else "~"
        lines.append(f"{mark} {key}")
        for c in group:
            lines.append("    " + ("BREAKING " if c["breaking"] else "") + c["message"])
    breaking = data["breaking"]
    lines.append("")
    if breaking:
        lines.append(
            f"{breaking} breaking change{'s' if breaking != 1 else ''}: re-check labels, "
            "thresholds and recordings tuned on the old set"
        )
    # Both named digests (issue 16): the request digest is what `canonical --sha256` prints,
    # the question-set digest what batch records carry as questions_sha256.
    lines.append(f"{REQUEST_DIGEST} before {old['sha256']}")
    lines.append(f"{REQUEST_DIGEST} after  {new['sha256']}")
    lines.append(f"{QUESTIONS_DIGEST} before {old['questions_sha256']}")
    lines.append(f"{QUESTIONS_DIGEST} after  {new['questions_sha256']}")
    applies = data["still_apply"]

    def yes(flag: bool) -> str:
        return "still apply" if flag else "no longer apply"

    lines.append(f"recordings: {yes(applies['recordings'])}")
    lines.append(f"cached decisions: {yes(applies['cached_decisions'])}")
    out.write("\n".join(lines) + "\n")
