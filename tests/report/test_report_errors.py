"""Issue 30 item 5: "report and records errors join the ClassifierError tree and the one CLI
error boundary", with the same messages and exit codes as before."""

from __future__ import annotations

import pickle

import pytest

from toolnexus import ClassifierError, ReportError
from toolnexus.cli.errors import handle_error
from toolnexus.core.failures import EXIT_USAGE
from toolnexus.records import RecordDecodeError
from toolnexus.records.model import RecordVersionError
from toolnexus.report.charts import MissingChartLibrary
from toolnexus.report.fieldchecks import (
    LabelError,
    RecordError,
)
from toolnexus.report.inputs import (
    LocatedError,
    ReportInputError,
)

CASES = [
    pytest.param(ReportInputError("runs.jsonl: not a batch run"), id="report-input"),
    pytest.param(LocatedError("runs.jsonl", 7, "not JSON"), id="located"),
    pytest.param(LabelError("label 'maybe' is not true or false"), id="label"),
    pytest.param(RecordError("noul is 'x', not a probability in [0, 1]"), id="record"),
    pytest.param(RecordDecodeError("line 3: not JSON"), id="record-decode"),
    pytest.param(RecordVersionError("record 'a': schema_version 2 is newer"), id="record-version"),
    pytest.param(MissingChartLibrary("--format html needs matplotlib"), id="charts"),
]


@pytest.mark.parametrize("error", CASES)
def test_report_errors_are_classifier_errors_with_their_own_line(error: ReportError) -> None:
    """In the tree, under ReportError, and the message is the located line, unprefixed."""
    assert isinstance(error, ClassifierError) and isinstance(error, ReportError)
    assert not str(error).startswith("classifier: ")
    assert error.detail == str(error) == error.message
    again = pickle.loads(pickle.dumps(error))  # report --jobs raises them in worker processes
    assert type(again) is type(error) and str(again) == str(error)


@pytest.mark.parametrize(
    "error",
    [RecordError("x"), RecordDecodeError("x"), RecordVersionError("x")],
    ids=["rec", "dec", "version"],
)
def test_the_value_errors_stay_value_errors(error: ReportError) -> None:
    """Callers that catch ValueError (batch --resume reading a prior output) still do."""
    assert isinstance(error, ValueError)


@pytest.mark.parametrize("error", CASES)
def test_the_one_boundary_prints_the_line_and_exits_2(
    error: ReportError, capsys: pytest.CaptureFixture[str]
) -> None:
    """What cli/report_cmd.py's own boundary printed: 'toolnexus: <line>', exit 2."""
    assert handle_error(error) == EXIT_USAGE
    assert capsys.readouterr().err == f"toolnexus: {error}\n"
