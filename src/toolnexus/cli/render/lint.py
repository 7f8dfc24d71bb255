"""``check-criteria``'s outputs: findings as text lines, a JSON array or a SARIF 2.1.0 log (for
code-scanning annotations), and the rule table (``--list-rules``, ``--explain CODE``).

Every rule's words come from ``questionfile.rules.RULES``; nothing here restates one."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import PurePath
from typing import IO, Any

from ...core import printable
from ...questionfile import RULES, RULES_URL, Finding, Rule

__all__ = ["LintResult", "RulesResult", "sarif_log"]

#: SARIF 2.1.0's published schema (OASIS), named in the log so a consumer can validate it.
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {"info": "note", "warning": "warning", "error": "error"}


@dataclass(frozen=True)
class LintResult:
    """``check-criteria``: every finding that remains after the controls, in file order."""

    findings: tuple[Finding, ...] = ()


@dataclass(frozen=True)
class RulesResult:
    """``--list-rules`` (every rule) or ``--explain CODE`` (one, ``explain`` set)."""

    rules: tuple[Rule, ...] = RULES
    explain: bool = False


def _rule_json(rule: Rule) -> dict[str, Any]:
    return {
        "code": rule.code,
        "severity": rule.severity,
        "summary": rule.summary,
        "rationale": rule.rationale,
        "fix": rule.fix,
        "blocks_loading": rule.blocks,
        "help_uri": rule.help_uri,
    }


def _sarif_rule(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.code,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.rationale or rule.summary},
        "help": {"text": rule.fix or rule.summary},
        "helpUri": rule.help_uri,
        "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
    }


def sarif_log(findings: tuple[Finding, ...]) -> dict[str, Any]:
    """A SARIF 2.1.0 log of one run: the tool with every rule, and one result per finding."""
    from urllib.parse import quote

    index = {rule.code: i for i, rule in enumerate(RULES)}
    results = [
        {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": quote(PurePath(f.path).as_posix())},
                        "region": {"startLine": f.line, "startColumn": f.col},
                    }
                }
            ],
        }
        for f in findings
    ]
    driver = {
        "name": "toolnexus check-criteria",
        "informationUri": RULES_URL,
        "rules": [_sarif_rule(rule) for rule in RULES],
    }
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "results": results}],
    }


def _dump(data: object, out: IO[str]) -> None:
    out.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def lint_text(result: LintResult, out: IO[str]) -> None:
    # One finding a line, whatever a file name holds: printable keeps newlines, so they are
    # written as \n here (a grep or an editor's jump list reads path:line:col per line).
    out.write("".join(printable(str(f)).replace("\n", "\\n") + "\n" for f in result.findings))


def lint_json(result: LintResult, out: IO[str]) -> None:
    out.write(json.dumps([f.to_json() for f in result.findings], ensure_ascii=False) + "\n")


def lint_sarif(result: LintResult, out: IO[str]) -> None:
    _dump(sarif_log(result.findings), out)


def rules_text(result: RulesResult, out: IO[str]) -> None:
    if not result.explain:
        out.write("".join(f"{r.code}  {r.severity:<7}  {r.summary}\n" for r in result.rules))
        return
    for r in result.rules:
        loads = "stops eval loading the file" if r.blocks else "the file still loads"
        out.write(
            f"{r.code} ({r.severity}; {loads}): {r.summary}\n\n{r.rationale}\n\n"
            f"Fix: {r.fix}\n\nSuppress on the key's line: # toolnexus: ignore[{r.code}] <why>\n"
            f"{r.help_uri}\n"
        )


def rules_json(result: RulesResult, out: IO[str]) -> None:
    _dump([_rule_json(r) for r in result.rules], out)


def rules_sarif(result: RulesResult, out: IO[str]) -> None:
    _dump(sarif_log(()), out)
