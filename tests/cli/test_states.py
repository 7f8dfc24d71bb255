"""State inputs (issue 4, "State inputs"): "A path (.txt/.md/.log -> string, .json -> JSON value,
.yaml/.yml -> YAML value), - for stdin, or --state-text TEXT; --as text|json|yaml overrides the
guess. A state must be a string, object or array: anything else is a clear error before any
request." """

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from toolnexus.core.errors import RunError
from toolnexus.core.failures import EXIT_USAGE
from toolnexus.run.states import guess_format, load_state


@pytest.mark.parametrize(
    ("name", "content", "as_", "want"),
    [
        pytest.param("t.txt", "charged twice\n", None, "charged twice", id="txt-string"),
        pytest.param("t.md", "# Ticket\nbody\n", None, "# Ticket\nbody", id="md-string"),
        pytest.param("t.log", "line 1\r\n", None, "line 1", id="log-crlf-one-newline-dropped"),
        pytest.param("t.txt", "two\n\n", None, "two\n", id="only-one-final-newline-dropped"),
        pytest.param(
            "t.json", '{"b": [1, 2], "a": null}', None, {"b": [1, 2], "a": None}, id="json-object"
        ),
        pytest.param("t.json", '["x", 1.5]', None, ["x", 1.5], id="json-array"),
        pytest.param("t.json", '"just text"', None, "just text", id="json-string"),
        pytest.param(
            "t.yaml",
            "command: ls\ncwd: /repo\n",
            None,
            {"command": "ls", "cwd": "/repo"},
            id="yaml-object",
        ),
        pytest.param("t.YML", "- a\n- b\n", None, ["a", "b"], id="yml-upper-suffix-array"),
        pytest.param("t.txt", '{"a": 1}', "json", {"a": 1}, id="as-json-overrides-txt"),
        pytest.param("t.json", '{"a": 1}\n', "text", '{"a": 1}', id="as-text-overrides-json"),
        pytest.param("state", "k: v\n", "yaml", {"k": "v"}, id="as-yaml-on-suffixless"),
    ],
)
def test_a_state_file_is_read_by_its_suffix_or_as(
    tmp_path: Path, name: str, content: str, as_: Any, want: Any
) -> None:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8"))
    assert load_state(str(path), as_=as_) == want


def test_state_text_is_verbatim_and_stdin_is_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """--state-text keeps its newline; `-` reads stdin as text unless --as says otherwise."""
    assert load_state(None, text="a\n") == "a\n"
    assert load_state(None, text='{"a": 1}', as_="json") == {"a": 1}
    monkeypatch.setattr("sys.stdin", io.StringIO("from a pipe\n"))
    assert load_state("-") == "from a pipe"
    monkeypatch.setattr("sys.stdin", io.StringIO('[1, "x"]'))
    assert load_state("-", as_="json") == [1, "x"]


@pytest.mark.parametrize(
    ("name", "content", "as_", "expect"),
    [
        pytest.param(
            "n.json",
            "42",
            None,
            "n.json: a state must be a string, an object or an array, got a number",
            id="json-number",
        ),
        pytest.param("b.json", "true", None, "got a boolean", id="json-boolean"),
        pytest.param("z.json", "null", None, "got null", id="json-null"),
        pytest.param(
            "e.yaml",
            "",
            None,
            "e.yaml: a state must be a string, an object or an array, got null",
            id="empty-yaml-is-null",
        ),
        pytest.param("f.yml", "3.5\n", None, "got a number", id="yaml-number"),
        pytest.param(
            "s.json",
            '{"a": 1,\n  "b": }',
            None,
            "s.json:2:8: invalid JSON: Expecting value",
            id="json-syntax-line-col",
        ),
        pytest.param(
            "y.yaml",
            "a: [1, 2\nb: 3\n",
            None,
            "y.yaml:2:2: invalid YAML:",
            id="yaml-syntax-line-col",
        ),
        pytest.param(
            "t.csv",
            "x",
            None,
            "t.csv: cannot tell how to read a .csv file as a state",
            id="unknown-suffix",
        ),
        pytest.param("t.txt", "1", "xml", "--as takes text, json or yaml", id="bad-as"),
    ],
)
def test_a_bad_state_is_one_clear_error_naming_the_file(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    content: str,
    as_: Any,
    expect: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    Path(name).write_text(content, encoding="utf-8")
    with pytest.raises(RunError) as e:
        load_state(name, as_=as_)
    assert expect in e.value.message
    assert "\n" not in e.value.message
    assert e.value.exit_code == EXIT_USAGE


def test_missing_unreadable_and_conflicting_sources(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="no such state file"):
        load_state(str(tmp_path / "absent.txt"))
    with pytest.raises(RunError, match="is a directory"):
        load_state(str(tmp_path), as_="text")
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe")
    with pytest.raises(RunError, match="not UTF-8"):
        load_state(str(tmp_path / "bin.txt"))
    with pytest.raises(RunError, match="not both"):
        load_state("x.txt", text="y")
    with pytest.raises(RunError, match="no state"):
        load_state(None)


def test_guess_format_table() -> None:
    assert [guess_format(f"a{s}") for s in (".txt", ".md", ".log", ".json", ".yaml", ".yml")] == [
        "text",
        "text",
        "text",
        "json",
        "yaml",
        "yaml",
    ]
