"""Issue 30 ("no module branches on a format name"; reader brief item 1): run-file formats are
read back through one registry in ``records.formats``, so "a format registered by a test (a
tiny one) is read by `report` without editing report/". The tiny one is RFC 7464's JSON text
sequence: each record after a record separator (0x1E)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from paths import TESTS
from toolnexus.records.formats import (
    RunFormat,
    Span,
    format_named,
    register_format,
    run_formats,
    unregister_format,
)

INPUTS = TESTS / "golden" / "report-inputs"
RS = b"\x1e"


def _jsonseq_records(path: str, span: Span | None) -> Iterator[tuple[int, Any]]:
    """Record n is numbered n (from 1), as a Parquet row is; a span is records start..end."""
    data = Path(path).read_bytes()
    for n, chunk in enumerate(data.split(RS)[1:], 1):
        if span is None or span.start < n <= span.end:
            yield n, json.loads(chunk)


def _jsonseq_spans(path: str, chunk_bytes: int) -> list[Span]:
    """Chunks of 7 records: the reader counts them side by side, as a long JSONL run's."""
    st = Path(path).stat()
    n = Path(path).read_bytes().count(RS)
    return [Span(a, min(a + 7, n), (st.st_dev, st.st_ino)) for a in range(0, n, 7)]


def _jsonseq(chunked: bool) -> RunFormat:
    return RunFormat(
        "jsonseq",
        _jsonseq_records,
        suffixes=(".jsonseq",),
        sniff=lambda head: head.startswith(RS),
        spans=_jsonseq_spans if chunked else None,
    )


@pytest.fixture
def registered() -> Iterator[None]:
    yield
    unregister_format("jsonseq")


def _as_jsonseq(source: Path, target: Path) -> Path:
    lines = source.read_bytes().splitlines()
    target.write_bytes(b"".join(RS + line + b"\n" for line in lines if line.strip()))
    return target


def _report(run: Path, labels: Path, *more: str) -> dict[str, Any]:
    ran = run_cli("report", str(run), "--labels", str(labels), "--format", "json", *more)
    assert ran.code == 0, ran.stderr
    out = ran.stdout if isinstance(ran.stdout, str) else ran.stdout.decode()
    return json.loads(out.replace(str(run), "RUN").replace(str(labels), "LABELS"))


def _labels_as_jsonseq(target: Path) -> Path:
    rows = (INPUTS / "labels.csv").read_text(encoding="utf-8").splitlines()
    header = rows[0].split(",")
    objects = [dict(zip(header, row.split(","), strict=True)) for row in rows[1:] if row]
    target.write_bytes(b"".join(RS + json.dumps(o).encode() + b"\n" for o in objects))
    return target


@pytest.mark.parametrize(
    ("run_name", "labels_in_jsonseq", "chunked"),
    [
        pytest.param("run.jsonseq", False, False, id="by-suffix"),
        pytest.param("run-without-suffix", False, False, id="by-first-bytes"),
        pytest.param("run.jsonseq", True, False, id="labels-file-too"),
        pytest.param("run.jsonseq", False, True, id="in-chunks-side-by-side"),
    ],
)
def test_a_format_registered_by_a_test_is_read_by_report(
    registered: None, tmp_path: Path, run_name: str, labels_in_jsonseq: bool, chunked: bool
) -> None:
    """A format registered outside report/ reports what the JSONL run of the same records
    does (a suffix or its first bytes name it; a labels file in it is read too; its own
    chunks are counted in two processes)."""
    register_format(_jsonseq(chunked))
    run = _as_jsonseq(INPUTS / "run.jsonl", tmp_path / run_name)
    labels = INPUTS / "labels.csv"
    if labels_in_jsonseq:
        labels = _labels_as_jsonseq(tmp_path / "labels.jsonseq")
    want = _report(INPUTS / "run.jsonl", INPUTS / "labels.csv")
    assert _report(run, labels, "--jobs", "2") == want


def test_the_built_in_formats_are_registered_in_sniffing_order() -> None:
    """jsonl, json, csv and parquet are registered there; the first bytes are tried Parquet
    first, and a file nothing names is CSV (what report read before the registry)."""
    assert [f.name for f in run_formats()][:4] == ["parquet", "json", "jsonl", "csv"]
    assert format_named("no-such-format").name == "csv"
