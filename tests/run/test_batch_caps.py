"""``batch --max-cost / --max-tokens / --max-requests`` (issue 23 item 2): what is decided before
the first request, what ``--resume`` counts, how retries bill, and the exit code's rank."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from test_batch_dry import QUESTIONS, _cli, _input, _tickets

from loopback import Loopback
from toolnexus.cli.batch_options import BatchConfig
from toolnexus.config import RetryPolicy
from toolnexus.core.failures import (
    EXIT_BACKEND,
    EXIT_BUDGET,
    EXIT_CONDITION,
    EXIT_USAGE,
)
from toolnexus.run.budget import ResendCounter, recorded_spend
from toolnexus.run.summary import RunSummary as BatchSummary
from toolnexus.scheduler.budget import Budget, Caps
from toolnexus.transport import SystemOneTransport
from toolnexus.transport.observe import observing


@pytest.fixture
def qfile(tmp_path: Path) -> Path:
    path = tmp_path / "q.yaml"
    path.write_text(QUESTIONS, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("cap", "named"),
    [
        pytest.param(["--max-requests", "0"], "--max-requests 0", id="requests"),
        pytest.param(["--max-tokens", "100"], "--max-tokens 100", id="tokens"),
        pytest.param(
            ["--max-cost", "0.000001", "--price", "input=1,output=1"], "--max-cost", id="cost"
        ),
    ],
)
def test_a_cap_the_estimate_alone_exceeds_is_refused_before_the_first_request(
    server: Loopback,
    qfile: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    cap: list[str],
    named: str,
) -> None:
    """'A cap that the estimate alone exceeds is refused before the first request, with the
    estimate': not one request fits, so nothing is sent, one line, exit 5."""
    inp = _input(tmp_path, _tickets(5))
    code, _, err = _cli(
        capfd, "batch", str(qfile), str(inp), "--id-field", "id", "--state-field", "text",
        "--base-url", server.base_url, "-o", str(tmp_path / "out.jsonl"), *cap,
    )  # fmt: skip
    assert code == EXIT_BUDGET == 5
    assert server.total == 0
    lines = [line for line in err.splitlines() if "note:" not in line]
    assert len(lines) == 1 and named in lines[0] and "5 requests, about" in lines[0], err
    assert "Traceback" not in err


