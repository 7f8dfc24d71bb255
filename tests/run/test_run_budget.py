"""A library run's spend caps refuse and note as ``toolnexus batch --max-cost`` does (issue 30,
run2 brief item 2: "``run_batch(RunConfig(max_cost=..., ...))`` refuses and notes exactly as
``toolnexus batch --max-cost`` does (notes reach on_progress as ``RunNote``)")."""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from test_batch_dry import QUESTIONS, _input, _tickets

from clirun import run_cli
from toolnexus.core.errors import RunError
from toolnexus.run import RunConfig, RunNote, run_batch
from toolnexus.scheduler.budget import parse_price

FIELDS = ("--id-field", "id", "--state-field", "text")


def _config(qfile: Path, inp: Path, out: Path, base_url: str, **caps: Any) -> RunConfig:
    return RunConfig.from_question_file(
        qfile,
        str(inp),
        classifier={"base_url": base_url},
        id_field="id",
        state_fields=("text",),
        output=str(out),
        **caps,
    )


@pytest.fixture
def qfile(tmp_path: Path) -> Path:
    path = tmp_path / "q.yaml"
    path.write_text(QUESTIONS, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("caps", "flags"),
    [
        pytest.param({"max_requests": 0}, ["--max-requests", "0"], id="requests"),
        pytest.param({"max_tokens": 100}, ["--max-tokens", "100"], id="tokens"),
        pytest.param(
            {"max_cost": Decimal("0.000001"), "price": parse_price("input=1,output=1")},
            ["--max-cost", "0.000001", "--price", "input=1,output=1"],
            id="cost",
        ),
    ],
)
def test_a_cap_not_one_request_fits_is_refused_as_batch_refuses_it(
    server: Any, qfile: Path, tmp_path: Path, caps: dict[str, Any], flags: list[str]
) -> None:
    """'A cap that the estimate alone exceeds is refused before the first request, with the
    estimate' (issue 23), from a script: batch's line, its exit code 5, nothing sent, no
    output left behind. The run in batch's words (``surface="batch"``, what ``batch`` builds)
    says batch's line; a script's own run names the keyword (issue 43 item 7)."""
    inp = _input(tmp_path, _tickets(5))
    out = tmp_path / "lib.jsonl"
    with pytest.raises(RunError) as own:
        run_batch(_config(qfile, inp, out, server.base_url, **caps))
    assert f"{next(iter(caps))}=" in str(own.value) and "--" not in str(own.value)
    with pytest.raises(RunError) as info:
        run_batch(_config(qfile, inp, out, server.base_url, surface="batch", **caps))
    assert info.value.exit_code == 5
    assert server.total == 0 and not os.path.exists(out)
    ran = run_cli(
        "batch", str(qfile), str(inp), *FIELDS, "--base-url", server.base_url,
        "-o", str(tmp_path / "cli.jsonl"), *flags,
    )  # fmt: skip
    assert ran.code == 5
    refused = [line for line in ran.stderr.splitlines() if "note:" not in line]
    assert refused == [f"toolnexus: {info.value}"]


def test_the_notes_reach_on_progress_as_batch_prints_them(
    server: Any, qfile: Path, tmp_path: Path
) -> None:
    """'A cap the whole estimate passes is said once': it reaches ``on_progress`` as a
    ``RunNote``, worded as batch's ``toolnexus: note:`` line (in batch's words,
    ``surface="batch"``: issue 43 item 7)."""
    inp = _input(tmp_path, _tickets(5))
    heard: list[object] = []
    caps = {
        "max_requests": 3,
        "max_cost": Decimal(100),
        "price": parse_price("input=1"),
        "surface": "batch",
    }
    run_batch(
        _config(qfile, inp, tmp_path / "lib.jsonl", server.base_url, **caps),
        on_progress=heard.append,
    )
    notes = [e.message for e in heard if isinstance(e, RunNote) and e.kind == "note"]
    ran = run_cli(
        "batch", str(qfile), str(inp), *FIELDS, "--base-url", server.base_url,
        "-o", str(tmp_path / "cli.jsonl"), "--max-requests", "3", "--max-cost", "100",
        "--price", "input=1",
    )  # fmt: skip
    printed = [
        line.removeprefix("toolnexus: note: ")
        for line in ran.stderr.splitlines()
        if line.startswith("toolnexus: note: ")
    ]
    assert len(printed) == 1 and "passes --max-requests 3" in printed[0], ran.stderr
    assert notes[:1] == printed


def test_a_cost_cap_without_a_price_is_refused_by_the_library_as_by_batch(
    server: Any, qfile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42 item 7: "``--max-cost`` requires ``--price`` (or ``TOOLNEXUS_PRICE``); without
    it, exit 2 naming both (CLI and the library RunConfig check)": one check, one line, nothing
    sent; ``TOOLNEXUS_PRICE`` satisfies it."""
    monkeypatch.delenv("TOOLNEXUS_PRICE", raising=False)
    inp = _input(tmp_path, _tickets(2))
    out = tmp_path / "lib.jsonl"
    with pytest.raises(RunError) as info:
        run_batch(_config(qfile, inp, out, server.base_url, max_cost=Decimal(1)))
    # In a script's words (issue 43 item 7): max_cost needs price=...
    assert info.value.exit_code == 2 and "max_cost needs price=" in str(info.value)
    assert server.total == 0 and not out.exists()
    flags = ("batch", str(qfile), str(inp), *FIELDS, "--base-url", server.base_url, "-o")
    ran = run_cli(*flags, str(tmp_path / "cli.jsonl"), "--max-cost", "1")
    assert ran.code == 2
    script, cli = str(info.value), ran.stderr.removeprefix("toolnexus: ").rstrip("\n")
    assert "--max-cost needs --price input=" in cli and "\n" not in cli
    assert script.split("(or ", 1)[1] == cli.split("(or ", 1)[1]  # one check, one text
    monkeypatch.setenv("TOOLNEXUS_PRICE", "input=1")
    ran = run_cli(*flags, str(tmp_path / "env.jsonl"), "--max-cost", "1")
    assert ran.code == 0, ran.stderr
