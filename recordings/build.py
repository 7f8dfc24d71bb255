"""Rebuild the shipped recordings from their sources (run from the repo root).

    .venv/bin/python recordings/build.py

Sources, all in the repository (see README.md here for the provenance table; ``tests/fixtures/``
holds byte-for-byte copies of the project's shared folder, see its README):
- ``tests/fixtures/recordings-live/*.json``: six live captures; ``request_raw`` and ``response_raw``
  are the exact bodies, ``_source.note`` gives the capture time.
- ``tests/seed_examples/seed001_example1_all_three_types.py``: seed 001's support ticket, its
  three questions and its RECORDED response (read with ``ast``: the example itself is not run).
- ``tests/fixtures/seeds/000_*.txt``: seed 000's recorded ``risk`` response for ``rm -rf ./build``.
- ``tests/fixtures/conformance/decisions.json``: the three guard entries (allow, ask, deny).
- ``examples/images/*``: two images, each asked ``questions/image-check.yaml`` through toolnexus
  against ``toolnexus serve --synthetic`` on 127.0.0.1 (the loopback test server). These answers
  are SYNTHETIC: deterministic numbers derived from the questions and the images' sha256, not a
  model's judgement of the pictures. No live image capture exists (images are Jev 1.14,
  experimental); they are here so the demo shows the image path offline, and say so.

The recordings are written with ``toolnexus.styles.recordings.write_recording``, so they have exactly
the shape ``--record`` writes and the names ``--replay`` expects. Rebuilding is idempotent: the
same sources give byte-identical files (``recorded_at`` comes from the source, never the clock).
"""

from __future__ import annotations

import ast
import glob
import json
import re
import sys
from pathlib import Path
from typing import Any

from toolnexus.core.canonical import canonical_json, sha256_hex
from toolnexus.core.questions import normalize_questions
from toolnexus.styles.recordings import write_recording

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
OUT = REPO / "recordings"

#: The direct API, where the live captures were taken (their _source.note says so).
TYPESAFE_ENDPOINT = "https://api.typesafe.ai/v1/systemone"
#: The seeds and decisions.json request "typesafe/jev-1.13", OpenRouter's spelling of the model
#: (system-one-wire.md): the endpoint is inferred from that spelling, not recorded by the source.
OPENROUTER_ENDPOINT = "https://openrouter.ai/api/v1/systemone"
#: The seeds and decisions.json carry no capture time; their served model is dated 2026-09-17.
SEED_RECORDED_AT = "2026-09-17T00:00:00Z"

_NOTE_TIME = re.compile(r"Live capture (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")


def live_captures() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(glob.glob(str(FIXTURES / "recordings-live" / "*.json"))):
        capture = json.loads(Path(path).read_text(encoding="utf-8"))
        request = json.loads(capture["request_raw"])
        response = json.loads(capture["response_raw"])
        when = _NOTE_TIME.search(capture["_source"]["note"])
        assert when, f"{path}: no capture time in _source.note"
        out.append(
            (
                f"tests/fixtures/recordings-live/{Path(path).name}",
                {
                    "model": request["model"],
                    "endpoint": TYPESAFE_ENDPOINT,
                    "state": request["state"],
                    "questions": request["questions"],
                    "response": response,
                    "recorded_at": when.group(1),
                },
            )
        )
    return out


def seed001_ticket() -> tuple[str, dict[str, Any]]:
    path = REPO / "tests" / "seed_examples" / "seed001_example1_all_three_types.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    keep = [
        node
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        or (
            isinstance(node, ast.Assign)
            and any(
                isinstance(t, ast.Name) and t.id in {"TICKET", "QUESTIONS", "RECORDED"}
                for t in node.targets
            )
        )
    ]
    scope: dict[str, Any] = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), str(path), "exec"), scope)
    recorded = scope["RECORDED"]
    return (
        "tests/seed_examples/seed001_example1_all_three_types.py (seed 001, example 1)",
        {
            "model": "typesafe/jev-1.13",
            "endpoint": OPENROUTER_ENDPOINT,
            "state": recorded.state,
            "questions": recorded.questions,
            "response": recorded.response,
            "recorded_at": SEED_RECORDED_AT,
        },
    )


def seed000_risk() -> tuple[str, dict[str, Any]]:
    (path,) = glob.glob(str(FIXTURES / "seeds" / "000_*.txt"))
    text = Path(path).read_text(encoding="utf-8")
    body = re.search(r'let recorded = br#"(.*?)"#;', text, re.S)
    assert body, "seed 000: recorded response not found"
    return (
        f"tests/fixtures/seeds/{Path(path).name} (example 1)",
        {
            "model": "typesafe/jev-1.13",
            "endpoint": OPENROUTER_ENDPOINT,
            "state": "rm -rf ./build",
            "questions": {
                "risk": {
                    "type": "score",
                    "instructions": "How destructive is this shell command?",
                    "criteria": ["harmless", "reversible", "destructive"],
                }
            },
            "response": json.loads(body.group(1)),
            "recorded_at": SEED_RECORDED_AT,
        },
    )


def guard_entries() -> list[tuple[str, dict[str, Any]]]:
    fixture = json.loads((FIXTURES / "conformance" / "decisions.json").read_text(encoding="utf-8"))
    out = []
    for entry in fixture["entries"]:
        request = entry["request"]
        out.append(
            (
                f"tests/fixtures/conformance/decisions.json (entry {entry['band']!r})",
                {
                    "model": request["model"],
                    "endpoint": OPENROUTER_ENDPOINT,
                    "state": request["state"],
                    "questions": request["questions"],
                    "response": entry["response"],
                    "recorded_at": SEED_RECORDED_AT,
                },
            )
        )
    return out