def test_a_cap_the_whole_estimate_passes_is_said_and_the_run_goes_on(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    inp = _input(tmp_path, _tickets(5))
    code, _, err = _cli(
        capfd, "batch", str(qfile), str(inp), "--id-field", "id", "--state-field", "text",
        "--base-url", server.base_url, "-o", str(tmp_path / "out.jsonl"), "--max-requests", "50",
    )  # fmt: skip
    assert code == 0 and server.total == 5 and "passes" not in err
    code, _, err = _cli(
        capfd, "batch", str(qfile), str(inp), "--id-field", "id", "--state-field", "text",
        "--base-url", server.base_url, "-o", str(tmp_path / "o2.jsonl"), "--max-requests", "3",
    )  # fmt: skip
    assert "passes --max-requests 3: the run stops scheduling at the cap" in err


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("lots", "--max-cost takes an amount in USD", id="not-a-number"),
        pytest.param("-1", "--max-cost must be 0 or more", id="negative"),
        pytest.param("nan", "--max-cost takes an amount in USD", id="nan"),
    ],
)
def test_a_wrong_cap_is_one_line_naming_the_flag(
    qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    inp = _input(tmp_path, _tickets(1))
    code, _, err = _cli(capfd, "batch", str(qfile), str(inp), "--max-cost", value)
    assert code == EXIT_USAGE and message in err and err.count("\n") == 1, err


def test_resume_counts_the_spend_recorded_in_the_output_cached_excluded(tmp_path: Path) -> None:
    """'The cap covers what this output has spent: --resume counts the spend already recorded
    in the output' (a cached record was spent by another run)."""
    out = tmp_path / "out.jsonl"
    sha = "0" * 64
    answers = {"q": {"type": "noul", "noul": 0.9}}
    base = {"questions_sha256": sha, "answers": answers, "model": "jev-1.13.0", "flags": []}
    rows = [
        {"id": "a", **base, "usage": {"input_tokens": 100, "output_tokens": 10, "cost": 0.25}},
        {"id": "b", **base, "usage": {"input_tokens": 200, "output_tokens": 20, "cost": 0.5}},
        {"id": "c", **base, "cached": True, "usage": {"input_tokens": 999, "output_tokens": 9}},
        {
            "id": "d",
            "questions_sha256": sha,
            "error": {"code": "backend_http", "message": "HTTP 500: boom"},
        },
    ]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = BatchConfig(inputs=[], output=str(out), resume=True)
    spend = recorded_spend(cfg.run, "0" * 64, None)
    assert (spend.requests, spend.tokens, spend.cost) == (2, 330, Decimal("0.75"))
    fresh = recorded_spend(BatchConfig(inputs=[], output=str(out)).run, "0" * 64, None)
    assert (fresh.requests, fresh.tokens) == (0, 0)


def test_retries_bill_as_requests_through_the_transport_hook() -> None:
    """'--max-requests N (attempts, retries included: they bill)'."""
    answers = iter([503, 503, 200])

    def handler(request: httpx.Request) -> httpx.Response:
        code = next(answers)
        return httpx.Response(code, content=b'{"model":"m","answers":{}}')

    async def nap(_: float) -> None:
        return None

    transport = SystemOneTransport(
        base_url="http://127.0.0.1:9/v1",
        api_key_env="TYPESAFE_API_KEY",
        transport=httpx.MockTransport(handler),
        retry=RetryPolicy.of(retries=2, retry_base_ms=1, retryable_statuses=(), on_error=None),
        sleep=nap,
    )
    budget = Budget(Caps(max_requests=10))

    async def go() -> None:
        with observing(ResendCounter(budget)):
            await transport.post("systemone", b"{}")
        await transport.aclose()

    asyncio.run(go())
    assert budget.spent.requests == 2  # the two resends; the request itself settles on release


@pytest.mark.parametrize(
    ("codes", "conditions", "budget", "expected"),
    [
        pytest.param({}, set(), True, EXIT_BUDGET, id="budget-alone"),
        pytest.param({}, {"uncertain"}, True, EXIT_BUDGET, id="over-a-fail-on-condition"),
        pytest.param({"invalid_state": 1}, set(), True, EXIT_BUDGET, id="over-an-input-error"),
        pytest.param({"backend_http": 1}, set(), True, EXIT_BUDGET, id="over-a-backend-error"),
        pytest.param({"backend_http": 1}, set(), False, EXIT_BACKEND, id="backend-no-budget"),
        pytest.param({"invalid_state": 1}, set(), False, EXIT_USAGE, id="input-no-budget"),
        pytest.param({}, {"uncertain"}, False, EXIT_CONDITION, id="no-budget"),
    ],
)
def test_where_the_budget_exit_code_ranks_when_batch_exits_with_the_worst(
    codes: dict[str, int], conditions: set[str], budget: bool, expected: int
) -> None:
    """README: 'batch writes every record, then exits with the worst': a stopped run (5 for a
    spend cap) > 3 > 2 > 1."""
    summary = BatchSummary(codes=Counter(codes), conditions=conditions)
    if budget:
        summary.stopped, summary.stop_kind = "budget reached", "budget"
    assert summary.exit_code() == expected
    assert ("budget_exceeded" in summary.line()) is budget


def test_price_is_read_from_toolnexus_price_too(
    qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """'--price input=USD/Mtok,output=USD/Mtok, also TOOLNEXUS_PRICE'."""
    inp = _input(tmp_path, _tickets(3))
    args = ["batch", str(qfile), str(inp), "--id-field", "id", "--state-field", "text"]
    dry = [*args, "--base-url", "http://127.0.0.1:9/v1", "--dry-run", "--format", "json"]
    _, printed, _ = _cli(capfd, *dry)
    assert json.loads(printed)["cost"] is None
    monkeypatch.setenv("TOOLNEXUS_PRICE", "input=1000000,output=0")
    _, printed, _ = _cli(capfd, *dry)
    result = json.loads(printed)
    assert result["cost"] == result["input_tokens"]


def test_serve_reports_usage_cost_as_a_gateway_and_resume_counts_it(
    qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """serve's synthetic answers report no cost unless asked (--cost-per-mtok); the spend a
    resumed run counts is then the sum of those reported costs."""
    from serving import ThreadedServer
    from toolnexus.serve import ServeOptions

    inp = _input(tmp_path, _tickets(6))
    out = tmp_path / "out.jsonl"
    with ThreadedServer(ServeOptions(synthetic=True, cost_per_mtok=2.0)) as server:
        code, _, err = _cli(
            capfd, "batch", str(qfile), str(inp), "--id-field", "id", "--state-field", "text",
            "--base-url", f"{server.url}/v1", "-o", str(out),
        )  # fmt: skip
    assert code == 0, err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    for r in records:
        usage = r["usage"]
        assert usage["cost"] == pytest.approx(
            (usage["input_tokens"] + usage["output_tokens"]) * 2.0 / 1e6
        )
    sha = records[0]["questions_sha256"]
    spend = recorded_spend(BatchConfig(inputs=[], output=str(out), resume=True).run, sha, None)
    assert spend.requests == 6 and not spend.cost_unknown
    assert float(spend.cost) == pytest.approx(sum(r["usage"]["cost"] for r in records))
