"""Issue 34's speed item: "the new rules add at most 20% on a 255-option file and on a directory
of 200 question files", with every rule's verdict unchanged. Each shortcut the rules take is held
here to the exact computation it skips: a rule's word gate to its pattern, the token bound to
the estimator, the joined option-id search to the per-option one."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from test_check_rules import CORPUS, JEVKIT

from paths import REPO
from toolnexus.cli import lintbudget
from toolnexus.cli.lintbudget import upper_at_most
from toolnexus.cli.questionrules import _WORD, _split, has_no_match_option
from toolnexus.cli.questionwords import GATES, NO_MATCH_IDS, NO_MATCH_TEXT, NO_MATCH_WORDS
from toolnexus.scheduler import tokens
from toolnexus.scheduler.tokens import estimate_tokens

SEED = 34


def _texts() -> list[str]:
    """The rules' own corpus, every shipped question's instructions, and random mixes of the
    gates' words with noise, in varied case (fixed seed)."""
    texts = [p.values[0] for p in CORPUS] + [p.values[0] for p in JEVKIT]
    for path in sorted((REPO / "questions").glob("*.yaml")):
        texts.append(path.read_text(encoding="utf-8"))
    rng = random.Random(SEED)
    vocab = [w for g in GATES.values() for w in g.words] + [
        "Is", "the", "customer", "isn't", "30 days", "2024-01-01", "17 + 25", "more than",
        "three", "at least", "a dozen", "Neither", "nor", "Monday", "ago", "Please", "why",
        ".", "?", ";", "\n", "  ", "ſummarize", "\u212aelvin", "not unhappy", "how old",
    ]  # fmt: skip
    for _ in range(3_000):
        words = rng.choices(vocab, k=rng.randint(1, 8))
        text = " ".join(w.upper() if rng.random() < 0.2 else w for w in words)
        texts.append(text)
    return texts


@pytest.mark.parametrize("name", sorted(GATES))
def test_each_rules_word_gate_gives_its_patterns_verdict(name: str) -> None:
    """ "Skip rules whose cheap precondition fails": never a verdict the pattern would not give."""
    gate = GATES[name]
    texts = _texts()
    assert [gate.search(t) for t in texts] == [bool(gate.pattern.search(t)) for t in texts]
    assert any(t.isascii() and not gate.search(t) for t in texts)


def test_the_token_bound_is_never_under_the_estimators_upper_bound() -> None:
    """lintbudget skips the estimate of a set whose bound is under NEAR of the 32k rule: the
    bound must hold for any ASCII body (random bytes of every class, the densest texts, the
    shipped question sets' requests) and gives up on any other."""
    rng = random.Random(SEED)
    alphabet = b"aZ 09,.{}\"\\:\t\n\x1c\x7f-_'"
    bodies = [b"", b"a", b"1a" * 5_000, b"1234" * 2_000, b" a" * 3_000, b",,,," * 2_000]
    bodies += [bytes(rng.choices(alphabet, k=rng.randint(1, 4_000))) for _ in range(300)]
    for path in sorted((REPO / "questions").glob("*.yaml")):
        bodies.append(path.read_bytes())
    for body in bodies:
        bound = upper_at_most(body)
        assert bound is not None and bound >= estimate_tokens(body).upper, body[:60]
    assert upper_at_most("café".encode()) is None


def test_the_bounds_constants_are_the_estimators() -> None:
    assert (
        lintbudget._OVERHEAD,
        lintbudget._PER_PIECE,
        lintbudget._MARGIN,
        lintbudget._BYTES_OVERHEAD,
        lintbudget._SMALLER_LIMIT,
    ) == (
        tokens.OVERHEAD_TOKENS,
        tokens.TOKENS_PER_PIECE,
        tokens.UPPER_MARGIN,
        tokens.UPPER_OVERHEAD_TOKENS,
        tokens.STATE_AND_QUESTION_TOKENS,
    )
    spaces = bytes(c for c in range(128) if chr(c).isspace())
    assert set(spaces) == set(lintbudget._SPACES)


def _no_match_one_by_one(criteria: Mapping[Any, Any]) -> bool:
    """has_no_match_option as it was: each option id on its own."""
    for option in criteria:
        low = str(option).strip().lower()
        words = _WORD.findall(low) if low == option else _split(str(option))
        if low in NO_MATCH_IDS or not NO_MATCH_WORDS.isdisjoint(words):
            return True
    text = "\n".join(v for v in criteria.values() if isinstance(v, str))
    return bool(NO_MATCH_TEXT.search(text))


