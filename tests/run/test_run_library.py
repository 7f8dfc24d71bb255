"""``toolnexus.run``: the batch run as a library (issue 30 item 1). "A script cannot do what
``toolnexus batch`` does without shelling out": now it calls ``run_batch`` with a ``RunConfig``,
and gets the CLI's bytes, its progress as typed values, its interruptions, and its formats
through one registry."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from paths import REPO
from serving import ThreadedServer
from toolnexus.cli.batch_options import RUN_FIELDS, BatchFlags, unmatched
from toolnexus.questionfile.load import load_question_file
from toolnexus.run import (
    InputItem,
    Reader,
    RunConfig,
    RunNote,
    RunProgress,
    Sink,
    arun_batch,
    codecs,
    register_reader,
    register_sink,
    run_batch,
)
from toolnexus.serve import ServeOptions

QUESTIONS = REPO / "questions" / "support-triage.yaml"


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    with ThreadedServer(ServeOptions(synthetic=True)) as server:
        yield server


def _tickets(tmp_path: Path, n: int) -> Path:
    src = tmp_path / "tickets.jsonl"
    lines = [json.dumps({"id": f"T-{i}", "text": f"ticket {i}: charged twice"}) for i in range(n)]
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return src


def _config(server: ThreadedServer, src: Path, out: Path, **more: Any) -> RunConfig:
    """What ``batch QUESTIONS SRC --id-field id --state-field text -o OUT --base-url URL``
    asks, built by a script."""
    (model, questions), gates = load_question_file(QUESTIONS)
    classifier: dict[str, Any] = {"base_url": server.url + "/v1"}
    if model is not None:
        classifier["model"] = model
    return RunConfig(
        questions,
        (str(src),),
        classifier=classifier,
        gates=gates,
        id_field="id",
        state_fields=("text",),
        output=str(out),
        **more,
    )


def _ids(out: Path) -> list[str]:
    return [json.loads(line)["id"] for line in out.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize(
    "fmt, more",
    [
        pytest.param("jsonl", [], id="jsonl"),
        pytest.param("csv", ["--ordered"], id="csv-ordered"),
        pytest.param("json", ["--fail-on", "uncertain"], id="json-fail-on"),
    ],
)
def test_a_library_run_writes_the_cli_runs_bytes(
    fmt: str, more: list[str], server: ThreadedServer, tmp_path: Path
) -> None:
    """'a script that does what the CLI example does': the same records, byte for byte, the
    same summary counts and the same exit code."""
    src = _tickets(tmp_path, 12)
    cli_out, lib_out = tmp_path / f"cli.{fmt}", tmp_path / f"lib.{fmt}"
    base = ["--base-url", server.url + "/v1", "--id-field", "id", "--state-field", "text"]
    ran = run_cli(
        "batch", str(QUESTIONS), str(src), *base, "-o", str(cli_out), "--format", fmt, *more
    )
    options: dict[str, Any] = {"fmt": fmt, "ordered": "--ordered" in more}
    if "--fail-on" in more:
        options["fail_on"] = ("uncertain",)
    summary = run_batch(_config(server, src, lib_out, **options))
    lib, cli = lib_out.read_bytes(), cli_out.read_bytes()
    if options["ordered"]:
        assert lib == cli
    else:
        # Records land in completion order; each record's bytes are the CLI's.
        assert sorted(lib.splitlines()) == sorted(cli.splitlines())
    line = next(x for x in ran.stderr.splitlines() if x.startswith("toolnexus: batch: "))
    # The counts of the summary line (its wall time differs, the rest is the same text).
    assert summary.line().split(", ")[:5] == line.removeprefix("toolnexus: ").split(", ")[:5]
    assert summary.exit_code() == ran.code


def test_on_progress_hears_typed_frozen_values(server: ThreadedServer, tmp_path: Path) -> None:
    """'progress reaches on_progress as a typed frozen value': one RunProgress per record, and
    an input's note once, as a RunNote (the CLI prints it as its ``note:`` line)."""
    src = _tickets(tmp_path, 7)
    heard: list[RunProgress | RunNote] = []
    cfg = dataclasses.replace(_config(server, src, tmp_path / "out.jsonl"), state_fields=())
    summary = run_batch(cfg, on_progress=heard.append)
    progress = [e for e in heard if isinstance(e, RunProgress)]
    notes = [e for e in heard if isinstance(e, RunNote)]
    assert [p.states for p in progress] == list(range(1, 8))
    assert progress[-1].ok == summary.ok == 7 and progress[-1].requests == summary.requests
    assert len(notes) == 1 and "sent whole" in notes[0].message
    with pytest.raises(dataclasses.FrozenInstanceError):
        progress[0].states = 0  # type: ignore[misc]


