"""Every ``check-criteria`` rule, written once: code, severity, what it finds, why, and the fix.

``codes.CODES`` (the ``--help`` table), ``--list-rules``, ``--explain CODE``, the SARIF
``rules[]`` and the README's table all derive from :data:`RULES`. Pure data: importable without
YAML or the core, so ``--help`` stays as fast as ``--version``.

Severities follow the evidence (``ecosystem.md``, issue 34): ``warning`` where harm has been
measured or the request would differ from what was written; ``info`` where the vendor documents a
failure mode that independent measurement contradicts or has not confirmed. ``blocks`` marks the
findings that stop ``eval``/``batch`` loading the file (one loader, one verdict: issue 31 item 4);
those are reported whatever ``--select``/``--ignore``/``--level`` say.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["LEVELS", "RULES", "RULES_URL", "Rule", "Severity", "rule_for"]

Severity = Literal["info", "warning", "error"]
#: Severities in rank order: ``--level X`` shows X and everything after it.
LEVELS: tuple[Severity, ...] = ("info", "warning", "error")
#: The README section that documents every rule; a rule's ``helpUri`` is this plus ``#tnNNN``
#: (the README is the package's long description, so the page is where a user installed from).
RULES_URL = "https://pypi.org/project/toolnexus-classifier/"


@dataclass(frozen=True)
class Rule:
    """One stable finding code. ``summary`` is the one-line finding; ``rationale`` says why it
    matters and what evidence ranks it; ``fix`` is what to write instead."""

    code: str
    severity: Severity
    summary: str
    rationale: str = ""
    fix: str = ""
    blocks: bool = False

    @property
    def help_uri(self) -> str:
        return f"{RULES_URL}#{self.code.lower()}"


_SHAPE = "The file is refused by eval and batch with the same one line."
_SHOWN = "A CSV writes it raw and a table or terminal breaks or reorders it."

#: Every rule, grouped by what its rules share: (severity, blocks, the rationale of a row that
#: gives none, rows). A row is (code, summary, rationale, fix). The groups follow the evidence
#: (see the module docstring); RULES lists the rules by code.
_TABLE: tuple[tuple[Severity, bool, str, tuple[tuple[str, str, str, str], ...]], ...] = (
    # The loader refuses the file: eval, batch and the hook give one verdict.
    ("error", True, _SHAPE, (
        ("TN010", "a choice takes 1..255 named options", "",
         "Split the choice, or merge options."),
        ("TN011", "a score takes 2..10 ordered levels", "", "Write 2 to 10 levels."),
        ("TN012", "no questions, or an empty question key", "",
         "Write at least one question under a non-empty key."),
        ("TN020", "schema or shape error (wrong kind of value, unknown field, not a question set)",
         "", "Follow question-set.schema.json (`toolnexus schema`)."),
        ("TN021", "duplicate mapping key (YAML would silently keep the last)", "",
         "Rename or remove one of the two keys."),
        ("TN024", "missing or unknown question type", "",
         "Write noul, choice or score; a type the library does not model takes raw: true."),
        ("TN025", "missing or empty instructions", "", "Write the question."),
        ("TN080", "gate cannot be applied (unknown question, a condition its type cannot meet)",
         "A gate's rule on a question the file does not have, `below`/`at_least` on a choice, "
         "`is` on a noul or score, or an option the choice does not offer would escalate every "
         "record (SPEC §8B: a misfit rule is never skipped). " + _SHAPE,
         "Name a question of this file, and a condition its type can meet (a choice takes "
         "`is: <offered option>`)."),
        ("TN900", "not YAML: syntax error, or not UTF-8 text", "",
         "Fix the YAML at the line shown."),
    )),
    # The server would refuse the request: an error, though eval still loads the file.
    ("error", False, "", (
        ("TN030", "token budget: over a wire limit",
         "The wire refuses a request over 64k tokens, or whose state plus longest question "
         "passes 32k (system-one-wire.md). The estimate is the upper bound the packer uses "
         "(scheduler.tokens); without --state only the question set's own share is counted, "
         "and the state must still fit in what is left.",
         "Shorten the instructions or criteria, split the set (chunk_questions), or send a "
         "smaller state."),
    )),
    # Advice that fails the hook (exit 1) but does not stop eval: measured harm, a request
    # that differs from what was written, or a question set that contradicts itself.
    ("warning", False, _SHOWN, (
        ("TN001", "degenerate choice: every option description is empty",
         "Seed 004's degenerate rule 1: the model has nothing but the ids to tell the options "
         "apart and ranks them near chance.", "Say what picking each option would mean."),
        ("TN002", "degenerate choice: every option description equals its own option id",
         "Seed 004's degenerate rule 2: a description that repeats its id adds nothing.",
         "Say what picking each option would mean, in words that are not the id."),
        ("TN003", "degenerate choice: every option description is identical",
         "Seed 004's degenerate rule 3: identical descriptions cannot differentiate.",
         "Give each option its own description."),
        ("TN022", "duplicate score level",
         "Two equal levels cannot be told apart; the score's mean is then meaningless.",
         "Make every level say something different."),
        ("TN023", "empty option description or score level (when not all are empty)",
         "An option or level with no description is judged by its id alone.", "Describe it."),
        ("TN026", "question key, option id or score level label holds a control or "
         "bidirectional character", "", "Remove the character."),
        ("TN027", "question key, option id or score level label is whitespace only", "",
         "Name it."),
        ("TN028", "question key, option id or score level label contains a newline", "",
         "Keep it on one line."),
        ("TN031", "token budget: near a wire limit (80% or more)",
         "Same limits as TN030: a question set that takes most of the 32k leaves little room "
         "for any state, and every request of a batch then risks a 400.",
         "As TN030; or check a real state with --state FILE."),
        ("TN040", "YAML comment cuts a text scalar",
         "An unquoted ` #` starts a comment, so `instructions: Is the colour #ff4500 in the "
         "logo?` is sent as \"Is the colour\" (ecosystem.md: a trap no peer tool catches). "
         "Flagged when the comment follows the text after ONE space, or its `#` is followed by "
         "no space (`#ff4500`): a deliberate comment usually has two spaces and `# `.",
         "Quote the text (\"...\"); for a real comment, write two spaces then `# `."),
        ("TN041", "YAML 1.1 reads a state value as a boolean or number",
         "In a YAML state (--as yaml), PyYAML reads unquoted `no`, `on`, `y` as booleans and "
         "`010` as the octal number 8: the state sent is not the text written.",
         "Quote the value, or send the state as JSON."),
        ("TN050", "choice has no option that means none of these / other / unknown",
         "Measured harm (PriorBench, jev-1.13): without an explicit \"none of these\" option, 0 "
         "of 30 out-of-scope messages were flagged, at 0.99 confidence (a cake recipe taken for "
         "a technical issue at 0.94). The model always answers, and confidence does not warn.",
         "Add an option such as `other: none of the options above fits`; a set closed on "
         "purpose says so with the suppression, giving the reason it is closed."),
        ("TN051", "instructions name another question's key",
         "Seed 001: questions are independent; one answer is never context for another, so a "
         "question that refers to another question's answer is judged without it. Only "
         "identifier-like keys (with `_`, a digit or an inner capital) are matched, whole-word.",
         "Make the question stand alone: say what you mean instead of naming the other key."),
        ("TN052", "duplicate question (same type, instructions and criteria)",
         "Two keys asking the same thing cost tokens twice and answer identically.",
         "Remove one key."),
        ("TN054", "noul `true` criterion describes the negative of the question",
         "A noul's `true` is what a yes means. A `true` that negates the instructions inverts "
         "every answer and every threshold built on it.",
         "Swap the true and false descriptions, or rephrase the instructions."),
        ("TN055", "generation request (summarize, write, explain why)",
         "A System One model returns probabilities over the question's answers, never text "
         "(seed 001); the vendor lists generation requests among jev-1.13's failure modes.",
         "Ask a noul, choice or score question about the thing to be generated."),
        ("TN070", "floating model alias (jev-latest, jev-preview)",
         "Seed 004: jev-latest is \"the floating alias. PIN IT (e.g. jev-1.13.0) once "
         "thresholds are tuned\": a floating model moves under tuned gates and thresholds. "
         "Reported when the file writes one, or declares gates/thresholds without a model (so "
         "jev-latest would be used).",
         "Write `model: jev-1.13.0` (the version the thresholds were tuned on)."),
        ("TN090", "suppression comment suppresses nothing",
         "A stale `# toolnexus: ignore[...]` hides the next real finding on that line.",
         "Remove the comment, or correct its code."),
        ("TN091", "malformed suppression comment (unknown code, or no reason)",
         "A suppression says why the finding does not apply: without a reason, a reviewer "
         "cannot tell a closed set from a silenced bug.",
         "Write `# toolnexus: ignore[TNxxx] <reason>` with a known code."),
    )),
    # Documented by the vendor or peers, contradicted or unconfirmed by measurement.
    ("info", False, "", (
        ("TN053", "instructions only restate the key",
         "The vendor documents literal reading: the model sees the instructions, never the "
         "key, so a question that is only its key's words carries no definition. Not measured "
         "independently: info.",
         "Say what counts, in a full question."),
        ("TN060", "counting or arithmetic",
         "Documented by the vendor (math and numbers); an independent evaluation measured "
         "number comparison at 99.6% across 13 designs, which contradicts it: info only.",
         "Nothing needed; if answers look wrong, compute the number upstream."),
        ("TN061", "date or time comparison",
         "Documented by the vendor; independently measured at 99.6% (contradicted): info only.",
         "Nothing needed; if answers look wrong, compare the dates upstream."),
        ("TN062", "negated question",
         "Documented by the vendor; independently measured at 100% (contradicted): info only.",
         "Nothing needed; a positive question reads more easily."),
        ("TN063", "vague scope without criteria",
         "Documented by the vendor (literal reading, vague scoping); not confirmed by "
         "independent measurement: info only. A noul with a judgement word (appropriate, "
         "relevant, suspicious, ...) and no criteria leaves the line undefined.",
         "Add criteria: {true: ..., false: ...} saying where the line is."),
        ("TN064", "bare one-word or numeric score levels",
         "Documented by peers (bare score levels); not measured independently: info only. "
         "`[low, medium, high]` or `[1, 2, 3]` leave each level undefined.",
         "Describe each level, or use {label, description}."),
        ("TN065", "indirection: a chain of lookups (the manager of the owner of the account)",
         "Documented by the vendor among jev-1.13's failure modes (indirection) and by a peer "
         "linter (jevkit-lint JEV006); not confirmed by independent measurement: info only. "
         "Two links or more (`the X of the Y of the Z`, `the Y's Z's`, `the X of the Y's Z`) "
         "ask the model to resolve each one from the state before it can answer; one link is "
         "an ordinary phrase and is not reported.",
         "Ask about the thing itself, or resolve the chain upstream and put the result in the "
         "state."),
        ("TN066", "numeric representation: a hex colour, an exponent, or a number with a unit "
         "compared in text",
         "Documented by the vendor (math and numbers) and by a peer linter (jevkit-lint JEV017, "
         "numeric representation); not confirmed by independent measurement: info only. "
         "`#ff4500`, `0xff`, `1e3` or `larger than 2 MB` ask the model to read a number "
         "written one way against a state that may write it another (`2048 KB`, `orange-red`).",
         "Nothing needed; if answers look wrong, convert the number upstream and ask about the "
         "result."),
    )),
)  # fmt: skip

RULES: tuple[Rule, ...] = tuple(
    sorted(
        (
            Rule(code, severity, summary, rationale or shared, fix, blocks)
            for severity, blocks, shared, rows in _TABLE
            for code, summary, rationale, fix in rows
        ),
        key=lambda rule: rule.code,
    )
)

_BY_CODE = {rule.code: rule for rule in RULES}


def rule_for(code: str) -> Rule:
    """The rule of ``code`` (a known code; :data:`RULES` is the only list)."""
    return _BY_CODE[code]
