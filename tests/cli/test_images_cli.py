"""Images end to end through the CLI and the loopback server (``toolnexus serve``), which parses
multipart bodies as the API does: eval of an image state, ``--image NAME=PATH``, batch over a
directory of images and ``--image-field``, ``canonical`` of an image request, recordings that
keep digests and no bytes, a 200-image batch under transient faults, and the key never shown."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import imagegen as g
from clirun import error_line, run_cli
from loopback import Fault, Loopback
from toolnexus import IMAGES_HEADER, Image, NoulQuestion, create_classifier, with_images
from toolnexus.run.codecs import iter_inputs
from toolnexus.run.items import InputSpec

KEY = "sk-images-test-0123456789abcdef"
M14 = ("--model", "jev-1.14.0")
QUESTIONS = """\
questions:
  cat:
    type: noul
    instructions: Is there a cat in the picture?
"""


@pytest.fixture(scope="module")
def server() -> Iterator[Loopback]:
    with Loopback() as s:
        yield s


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)
    (tmp_path / "q.yaml").write_text(QUESTIONS, encoding="utf-8")
    (tmp_path / "photo.png").write_bytes(g.png(24, 24, g.checker((250, 250, 250), (20, 20, 20))))
    (tmp_path / "photo.jpg").write_bytes(g.jpeg(32, 24, (200, 120, 40), exif=True))
    (tmp_path / "compare.txt").write_text("Is <before> the same room as <after>?\n", "utf-8")
    return tmp_path


def live(server: Loopback, *args: str) -> tuple[str, ...]:
    return (*args, "--base-url", server.base_url, "--model", "jev-1.14.0", "--retries", "2")


def never_shows_the_key(*texts: str | bytes) -> None:
    for text in texts:
        assert KEY not in (text if isinstance(text, str) else text.decode("utf-8", "replace"))


# --- eval -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["photo.png", "photo.jpg"])
def test_eval_an_image_as_the_state(server: Loopback, work: Path, name: str) -> None:
    """Issue 10: `toolnexus eval q.yaml photo.png` evaluates an image as the state; the server
    parses the multipart body and answers."""
    ran = run_cli(*live(server, "eval", str(work / "q.yaml"), str(work / name), "--format", "json"))
    assert ran.code == 0, ran.stderr
    record = json.loads(ran.out)
    assert record["model"] == "jev-1.14.0" and 0 <= record["answers"]["cat"]["noul"] <= 1
    sent = server.headers[-1]
    assert sent["content-type"].startswith("multipart/form-data; boundary=")
    assert sent[IMAGES_HEADER.lower()] == "true"
    never_shows_the_key(ran.stdout, ran.stderr)


def test_eval_with_named_images_for_a_text_state(server: Loopback, work: Path) -> None:
    ran = run_cli(
        *live(
            server,
            "eval",
            str(work / "q.yaml"),
            str(work / "compare.txt"),
            "--image",
            f"before={work / 'photo.png'}",
            "--image",
            f"after={work / 'photo.jpg'}",
            "--format",
            "jsonl",
        )
    )
    assert ran.code == 0, ran.stderr
    assert json.loads(ran.out)["answers"]["cat"]["type"] == "noul"


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        pytest.param(("--image", "before"), "--image takes NAME=PATH", id="no-equals"),
        pytest.param(("--image", "be fore=x.png"), "a name is 1-64 letters", id="bad-name"),
        pytest.param(("--image", "before=nope.png"), "--image before: no such file", id="missing"),
        pytest.param(
            ("--image", "before=photo.png", "--image", "before=photo.jpg"),
            "given twice",
            id="twice",
        ),
    ],
)
def test_image_option_errors_are_one_line(
    server: Loopback,
    work: Path,
    monkeypatch: pytest.MonkeyPatch,
    extra: tuple[str, ...],
    needle: str,
) -> None:
    monkeypatch.chdir(work)
    total = server.total
    ran = run_cli(*live(server, "eval", "q.yaml", "compare.txt", *extra))
    assert ran.code == 2
    assert needle in error_line(ran.stderr)
    assert server.total == total  # nothing was sent


@pytest.mark.parametrize(
    ("state", "args", "needle"),
    [
        pytest.param(
            "photo.png",
            ("--model", "jev-1.13.0"),
            "classifier: typesafe (jev-1.13.0) does not support images",
            id="unsupported",
        ),
        pytest.param(
            "photo.png",
            ("--backend", "openrouter", "--model", "typesafe/jev-1.13"),
            "classifier: openrouter (typesafe/jev-1.13) does not support images",
            id="openrouter",
        ),
        pytest.param("fake.png", M14, "is neither PNG nor JPEG", id="not-an-image"),
        pytest.param("tiny.png", M14, "under the image_min_side limit of 16 px", id="too-small"),
        pytest.param("gone.png", M14, "gone.png: image state: no such file", id="missing"),
    ],
)
def test_image_errors_before_any_request(
    server: Loopback,
    work: Path,
    monkeypatch: pytest.MonkeyPatch,
    state: str,
    args: tuple[str, ...],
    needle: str,
) -> None:
    monkeypatch.chdir(work)
    (work / "fake.png").write_bytes(b"GIF89a" + b"\x00" * 40)
    (work / "tiny.png").write_bytes(g.png(8, 8))
    total = server.total
    ran = run_cli("eval", "q.yaml", state, "--base-url", server.base_url, *args)
    assert ran.code == 2, ran.stderr
    assert needle in error_line(ran.stderr)
    assert server.total == total


# --- canonical --------------------------------------------------------------------------------


def test_canonical_prints_the_json_part_with_its_assets_map(work: Path) -> None:
    """Issue 10: `toolnexus canonical` prints the JSON part of an image request (with the assets
    map), and --sha256 hashes that."""
    png = (work / "photo.png").read_bytes()
    placeholder = f"<image:{hashlib.sha256(png).hexdigest()[:32]}>"
    ran = run_cli("canonical", str(work / "q.yaml"), "--state", str(work / "photo.png"))
    assert ran.code == 0, ran.stderr
    assert json.loads(ran.out) == {
        "assets": {placeholder: {"type": "image", "part": "asset-0"}},
        "model": "jev-latest",
        "questions": {"cat": {"type": "noul", "instructions": "Is there a cat in the picture?"}},
        "state": placeholder,
    }
    digest = run_cli(
        "canonical", str(work / "q.yaml"), "--state", str(work / "photo.png"), "--sha256"
    )
    assert digest.out == hashlib.sha256(ran.stdout).hexdigest() + "\n"
    named = run_cli(
        "canonical",
        str(work / "q.yaml"),
        "--state",
        str(work / "compare.txt"),
        "--image",
        f"after={work / 'photo.jpg'}",
        "--image",
        f"before={work / 'photo.png'}",
    )
    body = json.loads(named.out)
    assert body["state"] == "Is <before> the same room as <after>?"
    assert body["assets"] == {  # numbered in order of first appearance in the state
        "<before>": {"type": "image", "part": "asset-0"},
        "<after>": {"type": "image", "part": "asset-1"},
    }


def test_canonical_json_part_is_what_the_wire_carries(server: Loopback, work: Path) -> None:
    """The printed bytes are the request part the classifier sends, byte for byte."""
    import httpx

    parts: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        boundary = request.headers["content-type"].split("boundary=")[1].encode()
        first = request.content.split(b"--" + boundary)[1]
        parts.append(first.partition(b"\r\n\r\n")[2].removesuffix(b"\r\n"))
        answers = {"cat": {"type": "noul", "noul": 0.5}}
        return httpx.Response(200, json={"model": "jev-1.14.0", "answers": answers})

    async def go() -> None:
        async with create_classifier(
            transport=httpx.MockTransport(handler), model="jev-latest", supports={"images": True}
        ) as c:
            await c.evaluate(Image(work / "photo.png"), {"cat": NoulQuestion(
                "Is there a cat in the picture?")})  # fmt: skip

    asyncio.run(go())
    printed = run_cli("canonical", str(work / "q.yaml"), "--state", str(work / "photo.png"))
    assert parts == [printed.stdout]


# --- batch ------------------------------------------------------------------------------------


def test_batch_over_a_directory_of_images_reads_each_when_sent(
    server: Loopback, work: Path
) -> None:
    folder = work / "photos"
    folder.mkdir()
    for i in range(3):
        (folder / f"{i}.png").write_bytes(g.png(16 + i, 16, (i * 40, 0, 0)))
    (folder / "3.jpg").write_bytes(g.jpeg(16, 20, progressive=True))
    items = list(iter_inputs([str(folder)], InputSpec()))
    assert [type(i.state) for i in items] == [Image] * 4
    assert all(i.state._data is None for i in items)  # listed, not read: memory stays flat
    out = work / "out.jsonl"
    ran = run_cli(*live(server, "batch", str(work / "q.yaml"), str(folder), "-o", str(out)))
    assert ran.code == 0, ran.stderr
    records = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert [r["id"] for r in records] == [
        str(folder / n) for n in ("0.png", "1.png", "2.png", "3.jpg")
    ]
    assert all(r["answers"]["cat"]["type"] == "noul" for r in records)


def test_batch_image_field_paths_are_relative_to_the_input_file(
    server: Loopback, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = work / "data"
    (sub / "img").mkdir(parents=True)
    (sub / "img" / "a.png").write_bytes(g.png(20, 20))
    (sub / "img" / "b.jpg").write_bytes(g.jpeg(20, 20))
    (sub / "in.jsonl").write_text(
        '{"id": "a", "photo": "img/a.png", "text": "is <photo> a cat?"}\n'
        '{"id": "b", "photo": "img/b.jpg", "text": "is <photo> a cat?"}\n'
        '{"id": "c", "photo": "img/none.png", "text": "is <photo> a cat?"}\n'
        '{"id": "d", "photo": 7, "text": "x"}\n',
        encoding="utf-8",
    )
    (sub / "in.csv").write_text("id,photo,caption\na,img/a.png,kitchen\n", encoding="utf-8")
    monkeypatch.chdir(work)  # not the input's folder: the paths resolve against the input file
    ran = run_cli(
        *live(
            server,
            "batch",
            "q.yaml",
            "data/in.jsonl",
            "--id-field",
            "id",
            "--image-field",
            "photo",
            "--state-field",
            "text",
            "-o",
            "out.jsonl",
        )
    )
    assert ran.code == 2  # two malformed lines
    lines = (work / "out.jsonl").read_text("utf-8").splitlines()
    records = {r["id"]: r for r in map(json.loads, lines)}
    assert "answers" in records["a"] and "answers" in records["b"]
    assert records["c"]["error"]["code"] == "malformed_input"
    assert "data/in.jsonl:3: image field 'photo': no such file" in records["c"]["error"]["message"]
    assert "not a path: 7" in records["d"]["error"]["message"]
    csv_items = list(iter_inputs(["data/in.csv"], InputSpec(id_field="id", image_field="photo")))
    (item,) = csv_items
    assert item.state["caption"] == "kitchen" and isinstance(item.state["photo"], Image)
    same = list(
        iter_inputs(["data/in.csv"], InputSpec(state_fields=("photo",), image_field="photo"))
    )
    assert isinstance(same[0].state, Image)


def test_a_batch_of_200_image_states_at_20_percent_transient_faults(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10 acceptance: a batch of 200 image states at 20% transient faults yields 200
    decisions; the key never appears in any output or recording."""
    folder = work / "many"
    folder.mkdir()
    for i in range(200):
        (folder / f"{i:03}.png").write_bytes(g.png(16, 16, (i, 255 - i, (7 * i) % 256)))
    with Loopback() as server:
        # The first arrival of about 1 body in 5 fails; its retry (the same bytes) succeeds.
        server.fail_first_attempts(
            5, [Fault.http(503, retry_after="0"), Fault.http(429, retry_after="0")]
        )
        out = work / "out.jsonl"
        ran = run_cli(
            *live(server, "batch", str(work / "q.yaml"), str(folder), "-o", str(out)),
            "--record",
            str(work / "rec"),
        )
        faults = server.faults_injected
    assert ran.code == 0, ran.stderr
    records = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert len(records) == 200 and all("answers" in r for r in records)
    assert 20 <= faults <= 60, faults  # about 20% of 200
    files = sorted((work / "rec").glob("*.json"))
    assert len(files) == 200
    one_png = base64.b64encode((folder / "000.png").read_bytes()).decode()
    for f in files:
        text = f.read_text("utf-8")
        never_shows_the_key(text)
        assert one_png not in text and "iVBORw0KGgo" not in text  # no PNG bytes, in any form
        assert json.loads(text)["assets"]
    never_shows_the_key(ran.stdout, ran.stderr, out.read_text("utf-8"))


