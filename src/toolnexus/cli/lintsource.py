"""What only the source text shows: comments that cut a text scalar (TN040) and the inline
suppressions ``# toolnexus: ignore[TNxxx] reason`` (TN090, TN091).

Comments never reach the request: the canonical bytes are built from the parsed values, which
hold no comment (a test checks that ``questions/support-triage.yaml``'s suppression leaves its
digest, the one its recordings match on, unchanged).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..core import Located, NodePath
from ..questionfile import CODES, Finding

__all__ = ["Suppression", "apply_suppressions", "comment_cuts", "suppressions"]

_SUPPRESSION = re.compile(r"#\s*toolnexus:\s*ignore\[([^\]]*)\]\s*(.*?)\s*$")
#: The text fields a comment can cut: below a question, its instructions and its criteria.
_TEXT_FIELDS = frozenset({"instructions", "criteria"})


@dataclass
class Suppression:
    """One ``# toolnexus: ignore[...]`` comment: the codes it names, on 1-based ``line``."""

    line: int
    col: int
    codes: tuple[str, ...]
    reason: str
    used: bool = False


def suppressions(text: str, path: str) -> tuple[list[Suppression], list[Finding]]:
    """The suppression comments of ``text``, and a TN091 for each malformed one."""
    found: list[Suppression] = []
    problems: list[Finding] = []
    if "toolnexus:" not in text:  # most files: one search instead of a loop over the lines
        return found, problems
    for number, line in enumerate(text.splitlines(), 1):
        if "toolnexus:" not in line:
            continue
        m = _SUPPRESSION.search(line)
        if m is None:
            continue
        col = m.start() + 1
        codes = tuple(c.strip() for c in m.group(1).split(",") if c.strip())
        bad = [c for c in codes if c not in CODES]
        if bad:
            problem = f"suppression names unknown code {bad[0]!r}"
        elif not codes:
            problem = "suppression names no code: write # toolnexus: ignore[TNxxx] <reason>"
        elif not m.group(2):
            problem = (
                f"suppression of {', '.join(codes)} gives no reason: say why it does not apply"
            )
        else:
            problem = ""
        if problem:
            problems.append(Finding(path, number, col, "TN091", problem))
        if codes and not bad:  # a suppression without a reason still suppresses
            found.append(Suppression(number, col, codes, m.group(2)))
    return found, problems


def question_spans(doc: Located) -> dict[int, int]:
    """For each question key's line, the last line any node of that question starts on: a
    suppression on a question's key line covers the whole question."""
    spans: dict[int, int] = {}
    starts: dict[str, int] = {}
    for path, (line, _) in doc.key_marks.items():
        if len(path) == 2 and path[0] == "questions":
            starts[str(path[1])] = line
    last: dict[str, int] = {}
    for path, (line, _) in doc.marks.items():
        if len(path) >= 2 and path[0] == "questions" and str(path[1]) in starts:
            key = str(path[1])
            last[key] = max(last.get(key, 0), line)
    for key, line in starts.items():
        spans[line] = max(line, last.get(key, line))
    return spans


def apply_suppressions(
    findings: Iterable[Finding], found: list[Suppression], spans: dict[int, int]
) -> list[Finding]:
    """``findings`` without the suppressed ones; a suppression covers its own line, and the
    whole question when it sits on a question's key line. Errors that stop the file loading are
    never suppressed (eval would still refuse the file)."""
    kept: list[Finding] = []
    for finding in findings:
        hit = None
        if not finding.is_error:
            for s in found:
                if finding.code in s.codes and s.line <= finding.line <= spans.get(s.line, s.line):
                    hit = s
                    break
        if hit is None:
            kept.append(finding)
        else:
            hit.used = True
    return kept


def unused(found: list[Suppression], path: str) -> list[Finding]:
    return [
        Finding(
            path,
            s.line,
            s.col,
            "TN090",
            f"suppression of {', '.join(s.codes)} suppresses nothing: remove it",
        )
        for s in found
        if not s.used
    ]


def _is_text_path(path: NodePath) -> bool:
    return len(path) >= 3 and path[0] == "questions" and path[2] in _TEXT_FIELDS


def _where(path: NodePath) -> str:
    rest = ".".join(str(p) for p in path[2:])
    return f"question {path[1]!r}: {rest}"


def comment_cuts(text: str, doc: Located, path: str) -> list[Finding]:
    """TN040: a plain text scalar followed on its line by a comment that looks like the rest of
    the text (`` #`` after one space, or ``#`` followed by no space); suppressions are
    comments that are meant."""
    if "#" not in text:
        return []
    lines = text.splitlines()
    hashed = {n for n, line in enumerate(lines, 1) if "#" in line}
    out: list[Finding] = []
    for node_path, (line, col) in doc.plain_ends.items():
        if line not in hashed or not _is_text_path(node_path):
            continue
        rest = lines[line - 1][col - 1 :]
        m = re.match(r"(\s+)#(.*)$", rest)
        if m is None or _SUPPRESSION.match(rest.lstrip()):
            continue
        one_space = m.group(1) == " "
        glued = bool(m.group(2)) and not m.group(2)[0].isspace() and m.group(2)[0] != "#"
        if not (one_space or glued):
            continue
        value = doc_value(doc, node_path)
        cut = rest.strip()
        out.append(
            Finding(
                path,
                line,
                col + len(m.group(1)),
                "TN040",
                f"{_where(node_path)} ends at {value!r}: YAML reads {cut!r} as a comment; "
                "quote the text, or write two spaces and '# ' before a comment",
            )
        )
    return out


def doc_value(doc: Located, path: NodePath) -> object:
    """The value at ``path`` (what the parser kept of a cut scalar), or None."""
    value: object = doc.value
    for part in path:
        if isinstance(value, list) and isinstance(part, int) and part < len(value):
            value = value[part]
            continue
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value
