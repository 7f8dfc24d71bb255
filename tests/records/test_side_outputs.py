"""Side outputs (issue 42 items 1 and 2).

Item 1: "One rule for every path any command writes, in one function every command calls: it
may not be a file the command reads (compared by resolved path and by device and inode, so
symlinks and hard links count) nor another output of the same command; refused in one line,
exit 2, before anything is read or sent. ``--resume`` refuses an output holding a line that is
not a record of this question set, naming the first such line."

Item 2: "A whole-file output that is a regular file or an absent path is written to a temporary
file in the same folder and renamed over the target (a symlinked output: its target is
replaced; the target's mode is kept). ``-``, FIFOs and character devices are written in place."
A full disk is simulated with ``RLIMIT_FSIZE`` in a child process and with ``/dev/full``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import error_line, run_cli
from paths import TESTS
from replayed import replayed_batch
from toolnexus.core.errors import RunError
from toolnexus.records.outputs import OutputError, check_outputs, whole_file

QUESTIONS = """\
model: m
questions:
  addresses_task: {type: noul, instructions: Does the change address the task?}
gates:
  merge:
    rules:
      - {question: addresses_task, below: 0.5, action: hold}
    default: permit
"""
#: state -> the recorded noul: 0.78 is uncertain (queued), 0.1 is held, 0.95 permitted
STATES = {"edge": 0.78, "low": 0.1, "high": 0.95}
LINKS = ["same path", "symlink", "hard link"]


def _aim(tmp_path: Path, target: Path, how: str) -> Path:
    """A path naming ``target``: itself, a symlink to it, or a hard link to it."""
    if how == "same path":
        return target
    link = tmp_path / f"link-{target.name}"
    if how == "symlink":
        link.symlink_to(target)
    else:
        os.link(target, link)
    return link


# -- report ------------------------------------------------------------------------------------

REPORT_OUTPUTS = ["-o", "--fit-calibration", "--write-thresholds", "--review-out", "--junit"]
REPORT_INPUTS = ["run", "--labels", "--gates", "--questions"]


def _report_files(tmp_path: Path) -> dict[str, Path]:
    files = {"run": tmp_path / "run.jsonl", "--labels": tmp_path / "labels.csv",
             "--gates": tmp_path / "gates.yaml",
             "--questions": tmp_path / "questions.yaml"}  # fmt: skip
    for name, path in files.items():
        path.write_text(f"the {name} a user cannot lose\n", "utf-8")
    return files


@pytest.mark.parametrize("source", REPORT_INPUTS)
@pytest.mark.parametrize("flag", REPORT_OUTPUTS)
def test_report_refuses_every_output_onto_every_input(
    tmp_path: Path, flag: str, source: str
) -> None:
    """An output may not be a file the command reads (the path itself, a symlink to it, a hard
    link to it): refused in one line, exit 2, before anything is read (the inputs here are not
    even runs: reading one would fail otherwise)."""
    for how in LINKS:
        folder = tmp_path / how.replace(" ", "-")
        folder.mkdir()
        files = _report_files(folder)
        aimed = _aim(folder, files[source], how)
        ran = run_cli(
            "report", str(files["run"]), "--labels", str(files["--labels"]),
            "--gates", str(files["--gates"]), "--questions", str(files["--questions"]),
            flag, str(aimed),
        )  # fmt: skip
        assert ran.code == 2, how
        line = error_line(ran.stderr)
        assert line.startswith(f"{flag} {aimed} is also ") and "would be overwritten" in line
        for name, path in files.items():
            assert path.read_text("utf-8") == f"the {name} a user cannot lose\n"


@pytest.mark.parametrize(
    ("first", "second"),
    [pytest.param(a, b, id=f"{a}+{b}") for i, a in enumerate(REPORT_OUTPUTS)
     for b in REPORT_OUTPUTS[i + 1:]],
)  # fmt: skip
def test_report_refuses_two_outputs_on_one_file(tmp_path: Path, first: str, second: str) -> None:
    """'... nor another output of the same command' (by path, symlink or hard link)."""
    files = _report_files(tmp_path)
    for how in LINKS:
        folder = tmp_path / how.replace(" ", "-")
        folder.mkdir()
        one = folder / "out"
        one.write_text("old\n", "utf-8")
        two = _aim(folder, one, how)
        ran = run_cli("report", str(files["run"]), first, str(one), second, str(two))
        assert ran.code == 2, how
        assert "two outputs cannot share a file" in error_line(ran.stderr)
        assert one.read_text("utf-8") == "old\n"


# -- batch -------------------------------------------------------------------------------------


def _batch_setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The question file, a replay directory answering every state, and the inputs."""
    return replayed_batch(tmp_path, QUESTIONS, STATES)