def test_the_joined_option_id_search_gives_the_per_option_verdict() -> None:
    rng = random.Random(SEED)
    ids: list[Any] = ["billing", "shipping", "noneLeft", "Other", "other", "n/a", "NA", "x_na",
                      "otherwise", "no_match", "default_bin", 7, "don't", "misc\nthing",
                      " None "]  # fmt: skip
    for _ in range(2_000):
        keys = rng.sample(ids, k=rng.randint(1, 5))
        criteria = {k: rng.choice(["a parcel", None, "money that moved"]) for k in keys}
        assert has_no_match_option(criteria) == _no_match_one_by_one(criteria), criteria


def test_the_wide_sets_budget_is_judged_without_the_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 255-option set (about 17 KB, past the byte gate) far under the limits is cleared by
    the bound: the estimate over the question set is not made."""
    import importlib.util

    from toolnexus.cli.lintrun import Controls, check_file
    from toolnexus.core.questions import questions_to_wire
    from toolnexus.questionfile.load import lint_file

    spec = importlib.util.spec_from_file_location("check_rules", REPO / "bench/check_rules.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = bench._wide(tmp_path)[0]
    wire = questions_to_wire(lint_file(path).questions)
    assert len(json.dumps(wire, separators=(",", ":")).encode()) > lintbudget.GATE_BYTES
    monkeypatch.setattr(lintbudget, "request_budget", _refuse)
    assert not [f for f in check_file(path, Controls()) if f.code in {"TN030", "TN031"}]


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the estimate was made")


def test_a_near_limit_set_past_the_bound_is_still_estimated() -> None:
    """The bound only clears: near the limit the estimate decides, as before."""
    from test_check_rules import _codes, _words

    assert re.fullmatch(r"TN031", " ".join(sorted(_codes(_words(6_000)) & {"TN030", "TN031"})))


def test_the_instruction_rules_common_gate_fails_only_where_each_of_them_fails() -> None:
    from toolnexus.cli.questionwords import INSTRUCTION_GATE

    four = [GATES[n] for n in ("GENERATION", "COUNTING", "DATES", "NEGATION")]
    for text in _texts():
        if not INSTRUCTION_GATE.may(text):
            assert not any(g.pattern.search(text) for g in four), text


def test_a_file_without_gates_does_not_import_the_judge_layer() -> None:
    """ "check-criteria start-up stays <= 3.0x import yaml": the judge layer (policy, bands,
    validation) is a third of it, and only a file that declares gates needs it."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom toolnexus.cli.lintrun import Controls, check_file\n"
        "check_file('questions/guard.yaml', Controls())\n"
        "print('toolnexus.core.policy' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False", out.stderr


# The shortcuts below were added when the 200-file directory still cost 1.29x the shape lint.

_ADVERSARIAL = {
    # The source constructs that grow most on the wire (lintbudget's comment names them).
    "flow-keys-without-values": "{" + ",".join("abcdefghijklmnopqrstuvwxyz0123456789") + "}",
    "two-char-flow-keys": "{" + ",".join(f"{a}{b}" for a in "abcdef" for b in "xyz") + "}",
    "escapes": '"' + "\\0\\a\\e\\x01" * 40 + '"',
    "floats": "{" + ",".join(f"k{i}: 1.e+15" for i in range(40)) + "}",
    "booleans-and-nulls": "{" + ",".join(f"k{i}: {v}" for i, v in enumerate("nyN~" * 10)) + "}",
    "tabs-and-quotes": "'" + 'a\t"\\' * 60 + "'",
    "literal-blank-lines": "|\n      a" + "\n" * 80 + "      b",
    "non-ascii": "¿Está el paquete dañado? ☃ " * 20,
}


def _bound_cases() -> list[Any]:
    cases = [
        pytest.param("questions:\n  q:\n    type: noul\n    instructions: " + value + "\n", id=name)
        for name, value in _ADVERSARIAL.items()
    ]
    empty = "".join(f"  q{i}: {{type: noul, instructions: x, criteria: {{}}}}\n" for i in range(50))
    cases.append(pytest.param("questions:\n" + empty, id="noul-criteria-sent-empty"))
    for path in sorted((REPO / "questions").glob("*.yaml")):
        cases.append(pytest.param(path.read_text(encoding="utf-8"), id=path.name))
    return cases


