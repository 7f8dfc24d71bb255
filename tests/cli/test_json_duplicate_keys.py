"""Issue 31 item 21: "Duplicate keys in a JSON state collapse silently (YAML duplicates are an
error): say so on stderr with the line." One warning naming the file and line; the state is
still read (JSON keeps the last value)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clirun import run_cli
from paths import REPO
from toolnexus.core.jsonlimits import duplicate_key, loads_noting_duplicates

QUESTIONS = str(REPO / "questions" / "noul-small.yaml")


@pytest.mark.parametrize(
    ("text", "found"),
    [
        pytest.param('{"a": 1, "a": 2}', ("a", 1), id="top-level"),
        pytest.param('{"a": 1,\n "b": {"a": 2},\n\n "a": 3}', ("a", 4), id="nested-same-key-ok"),
        pytest.param('[{"a": 1}, {"a": 2}]', None, id="sibling-objects"),
        pytest.param('{"s": "{\\"k\\": 1, \\"k\\": 2}"}', None, id="braces-inside-a-string"),
        pytest.param('{"x": [1, {"k": 1,\n"k": 2}]}', ("k", 2), id="inside-an-array"),
        pytest.param('{"\\u0061": 1, "a": 2}', ("a", 1), id="escaped-spelling"),
    ],
)
def test_duplicate_key_names_the_key_and_its_line(text: str, found: object) -> None:
    value, twice = loads_noting_duplicates(text)
    assert twice == found
    assert duplicate_key(text) == found
    assert value is not None


def test_eval_state_file_with_a_repeated_key_warns_once_with_its_line(tmp_path: Path) -> None:
    """Item 21 for a .json state file (eval, canonical --state): one warning, file:line."""
    state = tmp_path / "dup.json"
    state.write_text('{"text": "a",\n "id": 1,\n "text": "b"}\n', encoding="utf-8")
    ran = run_cli("canonical", QUESTIONS, "--state", str(state))
    assert ran.code == 0, ran.stderr
    assert ran.stderr == (
        f"toolnexus: warning: {state}:3: key 'text' appears twice in one JSON object; only its "
        "last value is sent\n"
    )
    assert '"text":"b"' in ran.out


def test_batch_jsonl_with_repeated_keys_warns_once_per_file(tmp_path: Path) -> None:
    """Item 21 for batch JSONL: the first such line is named, once for the file."""
    lines = ['{"id":"a","text":"x"}', '{"id":"b","text":"x","text":"y"}', '{"id":"c","c":1,"c":2}']
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ran = run_cli("batch", QUESTIONS, str(src), "--id-field", "id", "--dry-run")
    assert ran.code == 0, ran.stderr
    warnings = [line for line in ran.stderr.splitlines() if "appears twice" in line]
    assert warnings == [
        f"toolnexus: warning: {src}:2: key 'text' appears twice in one JSON object; only its "
        "last value is sent (the first such line of this file)"
    ]


def test_pack_states_with_a_repeated_key_warns_once(tmp_path: Path) -> None:
    """Item 21 for ``canonical --pack-states`` (one JSON state per line)."""
    states = tmp_path / "states.jsonl"
    states.write_text('"charged twice"\n{"t": 1, "t": 2}\n{"u": 1, "u": 2}\n', encoding="utf-8")
    ran = run_cli("canonical", QUESTIONS, "--pack-states", str(states))
    assert ran.code == 0, ran.stderr
    assert ran.stderr == (
        f"toolnexus: warning: {states}:2: key 't' appears twice in one JSON object; only its "
        "last value is sent (the first such line of this file)\n"
    )
