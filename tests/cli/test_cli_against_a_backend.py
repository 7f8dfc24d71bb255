"""Issue 31 items 5, 6, 8, 10, 11, 12, 13, 22 and 23: what a newcomer's and a hostile trial met,
each against ``httpx.MockTransport`` or a ``toolnexus serve --script`` backend
(``HostileServer``), one test (or a few) per item.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

import toolnexus
import toolnexus.sync
from clirun import error_line, run_cli
from hostile_server import HostileServer, Reply, qfile_fixture, valid_answer
from paths import REPO
from serving import ThreadedServer
from toolnexus.serve import ServeOptions

KEY = "tn-edges-key-0123456789"
QUESTIONS = "questions:\n  q: {type: noul, instructions: Is it so?}\n"
Q = {"q": toolnexus.NoulQuestion("Is it so?")}
ANSWER = {"model": "m-1", "answers": {"q": {"type": "noul", "noul": 0.9}},
          "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip

qfile = qfile_fixture(QUESTIONS)


def _inputs(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"s{i}", "text": f"t{i}"}) + "\n"
                            for i in range(n)))  # fmt: skip
    return path


def _batch(base_url: str, qfile: Path, inp: Path, *extra: str) -> Any:
    return run_cli("batch", str(qfile), str(inp), "--id-field", "id", "--state-field", "text",
                   "--base-url", base_url, "--retries", "0", *extra)  # fmt: skip


def _evaluate(base_url: str, handler: Any) -> Any:
    judge = toolnexus.sync.create_classifier(
        base_url=base_url, transport=httpx.MockTransport(handler), retries=0
    )
    with judge:
        return judge.evaluate("a state", Q)


# --- item 5: a base URL with a query string ---------------------------------------------------


def test_the_path_is_joined_before_the_query_and_the_query_stays_redacted() -> None:
    """Item 5: "A base URL with a query string gets /systemone appended after the query
    (.../v1?api_key=.../systemone -> 404). Join the path before the query"."""
    seen: list[httpx.URL] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        if request.url.path != "/v1/systemone":
            return httpx.Response(404, content=b"404: Not Found")
        return httpx.Response(500, json={"detail": "boom"})

    with pytest.raises(toolnexus.HTTPStatusError) as caught:
        _evaluate("https://gw.example.test/v1/?api_key=qs-secret-123", handler)
    assert (seen[0].path, seen[0].params["api_key"]) == ("/v1/systemone", "qs-secret-123")
    assert caught.value.status == 500
    assert "https://gw.example.test/v1/systemone?api_key=«redacted»" in caught.value.message
    assert "qs-secret-123" not in caught.value.message


# --- item 6: --max-cost without --price -------------------------------------------------------


def test_max_cost_without_a_price_is_refused_before_the_first_request(
    qfile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 6 (issue 31): "--max-cost without --price against a server that reports cost let
    two requests through a cap of 0.0000001"; issue 42 item 7: even one was too many, so
    "``--max-cost`` requires ``--price`` (or ``TOOLNEXUS_PRICE``); without it, exit 2 naming
    both"."""
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)
    monkeypatch.delenv("TOOLNEXUS_PRICE", raising=False)

    def costly(req: Any) -> Reply:
        body = valid_answer(req.json)
        body["usage"]["cost"] = 0.01
        return Reply(200, json.dumps(body).encode())

    with HostileServer(costly) as server:
        ran = _batch(server.base_url, qfile, _inputs(tmp_path / "in.jsonl", 12),
                     "--max-cost", "1e-7", "--concurrency", "8")  # fmt: skip
        sent = len(server.seen)
    assert ran.code == 2, ran.stderr
    line = ran.stderr.strip()
    assert "\n" not in line and "--max-cost" in line and "--price" in line
    assert "TOOLNEXUS_PRICE" in line
    assert sent == 0