def test_library_batch_of_200_image_states_with_resets_and_statuses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)
    states = [
        with_images(f"photo {i}: <p>", {"p": g.png(16, 16 + i % 5, (i, 3, 200 - i))})
        for i in range(200)
    ]
    metrics: list[dict[str, Any]] = []
    with Loopback() as server:
        server.fail_first_attempts(5, [Fault.reset(), Fault.http(502), Fault.http(529)])

        async def go() -> list[Any]:
            async with create_classifier(
                base_url=server.base_url,
                model="jev-1.14.0",
                retry_base_ms=1,
                on_metric=metrics.append,
            ) as c:
                return await c.evaluate_batch(states, {"cat": NoulQuestion("A cat?")})

        decisions = asyncio.run(go())
        faults = server.faults_injected
    assert len(decisions) == 200 and faults >= 20
    never_shows_the_key(json.dumps(metrics, default=str))


# --- replay -----------------------------------------------------------------------------------


def test_record_then_replay_an_image_offline(
    server: Loopback, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = work / "rec"
    live_run = run_cli(
        *live(server, "eval", str(work / "q.yaml"), str(work / "photo.jpg"), "--format", "json"),
        "--record",
        str(rec),
    )
    assert live_run.code == 0, live_run.stderr
    monkeypatch.delenv("TYPESAFE_API_KEY")
    copy = work / "copy.jpg"
    copy.write_bytes((work / "photo.jpg").read_bytes())
    replayed = run_cli(
        "eval", str(work / "q.yaml"), str(copy), "--replay", str(rec), "--format", "json"
    )
    assert replayed.code == 0, replayed.stderr
    assert json.loads(replayed.out)["answers"] == json.loads(live_run.out)["answers"]
    (work / "other.jpg").write_bytes(g.jpeg(32, 24, (0, 0, 0)))
    miss = run_cli("eval", str(work / "q.yaml"), str(work / "other.jpg"), "--replay", str(rec))
    assert miss.code == 2 and "no recording in" in error_line(miss.stderr)


# --- the shipped examples (make demo) ----------------------------------------------------------


@pytest.mark.parametrize("name", ["red-disc.png", "moon.jpg"])
def test_the_shipped_example_images_replay_offline(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make demo`'s promise for images: a real PNG and a real JPEG answer from recordings/ with
    no network and no key (their answers are the loopback server's synthetic ones)."""
    from PIL import Image as PilImage

    from paths import REPO

    path = REPO / "examples" / "images" / name
    with PilImage.open(path) as im:  # a real image, decodable by an independent decoder
        im.load()
        assert im.size == (96, 64)
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    ran = run_cli(
        "eval",
        str(REPO / "questions" / "image-check.yaml"),
        str(path),
        "--replay",
        str(REPO / "recordings"),
        "--format",
        "json",
    )
    assert ran.code == 0, ran.stderr
    record = json.loads(ran.out)
    assert record["model"] == "jev-1.14.0" and set(record["answers"]) == {
        "round_shape",
        "main_colour",
        "looks_like",
    }


def test_a_recording_keeps_image_digests_and_rejects_a_malformed_assets_map(
    tmp_path: Path,
) -> None:
    from toolnexus.core.errors import ConfigError
    from toolnexus.styles.recordings import read_recording, recording_name, write_recording

    png = g.png(16, 16)
    digest = hashlib.sha256(png).hexdigest()
    assets = {"<p>": {"type": "image", "sha256": digest}}
    questions = {"cat": NoulQuestion("A cat?")}
    body = {"model": "m", "answers": {"cat": {"type": "noul", "noul": 0.5}}}
    path = write_recording(
        tmp_path, model="m", endpoint="e", state="<p>", questions=questions, response=body,
        assets=assets,
    )  # fmt: skip
    assert path.name == recording_name("m", questions, "<p>", assets)
    assert path.name != recording_name("m", questions, "<p>")  # other bytes, other file
    r = read_recording(path)
    assert r.assets == assets and json.loads(path.read_text())["assets"] == assets
    broken = json.loads(path.read_text())
    broken["assets"] = {"<p>": {"type": "image", "data_base64": base64.b64encode(png).decode()}}
    path.write_text(json.dumps(broken))
    with pytest.raises(ConfigError, match="'assets' must map placeholders"):
        read_recording(path)


def test_toolnexus_serve_replays_the_shipped_image_recordings() -> None:
    """The image recordings replay through `toolnexus serve --replay recordings/` as well: the
    server matches the multipart request on the image's sha256, and answers byte for byte."""
    from paths import REPO
    from toolnexus.questionfile.load import load_question_set
    from toolnexus.serve import ServeOptions, Server
    from toolnexus.styles.recordings import read_recording

    model, questions = load_question_set(REPO / "questions" / "image-check.yaml")
    recorded = {
        r.state: r.response
        for r in map(read_recording, sorted((REPO / "recordings").glob("*.json")))
        if r.assets
    }

    async def go() -> list[tuple[str, Any]]:
        out = []
        async with Server(ServeOptions(replay=REPO / "recordings")) as server:
            url = f"http://127.0.0.1:{server.port}/v1"
            async with create_classifier(base_url=url, model=model, retries=0) as judge:
                for name in ("red-disc.png", "moon.jpg"):
                    image = Image(REPO / "examples" / "images" / name)
                    decision = await judge.evaluate(image, questions)
                    out.append((image.placeholder, decision.to_wire()))
        return out

    answered = asyncio.run(go())
    assert len(answered) == 2
    for placeholder, body in answered:
        assert body == recorded[placeholder]


@pytest.mark.parametrize(
    ("args", "ok"),
    [
        pytest.param(("--backend", "custom"), False, id="custom-declares-no-images"),
        pytest.param(("--backend", "custom", "--supports-images"), True, id="custom-says-images"),
        pytest.param(("--model", "jev-1.14.0", "--no-supports-images"), False, id="typesafe-no"),
        pytest.param(("--model", "jev-1.13.0", "--supports-images"), True, id="typesafe-1.13-yes"),
    ],
)
def test_supports_images_overrides_the_backend_row(
    server: Loopback, work: Path, args: tuple[str, ...], ok: bool
) -> None:
    """Seed 004: supports {:images true} on a classifier overrides the row; custom must declare
    it. The CLI's --supports-images/--no-supports-images is that option."""
    total = server.total
    ran = run_cli(
        "eval", str(work / "q.yaml"), str(work / "photo.png"), "--base-url", server.base_url,
        "--format", "json", *args,
    )  # fmt: skip
    if ok:
        assert ran.code == 0, ran.stderr
        assert server.headers[-1][IMAGES_HEADER.lower()] == "true"
    else:
        assert ran.code == 2 and "does not support images" in error_line(ran.stderr)
        assert server.total == total