def _refusal_setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The files of :func:`_batch_setup` for a run refused before anything is read: the
    recordings directory stays empty."""
    qpath, rec, src = tmp_path / "q.yaml", tmp_path / "rec", tmp_path / "in.jsonl"
    qpath.write_text(QUESTIONS, "utf-8")
    rec.mkdir()
    src.write_text("".join(json.dumps({"id": s, "text": s}) + "\n" for s in STATES), "utf-8")
    return qpath, rec, src


def _batch(qpath: Path, src: Path, rec: Path, *more: str) -> tuple[str, ...]:
    return ("batch", str(qpath), str(src), "--id-field", "id", "--state-field", "text",
            "--replay", str(rec), *more)  # fmt: skip


BATCH_OUTPUTS = ["--output", "--review-out", "--emit-cases"]
BATCH_INPUTS = ["the question file", "an input", "--thresholds", "--calibration"]


@pytest.mark.parametrize("source", BATCH_INPUTS)
@pytest.mark.parametrize("flag", BATCH_OUTPUTS)
def test_batch_refuses_every_output_onto_every_input(
    tmp_path: Path, flag: str, source: str
) -> None:
    """``batch -o`` onto an input was the one output refused; now every output is, by the
    library's rule (``run.safety.check_files`` over ``records.outputs.check_outputs``), by
    path, symlink or hard link."""
    for how in LINKS:
        folder = tmp_path / how.replace(" ", "-")
        folder.mkdir()
        _batch_refused(folder, flag, source, how)


def _batch_refused(tmp_path: Path, flag: str, source: str, how: str) -> None:
    qpath, rec, src = _refusal_setup(tmp_path)
    thresholds = tmp_path / "t.yaml"
    thresholds.write_text("yes: 0.8\nno: 0.2\n", "utf-8")
    calibration = tmp_path / "cal.json"
    calibration.write_text("{}\n", "utf-8")
    files = {"the question file": qpath, "an input": src, "--thresholds": thresholds,
             "--calibration": calibration}  # fmt: skip
    before = {name: path.read_bytes() for name, path in files.items()}
    aimed = _aim(tmp_path, files[source], how)
    outputs = {"--output": str(tmp_path / "run.jsonl"), flag: str(aimed)}
    more = [x for pair in outputs.items() for x in pair]
    ran = run_cli(*_batch(qpath, src, rec, *more, "--thresholds", f"@{thresholds}",
                          "--calibration", str(calibration)))  # fmt: skip
    assert ran.code == 2
    line = error_line(ran.stderr)
    assert line.startswith(f"{flag} {aimed} is also {source}") and "overwritten" in line
    assert {name: path.read_bytes() for name, path in files.items()} == before
    assert not (tmp_path / "run.jsonl").exists() or flag == "--output"


@pytest.mark.parametrize(
    ("flag", "other"),
    [("--review-out", "--output"), ("--emit-cases", "--output"), ("--emit-cases", "--review-out")],
)
def test_batch_refuses_two_outputs_on_one_file(tmp_path: Path, flag: str, other: str) -> None:
    """``--emit-cases`` onto the ``-o`` run once made 60 records into 58 cases."""
    qpath, rec, src = _refusal_setup(tmp_path)
    run = tmp_path / "run.jsonl"
    shared = tmp_path / "one-file"
    outputs = {"--output": run, other: shared, flag: _aim(tmp_path, shared, "symlink")}
    more = [str(x) for pair in outputs.items() for x in pair]
    ran = run_cli(*_batch(qpath, src, rec, *more))
    assert ran.code == 2
    assert "two outputs cannot share a file" in error_line(ran.stderr)
    assert not shared.exists() and not run.exists()


def test_the_library_run_refuses_a_side_output_onto_its_question_file(tmp_path: Path) -> None:
    """``toolnexus.run`` calls the same rule: a hard link to the question file as
    ``review_out``, and the cache file as ``emit_cases``."""
    from toolnexus.run import RunConfig, run_batch

    qpath, _, src = _batch_setup(tmp_path)
    link = _aim(tmp_path, qpath, "hard link")
    cfg = RunConfig.from_question_file(
        qpath, str(src), classifier={"style": "static", "model": "m", "decisions": []},
        id_field="id", state_fields=("text",), output=str(tmp_path / "run.jsonl"),
        review_out=str(link),
    )  # fmt: skip
    with pytest.raises(RunError, match=r"--review-out .* is also the question file"):
        run_batch(cfg)
    assert qpath.read_text("utf-8") == QUESTIONS


def test_resume_refuses_a_line_that_is_not_a_record_of_this_question_set(tmp_path: Path) -> None:
    """A golden-cases file given as ``-o --resume`` held lines without ``questions_sha256`` and
    ``answers``: they were trusted as finished and every state skipped."""
    qpath, rec, src = _batch_setup(tmp_path)
    run, cases = tmp_path / "run.jsonl", tmp_path / "cases.jsonl"
    ran = run_cli(*_batch(qpath, src, rec, "-o", str(run), "--emit-cases", str(cases)))
    assert ran.code == 0, ran.stderr
    good = run.read_text("utf-8").splitlines(keepends=True)
    wrecked = tmp_path / "wrecked.jsonl"
    wrecked.write_text(good[0] + cases.read_text("utf-8"), "utf-8")
    ran = run_cli(*_batch(qpath, src, rec, "-o", str(wrecked), "--resume"))
    assert ran.code == 2
    line = error_line(ran.stderr)
    assert line.startswith(f"--output {wrecked}:2: cannot resume from it: not a record of this")
    assert "questions_sha256" in line and "answers" in line
    wrecked.write_text(good[0] + '{"note": "no id"}\n', "utf-8")
    ran = run_cli(*_batch(qpath, src, rec, "-o", str(wrecked), "--resume"))
    assert ran.code == 2 and f"{wrecked}:2:" in error_line(ran.stderr)


# -- the rule itself ---------------------------------------------------------------------------


def test_streams_are_not_files_to_overwrite_and_a_directory_is_refused(tmp_path: Path) -> None:
    """``-`` and character devices are written in place: two of them are no clash; a directory
    is no file."""
    check_outputs([("-o", "-"), ("--junit", "-")], [("the run", "-")])
    check_outputs([("-o", os.devnull), ("--junit", os.devnull)], [("the run", os.devnull)])
    with pytest.raises(OutputError, match="is a directory; name a file"):
        check_outputs([("--junit", tmp_path)], [])
    with pytest.raises(OutputError, match="inside the input directory"):
        check_outputs([("--output", tmp_path / "sub" / "out.jsonl")], [("an input", tmp_path)])


# -- whole-file writes -------------------------------------------------------------------------


def test_a_symlinked_output_has_its_target_replaced_and_its_mode_kept(tmp_path: Path) -> None:
    target = tmp_path / "real.yaml"
    target.write_text("old\n", "utf-8")
    target.chmod(0o640)
    link = tmp_path / "link.yaml"
    link.symlink_to(target)
    inode = target.stat().st_ino
    with whole_file(link) as f:
        f.write("new\n")
    assert link.is_symlink() and target.read_text("utf-8") == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.stat().st_ino != inode  # renamed over, not rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.yaml", "real.yaml"]


def test_a_new_output_gets_the_mode_a_plain_open_gives(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        with whole_file(tmp_path / "new.csv", newline="") as f:
            f.write("id\n")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.csv").stat().st_mode) == 0o644


def test_a_failure_inside_the_write_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("good\n", "utf-8")
    with pytest.raises(ZeroDivisionError), whole_file(path) as f:
        f.write("half")
        _ = 1 / 0
    assert path.read_text("utf-8") == "good\n"
    assert [p.name for p in tmp_path.iterdir()] == ["t.yaml"]


def test_a_character_device_is_written_in_place_and_a_full_one_is_one_line() -> None:
    with whole_file(os.devnull) as f:
        f.write("gone\n")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with pytest.raises(OutputError) as caught, whole_file("/dev/full") as f:
        f.write("x" * 70_000)
    assert (
        str(caught.value) == "/dev/full: cannot write: No space left on device; nothing was written"
    )
    ran = run_cli("report", "nope.jsonl", "--junit", "/dev/full")
    # the run is read first: it does not exist, so the error names it, not the device
    assert ran.code == 2


#: Runs in a child process under RLIMIT_FSIZE (a full disk, never a mount): every whole-file
#: writer of report and batch, each over an old file that must survive; prints one JSON object
#: per writer.
_CHILD = r"""
import json, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))
sys.path.insert(0, sys.argv[1])
from clirun import run_cli
for name, args in json.loads(sys.argv[2]):
    ran = run_cli(*args)
    print(json.dumps({"name": name, "code": ran.code, "err": ran.stderr}))