@pytest.mark.parametrize(
    "fmt",
    [pytest.param("jsonl", id="jsonl"), pytest.param("json", id="json-array-left-open")],
)
def test_cancelling_the_async_run_keeps_its_records_and_resume_finishes_it(
    fmt: str, server: ThreadedServer, tmp_path: Path
) -> None:
    """'Ctrl-C and task cancellation stop the library run as they stop the CLI': the task is
    cancelled once 4 records are written (a count, not a clock); those records stay (and any
    result already in hand when the cancellation lands), the lock is released, and a resumed
    run sends only the others and leaves one record per id."""
    src, out = _tickets(tmp_path, 20), tmp_path / f"out.{fmt}"
    cfg = _config(server, src, out, fmt=fmt, concurrency=2)

    async def cancelled_at_four() -> Any:
        task = asyncio.current_task()
        assert task is not None

        def stop(event: RunProgress | RunNote) -> None:
            if isinstance(event, RunProgress) and event.states == 4:
                task.cancel()

        try:
            await arun_batch(cfg, on_progress=stop)
        except asyncio.CancelledError:
            return "cancelled"
        return "finished"

    assert asyncio.run(cancelled_at_four()) == "cancelled"
    kept = out.read_text().count('"id"')
    assert 4 <= kept < 20
    summary = run_batch(dataclasses.replace(cfg, resume=True))
    assert (summary.skipped, summary.ok, summary.interrupted) == (kept, 20 - kept, None)
    ids = [r["id"] for r in json.loads(out.read_text())] if fmt == "json" else _ids(out)
    assert sorted(ids) == sorted(f"T-{i}" for i in range(20))


@pytest.fixture
def registry() -> Iterator[None]:
    """The codec registry as it was, after a test that registers its own."""
    readers, sinks = codecs.readers(), dict(codecs._SINKS)
    yield
    codecs._READERS[:] = readers
    codecs._SINKS.clear()
    codecs._SINKS.update(sinks)


class _IdLines:
    """A sink a test writes: ``id<TAB>noul`` per record, and nothing to resume from."""

    staged = False

    def __init__(self, path: str) -> None:
        self.f = open(path, "w", encoding="utf-8")  # noqa: SIM115  # closed by close()
        self.written = 0

    def write(self, record: Any) -> None:
        noul = record.to_object()["answers"]["wants_money_back"]["noul"]
        self.f.write(f"{record.id}\t{noul}\n")
        self.written += 1

    def close(self, finished: bool = True, replace: bool | None = None) -> None:
        self.f.close()

    def abort(self) -> None:
        return None

    def settle(self, superseded: set[str], *, finished: bool) -> None:
        return None