#: The loopback server's address is not recorded (its port changes every run).
LOOPBACK_ENDPOINT = "http://127.0.0.1/v1/systemone"
#: The day the synthetic image answers were first made; fixed so rebuilding is idempotent.
IMAGES_RECORDED_AT = "2026-12-01T00:00:00Z"
IMAGE_EXAMPLES = ("examples/images/red-disc.png", "examples/images/moon.jpg")


def image_examples() -> list[tuple[str, dict[str, Any]]]:
    """Each example image through the real client and a real server: toolnexus sends the
    multipart request to ``toolnexus serve --synthetic`` on 127.0.0.1, and the answer is recorded
    the way ``--record`` records it (the state as sent, each image's sha256, no bytes)."""
    import asyncio

    from toolnexus import Image, create_classifier
    from toolnexus.core.assets import lift_images
    from toolnexus.core.questions import questions_to_wire
    from toolnexus.questionfile.load import load_question_set
    from toolnexus.serve import ServeOptions, Server

    model, questions = load_question_set(REPO / "questions" / "image-check.yaml")
    assert model is not None

    async def ask() -> list[tuple[str, dict[str, Any]]]:
        out = []
        async with Server(ServeOptions(synthetic=True)) as server:
            base_url = f"http://127.0.0.1:{server.port}/v1"
            async with create_classifier(base_url=base_url, model=model, retries=0) as judge:
                for name in IMAGE_EXAMPLES:
                    image = Image(REPO / name)
                    decision = await judge.evaluate(image, questions)
                    lifted = lift_images(image)
                    out.append(
                        (
                            f"{name} (toolnexus serve --synthetic on 127.0.0.1: SYNTHETIC "
                            "answers, not a model's reading of the image)",
                            {
                                "model": model,
                                "endpoint": LOOPBACK_ENDPOINT,
                                "state": lifted.state,
                                "questions": questions_to_wire(questions),
                                "response": decision.to_wire(),
                                "recorded_at": IMAGES_RECORDED_AT,
                                "assets": lifted.key_assets(),
                            },
                        )
                    )
        return out

    return asyncio.run(ask())


def all_sources() -> list[tuple[str, dict[str, Any]]]:
    return [
        *live_captures(),
        seed001_ticket(),
        seed000_risk(),
        *guard_entries(),
        *image_examples(),
    ]


README_HEAD = """# recordings/

Recorded decisions that `make demo` and the tests replay with `--replay recordings/`: no
network, no key, real recorded answers. Each file has exactly the shape `--record DIR` writes
(see `src/toolnexus/styles/recordings.py`): `model` (requested), `served_model`, `endpoint` (unexpanded),
`state`, `questions` (wire form), `response` (the body) and `recorded_at` (UTC), named
`<sha256 of canonical request + canonical state>.json`. No headers and no keys, ever.

`build.py` rebuilds every file from its source (`.venv/bin/python recordings/build.py`; the
sources are in the repository, under `tests/fixtures/`, copies of the project's shared folder);
the same sources give byte-identical files, and `tests/classifier/test_recordings.py` checks that each file
still matches its source and replays.

Notes on provenance:
- The six live captures were taken from `https://api.typesafe.ai/v1/systemone`, requested
  `jev-latest`, served `jev-1.13.0`; `recorded_at` is the capture time in their `_source.note`,
  and the response is their `response_raw`, whose sha256 is listed below (it equals the
  capture's own `response_sha256`).
- The seed and `decisions.json` entries carry no capture time: `recorded_at` is set to the day
  their served model is dated (`typesafe/jev-1.13-20260917`), and their endpoint is inferred from
  the model spelling `typesafe/jev-1.13` (OpenRouter's). For these the sha256 column is that of
  the canonical JSON of the response.
- The two image entries (`examples/images/`) are NOT live captures and NOT a model's judgement:
  `build.py` sends each image through toolnexus, as a multipart request, to `toolnexus serve
  --synthetic` on 127.0.0.1 (the loopback test server), whose answers are deterministic numbers
  drawn from the questions and the images' sha256. They exist so `make demo` shows the image
  path offline. Their `endpoint` is the loopback server (its port is not recorded), their
  `recorded_at` the day they were first made, and they keep each image's sha256 under
  `assets`, never its bytes.

| recording | source | recorded_at | response sha256 |
|---|---|---|---|
"""


def _response_sha256(source: str, response: Any) -> str:
    if source.startswith("tests/fixtures/recordings-live/"):
        capture = json.loads((REPO / source).read_text(encoding="utf-8"))
        return str(capture["response_sha256"])
    return sha256_hex(canonical_json(response))


def main() -> int:
    rows = []
    for source, r in all_sources():
        path = write_recording(
            OUT,
            model=r["model"],
            endpoint=r["endpoint"],
            state=r["state"],
            questions=normalize_questions(r["questions"]),
            response=r["response"],
            recorded_at=r["recorded_at"],
            assets=r.get("assets"),
        )
        digest = _response_sha256(source, r["response"])
        rows.append(f"| `{path.name}` | `{source}` | {r['recorded_at']} | `{digest}` |")
        print(f"{path.relative_to(REPO)}  <-  {source}")
    (OUT / "README.md").write_text(README_HEAD + "\n".join(rows) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