def test_the_summary_prints_what_requests_in_flight_cost_past_the_cap(
    qfile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42 item 7: "the cap can be passed only by the estimate error of requests already
    in flight, and the summary prints that amount". The price says a request costs about
    $0.00001; the gateway charges $0.01: the reported cost counts, so the second request (let
    through on the first's $0.01) is the last, and the summary names the $0.005 it overran."""
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)

    def costly(req: Any) -> Reply:
        body = valid_answer(req.json)
        body["usage"]["cost"] = 0.01
        return Reply(200, json.dumps(body).encode())

    with HostileServer(costly) as server:
        caps = ("--max-cost", "0.015", "--price", "input=0.01", "--concurrency", "1")
        ran = _batch(server.base_url, qfile, _inputs(tmp_path / "in.jsonl", 6), *caps)
        sent = len(server.seen)
    assert ran.code == 5, ran.stderr
    assert sent == 2
    assert "$0.005000 over --max-cost 0.015 (requests in flight cost more" in ran.stderr


# --- item 8: a 200 carrying an error body -----------------------------------------------------


def test_a_200_with_an_error_body_reports_the_servers_own_message() -> None:
    """Item 8: "A 200 carrying an error body ({"error": {"message": "model overloaded"}}) is
    reported as 'response model must be a string, got null'; show the server's own message"."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"error": {"message": "model overloaded"}})

    with pytest.raises(toolnexus.DecisionError) as caught:
        _evaluate("https://api.example.test/v1", handler)
    assert "model overloaded" in caught.value.message
    assert "must be a string" not in caught.value.message


# --- item 10: a replay miss through serve --replay --------------------------------------------


@pytest.mark.parametrize("command", [pytest.param("eval", id="eval"),
                                     pytest.param("batch", id="batch")])  # fmt: skip
def test_a_serve_replay_miss_is_whole_and_exits_2_as_eval_replay_does(
    qfile: Path, tmp_path: Path, command: str
) -> None:
    """Item 10: "A replay miss through serve --replay is cut off mid-advice ('record it once
    with `toolnex...') and exits 3, where the same miss with eval --replay DIR exits 2"."""
    recordings = REPO / "recordings"
    local = run_cli("eval", str(qfile), "--state-text", "never recorded", "--replay",
                    str(recordings))  # fmt: skip
    assert local.code == 2
    with ThreadedServer(ServeOptions(replay=recordings)) as server:
        if command == "eval":
            ran = run_cli("eval", str(qfile), "--state-text", "never recorded", "--base-url",
                          f"{server.url}/v1")  # fmt: skip
            line = error_line(ran.stderr)
        else:
            out = tmp_path / "out.jsonl"
            ran = _batch(f"{server.url}/v1", qfile, _inputs(tmp_path / "in.jsonl", 1), "-o",
                         str(out))  # fmt: skip
            record = json.loads(out.read_text(encoding="utf-8"))
            assert record["error"]["code"] == "replay_miss"
            line = record["error"]["message"]
    assert ran.code == local.code == 2, ran.stderr
    assert "HTTP 409: replay miss" in line, line
    assert "and serve again (request id" in line and "…" not in line, line


# --- item 11: budget stop lines ---------------------------------------------------------------


def test_a_budget_stop_line_counts_what_is_in_flight() -> None:
    """Item 11: "Budget stop lines ('--max-requests 50: 35 requests sent; the next request
    would pass it') leave out the reservations in flight"."""
    from toolnexus.core.errors import RunStopped
    from toolnexus.scheduler.admission import Ticket
    from toolnexus.scheduler.budget import Budget, Caps
    from toolnexus.scheduler.tokens import estimate_tokens

    budget = Budget(Caps(max_requests=3), surface="batch")  # batch's words (issue 43 item 7)

    async def go() -> None:
        for i in range(3):
            await budget.acquire(Ticket(i, estimate_tokens(b"{}")))
        await budget.acquire(Ticket(9, estimate_tokens(b"{}")))

    with pytest.raises(RunStopped, match="--max-requests 3: 0 requests sent and 3 in flight"):
        asyncio.run(go())


def test_resume_with_nothing_left_to_send_does_not_say_the_estimate_passes_a_cap(
    qfile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 11: "--resume with nothing left to send prints 'the estimate (0 requests ...)
    passes --max-requests 100'"."""
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)
    inp, out = _inputs(tmp_path / "in.jsonl", 3), tmp_path / "out.jsonl"
    with HostileServer() as server:
        assert _batch(server.base_url, qfile, inp, "-o", str(out)).code == 0
        ran = _batch(server.base_url, qfile, inp, "-o", str(out), "--resume",
                     "--max-requests", "2")  # fmt: skip
    assert ran.code == 0, ran.stderr
    assert "passes" not in ran.stderr


# --- item 12: eval with the key unset ---------------------------------------------------------


def test_eval_with_the_key_unset_is_refused_up_front_naming_the_variable(qfile: Path) -> None:
    """Item 12: "eval with the key unset and no base URL tries the default endpoint three times
    and reports a network error; batch refuses up front naming the variable. eval must do the
    same"."""
    ran = run_cli("eval", str(qfile), "--state-text", "a state")
    assert ran.code == 2
    assert "$TYPESAFE_API_KEY is not set" in error_line(ran.stderr)


# --- item 13: repeated statuses, null and "" ids ----------------------------------------------


@pytest.mark.parametrize(
    ("status", "body"),
    [
        pytest.param(307, b"307: Temporary Redirect", id="307"),
        pytest.param(404, b"404: Not Found", id="404"),
    ],
)
def test_a_plain_status_body_does_not_repeat_the_status(status: int, body: bytes) -> None:
    """Item 13: "HTTP 307: 307: Temporary Redirect and HTTP 404: 404: Not Found repeat the
    status"."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=body)

    with pytest.raises(toolnexus.HTTPStatusError) as caught:
        _evaluate("https://api.example.test/v1", handler)
    assert f"HTTP {status}: {body.decode().split(': ')[1]}" in caught.value.message
    assert f"{status}: {status}" not in caught.value.message


def test_a_null_and_an_empty_id_get_one_message(qfile: Path, tmp_path: Path) -> None:
    """Item 13: "an id of null and of "" get unrelated messages"."""
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"id": null, "text": "a"}\n{"id": "", "text": "b"}\n')
    out = tmp_path / "out.jsonl"
    ran = run_cli("batch", str(qfile), str(inp), "--id-field", "id", "--state-field", "text",
                  "--base-url", "http://127.0.0.1:9/v1", "-o", str(out))  # fmt: skip
    assert ran.code == 2
    lines = out.read_text(encoding="utf-8").splitlines()
    messages = [json.loads(line)["error"]["message"] for line in lines]
    assert [m.split(": ", 1)[1] for m in messages] == [
        "id field 'id' missing, null or empty: an id is a non-empty string or an integer"
    ] * 2


# --- item 22: user:pass@ with a key; serve --host 0.0.0.0 -------------------------------------


def test_credentials_in_the_url_and_a_key_are_refused_once_before_the_run(
    qfile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 22: "user:pass@ in the base URL together with a key set gives one config_error
    record per line instead of one refusal before the run"."""
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)
    out = tmp_path / "out.jsonl"
    with HostileServer() as server:
        url = server.base_url.replace("http://", "http://user:pw-secret@")
        ran = _batch(url, qfile, _inputs(tmp_path / "in.jsonl", 5), "-o", str(out))
        assert not server.seen
    assert ran.code == 2
    line = error_line(ran.stderr)
    assert "carries credentials (user:pass@)" in line and "$TYPESAFE_API_KEY" in line
    assert "pw-secret" not in line and KEY not in ran.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("host", "warned"),
    [
        pytest.param("0.0.0.0", True, id="any"),
        pytest.param("192.168.1.10", True, id="lan"),
        pytest.param("127.0.0.1", False, id="loopback"),
        pytest.param("localhost", False, id="localhost"),
        pytest.param("::1", False, id="loopback-v6"),
    ],
)
def test_serve_on_a_non_loopback_host_warns_once(
    monkeypatch: pytest.MonkeyPatch, host: str, warned: bool
) -> None:
    """Item 22: "serve --host 0.0.0.0 prints no warning that it is reachable from other
    machines". The server itself is not started (``run`` is replaced): no socket leaves
    loopback in the suite."""
    import toolnexus.serve

    started: list[Any] = []
    monkeypatch.setattr(toolnexus.serve, "run", lambda options: started.append(options) or 0)
    ran = run_cli("serve", "--synthetic", "--host", host)
    assert ran.code == 0 and len(started) == 1
    assert ran.stderr.count("reachable from other machines") == (1 if warned else 0), ran.stderr


# --- item 23: evaluate_stream given bare states -----------------------------------------------


def _answering(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json=ANSWER)


def test_evaluate_stream_of_bare_states_is_one_clear_error_before_anything_is_sent() -> None:
    """Item 23: "evaluate_stream (async and toolnexus.sync) given bare states instead of (id,
    state) pairs fails with IndexError ... it must be one clear error naming the expected (id,
    state) pairs, raised before anything is sent"."""
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return _answering(request)

    async def stream() -> None:
        judge = toolnexus.create_classifier(
            base_url="https://api.example.test/v1", transport=httpx.MockTransport(handler)
        )
        async with judge:
            async for _ in judge.evaluate_stream(["first", "second"], Q):
                pass

    with pytest.raises(toolnexus.ConfigError, match=r"\(id, state\) pairs; item 0 is a str"):
        asyncio.run(stream())
    with (
        toolnexus.sync.create_classifier(
            base_url="https://api.example.test/v1", transport=httpx.MockTransport(handler)
        ) as judge,
        pytest.raises(toolnexus.ConfigError, match=r"\(id, state\) pairs"),
    ):
        list(judge.evaluate_stream(["first", "second"], Q))
    assert not sent