"""


def test_every_whole_file_writer_on_a_full_disk_keeps_the_old_file(tmp_path: Path) -> None:
    qpath, rec, src = _batch_setup(tmp_path)
    run, cases = tmp_path / "run.jsonl", tmp_path / "cases0.jsonl"
    ran = run_cli(*_batch(qpath, src, rec, "-o", str(run), "--emit-cases", str(cases)))
    assert ran.code == 0, ran.stderr
    labels = tmp_path / "labels.csv"
    labels.write_text("id,addresses_task\nedge,true\nlow,false\nhigh,true\n", "utf-8")
    names = ("o", "junit", "thresholds", "review", "calibration", "b-review", "b-cases",
             "b-jsonl", "b-json", "b-csv")  # fmt: skip
    old = {n: tmp_path / f"old-{n}" for n in names}
    for path in old.values():
        path.write_text("OLD\n", "utf-8")
    report = ("report", str(run), "--labels", str(labels), "--format", "json")
    writers = [
        ("o", [*report, "-o", str(old["o"])]),
        ("junit", [*report, "--fail-on", "errors>0", "--junit", str(old["junit"])]),
        ("thresholds", [*report, "--target-accuracy", "0.5", "--write-thresholds",
                        str(old["thresholds"])]),
        ("review", [*report, "--review-out", str(old["review"])]),
        ("calibration", [*report, "--fit-calibration", str(old["calibration"])]),
        # a finished run resumed sends and appends nothing; its steps write their files
        ("b-review", [*_batch(qpath, src, rec, "-o", str(run), "--resume", "--review-out",
                              str(old["b-review"]))]),
        ("b-cases", [*_batch(qpath, src, rec, "-o", str(run), "--resume", "--emit-cases",
                             str(old["b-cases"]))]),
        # the run's own output, started over: the old file stays until the run finishes
        *((f"b-{fmt}", [*_batch(qpath, src, rec, "-o", str(old[f"b-{fmt}"]), "--format", fmt,
                                "--overwrite")]) for fmt in ("jsonl", "json", "csv")),
    ]  # fmt: skip
    tests = str(TESTS)
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, tests, json.dumps(writers)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    results = {r["name"]: r for r in map(json.loads, child.stdout.splitlines())}
    assert sorted(results) == sorted(old)
    for name, path in old.items():
        got = results[name]
        assert path.read_text("utf-8") == "OLD\n", name
        assert got["code"] == 2, (name, got)
        assert "Traceback" not in got["err"], got
        line = error_line(got["err"].split("\n", got["err"].count("\n") - 1)[-1])
        if name in ("b-jsonl", "b-json", "b-csv"):  # streamed, in the run's own words
            assert "File too large" in line and str(path) in line, got
            continue
        assert line.endswith("cannot write: File too large; the old file is kept as it was"), got
        assert str(path) in line
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


# -- nothing matched, or an empty queue --------------------------------------------------------


def test_labels_matching_no_record_write_nothing_and_an_empty_queue_writes_its_header(
    tmp_path: Path,
) -> None:
    """ "Exit 2 with nothing written only when the inputs matched nothing ... An empty review
    queue or zero cases writes a header-only file, says ``0 records to review`` on stderr, and
    exits 0." (A report whose labels matched no record once replaced a good thresholds file
    with ``questions: {}``, exit 0.)"""
    qpath, rec, src = _batch_setup(tmp_path)
    run = tmp_path / "run.jsonl"
    assert run_cli(*_batch(qpath, src, rec, "-o", str(run))).code == 0
    labels = tmp_path / "labels.csv"
    labels.write_text("id,addresses_task\nsomeone-else,true\n", "utf-8")
    thresholds = tmp_path / "t.yaml"
    thresholds.write_text("questions: {addresses_task: {yes: 0.8, no: 0.2}}\n", "utf-8")
    ran = run_cli("report", str(run), "--labels", str(labels), "--target-precision", "0.9",
                  "--write-thresholds", str(thresholds), "--format", "json")  # fmt: skip
    assert ran.code == 2
    assert ran.stderr.splitlines()[-1].endswith("; nothing written")
    assert "addresses_task: {yes: 0.8" in thresholds.read_text("utf-8")
    calibration = tmp_path / "cal.json"
    calibration.write_text("a good old map\n", "utf-8")
    ran = run_cli("report", str(run), "--labels", str(labels), "--fit-calibration",
                  str(calibration), "--format", "json")  # fmt: skip
    assert ran.code == 2
    assert error_line(ran.stderr).endswith("(the labels match no record); nothing written")
    assert calibration.read_text("utf-8") == "a good old map\n"
    # only "high" (0.95, permitted, sure): nothing to review
    calm = tmp_path / "calm.jsonl"
    calm.write_text(run.read_text("utf-8").splitlines(keepends=True)[2], "utf-8")
    review = tmp_path / "review.csv"
    ran = run_cli("report", str(calm), "--review-out", str(review), "--format", "json")
    assert ran.code == 0
    assert f"{review}: 0 records to review" in ran.stderr
    assert review.read_text("utf-8").count("\n") == 1 and review.read_text("utf-8")[:3] == "id,"


def test_batch_refuses_an_output_in_the_replay_directory_or_on_its_cache(tmp_path: Path) -> None:
    """The recordings ``--replay`` reads and the cache file ``--cache`` fills are the run's
    files too: an output inside the one or onto the other is refused."""
    from toolnexus.cli.cache_cmd import CACHE_FILE

    qpath, rec, src = _refusal_setup(tmp_path)
    before = sorted(p.name for p in rec.iterdir())
    ran = run_cli(*_batch(qpath, src, rec, "-o", str(rec / "run.jsonl")))
    assert ran.code == 2
    assert "is inside the input directory" in error_line(ran.stderr)
    assert sorted(p.name for p in rec.iterdir()) == before
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    cache = cache_dir / CACHE_FILE
    ran = run_cli(
        "batch", str(qpath), str(src), "--id-field", "id", "--state-field", "text",
        "--cache", "--cache-dir", str(cache_dir), "-o", str(tmp_path / "run.jsonl"),
        "--review-out", str(cache),
    )  # fmt: skip
    assert ran.code == 2
    assert error_line(ran.stderr).startswith(f"the cache {cache} is also --review-out")