@pytest.mark.parametrize("text", _bound_cases())
def test_the_source_bound_is_never_under_the_wire_bytes(text: str) -> None:
    """lintbudget clears a set whose source bound is at most GATE_BYTES without encoding its
    wire form: the bound must hold for the constructs that grow most from YAML to JSON."""
    from toolnexus.cli.lintbudget import source_bound
    from toolnexus.core.questions import questions_to_wire
    from toolnexus.questionfile.load import lint_text

    lint = lint_text(text, "f.yaml")
    assert not lint.errors and lint.questions, lint.errors
    wire = questions_to_wire(lint.questions)
    size = len(json.dumps(wire, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())
    bound = source_bound(text, len(lint.questions))
    assert bound is not None and bound >= size


def test_an_alias_leaves_the_source_bound_to_the_wire_bytes() -> None:
    """An alias sends one written node many times: no bound from the source's size, and a
    small file that uses one is measured on its wire form, as before."""
    from toolnexus.cli.lintbudget import source_bound
    from toolnexus.cli.lintrun import Controls, check_text

    assert source_bound("a: &x [1]\nb: *x\n", 1) is None
    word = "word " * 100
    text = (
        f'questions:\n  q:\n    type: noul\n    instructions:\n      a: &a "{word}"\n'
        f"      b: &b [{', '.join(['*a'] * 10)}]\n      c: &c [{', '.join(['*b'] * 10)}]\n"
        f"      d: [*c, *c, *c, *c]\n"
    )
    assert lintbudget._PER_SOURCE_BYTE * len(text) < lintbudget.GATE_BYTES
    assert {f.code for f in check_text(text, "f.yaml", Controls())} == {"TN030"}


def test_a_small_files_budget_is_judged_without_its_wire_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-file JSON encoding was a fifth of what the rules added over 200 small files: a
    file whose source bound is under the byte gate is cleared without it."""
    from toolnexus.cli.lintrun import Controls, check_file

    monkeypatch.setattr(lintbudget, "questions_to_wire", _refuse)
    for path in sorted((REPO / "questions").glob("*.yaml")):
        if path.stat().st_size * lintbudget._PER_SOURCE_BYTE < lintbudget.GATE_BYTES // 2:
            assert not [f for f in check_file(path, Controls()) if f.code.startswith("TN03")]


def _restates_as_it_was(text: str, key: str) -> bool:
    """TN053 without its letter gate (questionrules.text_rules as it was)."""
    from toolnexus.cli.questionrules import _stems
    from toolnexus.cli.questionwords import FILLER

    if len(text) > 2 * len(key) + 40:
        return False
    said, keyed = _split(text), _split(key)
    if len(said) > len(keyed) + 3:
        return False
    content = {w for w in _stems(said) if w not in FILLER}
    return bool(content) and content <= set(_stems(keyed))


def _named_as_it_was(text: str, key: str, keys: set[str]) -> set[str]:
    """TN051 without its underscore gate: every identifier-like key named whole-word."""
    from toolnexus.cli.questionrules import _identifier_like
    from toolnexus.cli.questionwords import TOKEN

    keyish = {k for k in keys if _identifier_like(k)}
    return (set(TOKEN.findall(text)) & keyish) - {key}


def _rule_cases() -> list[tuple[str, list[str]]]:
    """(instructions, keys) pairs: texts made of the keys' words, plurals, filler, other words,
    the other keys, in varied case (fixed seed)."""
    rng = random.Random(SEED)
    keys = ["wants_refund", "refund", "isRefund", "urgency_17", "desk", "Colour", "café_ok",
            "order_status", "step2", "readFile", "tone"]  # fmt: skip
    vocab = ["is", "the", "a", "there", "any", "does", "refunds", "wants", "want", "urgency",
             "desk", "desks", "colour", "café", "ok", "order", "status", "step", "2", "read",
             "file", "tone", "tones", "human", "don't", "isn't", "?", ".", "\u212aelvin",
             "ſtatus", "-", "_", *keys]  # fmt: skip
    cases = []
    for _ in range(3_000):
        chosen = rng.sample(keys, k=rng.randint(1, 4))
        words = rng.choices(vocab, k=rng.randint(1, 7))
        text = " ".join(w.upper() if rng.random() < 0.15 else w for w in words)
        cases.append((text, chosen))
    return cases


def test_the_letter_and_underscore_gates_give_the_rules_verdicts() -> None:
    """TN053 is skipped for a text holding a letter its key and the filler words lack; TN051's
    pattern for camelCase and digit keys is skipped when every key has an underscore and the
    text none: each gives the verdict the full computation gives."""
    from toolnexus.cli.questionrules import _may_restate, meaning_findings
    from toolnexus.core.yamlread import Located

    fired = {"TN051": 0, "TN053": 0, "gated": 0}
    for text, keys in _rule_cases():
        questions = {k: {"type": "noul", "instructions": text, "criteria": {"true": "y"}}
                     for k in keys}  # fmt: skip
        found = meaning_findings("f.yaml", Located(value={"questions": questions}))
        for key in keys:
            mine = [f for f in found if f.message.startswith(f"question {key!r}:")]
            restates = any(f.code == "TN053" for f in mine)
            named = {f.message.split("names question ")[1].split(":")[0].strip("'")
                     for f in mine if f.code == "TN051"}  # fmt: skip
            assert restates == _restates_as_it_was(text, key), (text, key)
            assert named == _named_as_it_was(text, key, set(keys)), (text, keys)
            fired["TN053"] += restates
            fired["TN051"] += bool(named)
            fired["gated"] += not _may_restate(text.lower(), key)
    assert all(n > 50 for n in fired.values()), fired
