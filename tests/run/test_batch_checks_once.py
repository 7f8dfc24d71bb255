"""Issue 45 item 1: "``batch`` is flags -> one typed ``RunConfig`` -> ``run_batch`` -> display
and exit code". "Checks run once, in the library; the dry run and the budget sizing each have
one definition, in ``run/``, and ``filter``, MCP and scripts reuse them. ``cli/`` holds no
dry-run or budget module." Counted here: each check once per ``batch``, the question file parsed
once per run (twice with ``--emit-cases``, whose step reads it again for the cases)."""

from __future__ import annotations

import ast
import importlib
import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clirun import run_main
from loopback import Loopback

QUESTIONS = """\
questions:
  addresses_task: {type: noul, instructions: Does the change address the task?}
gates:
  merge:
    rules:
      - {question: addresses_task, below: 0.5, action: hold}
    default: permit
"""

#: the library's checks and the question file's parser, by module and name
COUNTED = (
    ("toolnexus.run.safety", "check_config"),
    ("toolnexus.run.steps", "check_steps"),
    ("toolnexus.run.steps", "check_case_gates"),
    ("toolnexus.questionfile.load", "lint_text"),
)


def _count(monkeypatch: pytest.MonkeyPatch, calls: Counter[str], qfile: Path) -> None:
    """Wrap each counted function where it is defined and wherever a module bound it by name,
    so a call from any module is counted (a parse only when it is of ``qfile``)."""
    for module_name, name in COUNTED:
        home = importlib.import_module(module_name)
        original = getattr(home, name)

        def counting(*args: Any, _f: Callable[..., Any] = original, _n: str = name,
                     **kwargs: Any) -> Any:  # fmt: skip
            if _n != "lint_text" or args[1] == str(qfile):
                calls[_n] += 1
            return _f(*args, **kwargs)

        for module in list(sys.modules.values()):
            if (getattr(module, "__name__", "") or "").startswith("toolnexus") and getattr(
                module, name, None
            ) is original:
                monkeypatch.setattr(module, name, counting)


@pytest.mark.parametrize(
    ("flags", "parses"),
    [
        pytest.param((), 1, id="plain"),
        pytest.param(("--max-requests", "50"), 1, id="capped"),
        pytest.param(
            ("--max-requests", "50", "--emit-cases", "{d}/cases.jsonl"), 2, id="capped-emit-cases"
        ),
        pytest.param(("--dry-run",), 1, id="dry-run"),
    ],
)
def test_each_check_runs_once_and_the_question_file_is_parsed_once_per_batch(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: tuple[str, ...],
    parses: int,
) -> None:
    """'``check_config``, ``check_steps``, ``check_case_gates`` each run once per ``batch``; the
    question file is parsed once per run (twice with ``--emit-cases``)' (issue 45)."""
    import toolnexus.run.dry
    import toolnexus.run.engine  # noqa: F401  # bound before counting, as a run binds them

    qfile = tmp_path / "q.yaml"
    qfile.write_text(QUESTIONS, "utf-8")
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"t{i}", "text": f"change {i}"}) + "\n"
                           for i in range(3)), "utf-8")  # fmt: skip
    calls: Counter[str] = Counter()
    _count(monkeypatch, calls, qfile)
    with Loopback() as server:
        code, _, err = run_main(
            capfd, "batch", str(qfile), str(src), "--id-field", "id", "--state-field", "text",
            "--base-url", server.base_url, "-o", str(tmp_path / "out.jsonl"),
            *(f.format(d=tmp_path) for f in flags),
        )  # fmt: skip
    assert code == 0, err
    dry = "--dry-run" in flags
    assert calls["check_config"] == 1, calls
    # a dry run ends before the steps after a run: their checks are the run's
    assert calls["check_steps"] == (0 if dry else 1), calls
    assert calls["check_case_gates"] == (0 if dry else 1), calls
    # at most twice with --emit-cases: its step takes the run's questions, so once is what it is
    assert 1 <= calls["lint_text"] <= parses, calls


#: the dry run's and the budget's definitions, each in run/ alone
DRY_RUN = ("DryRun", "estimate", "estimate_items", "check_dry")
BUDGET = ("budget_of", "sized_budget", "unestimated_budget", "ResendCounter", "recorded_spend",
          "counting_resends")  # fmt: skip


def test_the_dry_run_and_the_budget_are_defined_in_run_and_nowhere_under_cli() -> None:
    """'The dry run and the budget sizing each have one definition, in ``run/`` ... ``cli/``
    holds no dry-run or budget module' (issue 45 item 1)."""
    from toolnexus.run import budget, dry

    for name in DRY_RUN:
        assert hasattr(dry, name), name
    for name in BUDGET:
        assert hasattr(budget, name), name
    cli = Path(importlib.import_module("toolnexus.cli").__file__ or "").parent
    defined: list[str] = []
    for path in sorted(cli.rglob("*.py")):
        assert path.stem not in ("batch_dry", "batch_budget", "dry", "budget"), path
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and (
                node.name.lstrip("_") in (*DRY_RUN, *BUDGET, "dry_run", "budget_for")
            ):
                defined.append(f"{path.name}:{node.lineno}: {node.name}")
    assert defined == []


@pytest.mark.parametrize(
    "more",
    [
        pytest.param((), id="run"),
        pytest.param(("--dry-run",), id="dry-run"),
        pytest.param(("--max-requests", "5"), id="capped"),
    ],
)
def test_every_flag_is_checked_before_the_question_file_is_read(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], more: tuple[str, ...]
) -> None:
    """The checks run once, in the library, and still in batch's order: a wrong flag is said
    before a broken question file (``run_batch``'s ``prepare`` reads the file after them)."""
    qfile = tmp_path / "q.yaml"
    qfile.write_text("questions:\n  urgent: {type: noul}\n", "utf-8")  # no instructions
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "text": "x"}\n', "utf-8")
    args = ("batch", str(qfile), str(src), "--id-field", "id", "--state-field", "text")
    code, _, err = run_main(capfd, *args, "--concurrency", "0", *more)
    assert (code, err) == (2, "toolnexus: --concurrency takes 1..1000 requests in flight, got 0\n")
    code, _, err = run_main(capfd, *args, *more)
    assert code == 2 and "q.yaml:2:3: question 'urgent': missing instructions" in err, err