def test_a_reader_and_a_sink_a_test_registers_are_used_by_the_run(
    registry: None, server: ThreadedServer, tmp_path: Path
) -> None:
    """'readers and sinks registered as codecs ... no module branches on a format name': a
    ``.lines`` reader and an ``idlines`` sink, registered here and nowhere else, carry a run."""

    def read_lines(arg: str, spec: Any, stdin: Any, note: Any) -> Iterator[InputItem]:
        with open(arg, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                yield InputItem(f"L{n}", state=line.rstrip("\n"), line=n)

    def no_prior(output: str, sha: str) -> Any:
        raise ValueError("an idlines run is not resumable")

    register_reader(Reader("lines", lambda arg: arg.endswith(".lines"), read_lines))
    register_sink(
        Sink("idlines", lambda out, cols, qs, prior, staged: _IdLines(str(out)), no_prior)
    )
    src, out = tmp_path / "tickets.lines", tmp_path / "out.idlines"
    src.write_text("charged twice, refund me\nthe parcel is late\n", encoding="utf-8")
    cfg = dataclasses.replace(
        _config(server, src, out, fmt="idlines"), id_field=None, state_fields=()
    )
    summary = run_batch(cfg)
    assert summary.ok == 2
    rows = sorted(line.split("\t")[0] for line in out.read_text().splitlines())
    assert rows == ["L1", "L2"]


def test_batch_flags_and_run_config_match_field_for_field() -> None:
    """Issue 30 item 5: 'the CLI's batch flags are ... checked field for field against
    RunConfig': every flag sets RunConfig fields or is the command's own, and every RunConfig
    field is set by a flag or named as the command's argument/backend/derived input."""
    assert unmatched(BatchFlags, RunConfig) == []


@dataclasses.dataclass(frozen=True)
class _Flags:
    a: int = 0
    b: int = 0


@dataclasses.dataclass(frozen=True)
class _Config:
    a: int = 0
    c: int = 0


@dataclasses.dataclass(frozen=True)
class _FlagsPlus(_Flags):
    d: int = 0


@dataclasses.dataclass(frozen=True)
class _ConfigPlus(_Config):
    e: int = 0


@pytest.mark.parametrize(
    "flags, config, found",
    [
        pytest.param(_Flags, _Config, [], id="matched"),
        pytest.param(_FlagsPlus, _Config, ["flag 'd' has no entry in RUN_FIELDS"], id="new-flag"),
        pytest.param(
            _Flags,
            _ConfigPlus,
            ["RunConfig field 'e' is set by no flag and not in NOT_FLAGS"],
            id="new-config-field",
        ),
    ],
)
def test_the_field_check_fails_when_one_side_grows(
    flags: type, config: type, found: list[str]
) -> None:
    """The check itself, on a synthetic pair: a field added on either side is named."""
    assert unmatched(flags, config, {"a": ("a",), "b": ()}, frozenset({"c"})) == found


def test_the_real_table_names_only_real_fields() -> None:
    """RUN_FIELDS is not a stale copy: each target it names is a RunConfig field."""
    names = {f.name for f in dataclasses.fields(RunConfig)}
    assert {t for targets in RUN_FIELDS.values() for t in targets} <= names
    assert os.path.basename(QUESTIONS) == "support-triage.yaml"


def test_the_run_namespace_is_curated() -> None:
    """``toolnexus.run`` is public: its ``__all__`` is sorted (ruff's order) and every name in
    it is importable; the run's one error is in the package namespace too."""
    import toolnexus
    import toolnexus.run as run

    assert run.__all__ == sorted(run.__all__, key=lambda n: (not n[0].isupper(), n))
    assert all(hasattr(run, name) for name in run.__all__)
    assert issubclass(toolnexus.RunError, toolnexus.ClassifierError)


def test_a_library_run_prints_nothing_its_warnings_reach_on_progress(
    server: ThreadedServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """'Core modules never print': a repeated JSON key and a ;-separated CSV header, which
    ``batch`` reports on stderr, reach a library caller as RunNote values (a warning and a
    note), and nothing is written to stdout or stderr."""
    src = tmp_path / "tickets.jsonl"
    src.write_text('{"id": "a", "text": "x", "text": "charged twice"}\n', encoding="utf-8")
    table = tmp_path / "tickets.csv"
    table.write_text("id;text\nb;the parcel is late\n", encoding="utf-8")
    heard: list[RunProgress | RunNote] = []
    cfg = dataclasses.replace(
        _config(server, src, tmp_path / "out.jsonl"), inputs=(str(src), str(table))
    )
    assert run_batch(cfg, on_progress=heard.append).ok == 2
    notes = [(e.kind, e.message) for e in heard if isinstance(e, RunNote)]
    assert [kind for kind, _ in notes] == ["warning", "note"]
    assert "appears twice" in notes[0][1] and "read as semicolon-separated" in notes[1][1]
    assert capfd.readouterr() == ("", "")


def test_a_library_runs_caps_stop_it_as_batch_is_stopped(
    server: ThreadedServer, tmp_path: Path
) -> None:
    """'budget caps' are RunConfig fields: a run with ``max_requests=3`` and no budget of its
    own in ``admission`` gets one, stops scheduling at the cap (exit 5, ``budget_exceeded``),
    and a resume with a higher cap finishes it."""
    src, out = _tickets(tmp_path, 10), tmp_path / "out.jsonl"
    cfg = _config(server, src, out, max_requests=3, concurrency=1)
    summary = run_batch(cfg)
    assert (summary.ok, summary.requests, summary.exit_code()) == (3, 3, 5)
    assert summary.budget_exceeded
    again = run_batch(dataclasses.replace(cfg, resume=True, max_requests=20))
    assert (again.skipped, again.ok, again.exit_code()) == (3, 7, 0)


def test_the_run_namespace_loads_what_is_asked() -> None:
    """``eval`` reads a state with ``toolnexus.run.states``: that does not load the run's engine
    (a subprocess, so the suite's own imports do not count)."""
    import subprocess
    import sys

    code = "import sys, toolnexus.run.states; print('toolnexus.run.engine' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_library_dry_run_is_batch_dry_run(tmp_path: Path) -> None:
    """'dry run' is the library's too: ``estimate(config)`` is what ``batch --dry-run --format
    json`` prints, and sends nothing (no server is running)."""
    from toolnexus.run import estimate

    src = _tickets(tmp_path, 9)
    ran = run_cli(
        "batch", str(QUESTIONS), str(src), "--id-field", "id", "--state-field", "text",
        "--dry-run", "--format", "json", "--pack", "3", "--base-url", "http://127.0.0.1:9/v1",
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    (model, questions), _ = load_question_file(QUESTIONS)
    classifier: dict[str, Any] = {"base_url": "http://127.0.0.1:9/v1"}
    if model is not None:
        classifier["model"] = model
    cfg = RunConfig(
        questions, (str(src),), classifier=classifier, id_field="id", state_fields=("text",),
        pack=3,
    )  # fmt: skip
    result = estimate(cfg)
    assert json.loads(ran.out) == result.to_object()
    assert (result.to_send, result.requests) == (9, 3)
