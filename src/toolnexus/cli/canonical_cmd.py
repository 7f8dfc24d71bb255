"""``toolnexus canonical``: the exact bytes the byte-identity claim covers, and nothing else.

No trailing newline, so ``sha256sum`` of the output is the fixture's ``canonicalSha256`` and
``diff <(toolnexus canonical a.yaml) <(toolnexus canonical b.yaml)`` compares what would be
sent. Offline by construction: it imports the pure core only, never httpx.

With images (``--state photo.png``, or ``--image NAME=PATH`` for a state that says ``<NAME>``)
it prints the JSON part of the image request, the ``request`` part of its multipart body: the
body with the state as sent (placeholders in place of images) plus its ``assets`` map.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .errors import fail


def canonical(
    questions: Annotated[
        str,
        typer.Argument(
            help="Question-set YAML file (- for stdin).", metavar="QUESTIONS", show_default=False
        ),
    ],
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Model to name in the bytes. Default: TOOLNEXUS_MODEL, else the file's model, "
            "else jev-latest.",
            show_default=False,
        ),
    ] = None,
    sha256: Annotated[
        bool, typer.Option("--sha256", help="Print the sha256 hex digest instead.")
    ] = False,
    pretty: Annotated[
        bool,
        typer.Option("--pretty", help="Print an indented form for reading (not the exact bytes)."),
    ] = False,
    state: Annotated[
        str | None,
        typer.Option(
            "--state",
            help="A state file (- for stdin; .png/.jpg for an image): print the whole request "
            "body {model, questions, state} instead; the state is outside the byte-identity "
            "claim.",
            show_default=False,
        ),
    ] = None,
    image: Annotated[
        list[str] | None,
        typer.Option(
            "--image",
            help="NAME=PATH: an image the --state refers to as <NAME> (repeatable); prints the "
            "JSON part of the image request, with its assets map.",
            metavar="NAME=PATH",
        ),
    ] = None,
) -> None:
    """Print the canonical bytes of model + questions: keys sorted, arrays kept, compact.

    Nothing is added, not even a newline. Exit 2 on an input error (one line, path:line:col).
    """
    from ..canonical import canonical_json, canonical_request, sha256_hex
    from ..questions import questions_to_wire
    from .questionfile import load_question_set, resolve_model
    from .render import CanonicalResult, CanonicalView, render

    if sha256 and pretty:
        fail("--sha256 and --pretty do not combine: pick one")
    if state == "-" and questions == "-":
        fail("the question set and the state cannot both come from stdin")
    qset = load_question_set(questions)
    chosen = resolve_model(model, qset.model)
    if image and state is None:
        fail("--image needs --state: the state is what refers to the image as <NAME>")
    if state is None:
        body = canonical_request(chosen, qset.questions)
    else:
        from ..images import ImageLimits, lift_images
        from .states import attach_images, load_state, parse_image_options

        value = attach_images(load_state(state), parse_image_options(image))
        wire_questions = questions_to_wire(qset.questions)
        lifted = lift_images(value, canonical_json(wire_questions).decode("utf-8"))
        # What would be sent, or the error that stops it being sent.
        ImageLimits().check_request(lifted.assets)
        request: dict[str, object] = {
            "model": chosen,
            "questions": wire_questions,
            "state": lifted.state,
        }
        if lifted.assets:
            request["assets"] = lifted.wire_assets()
        body = canonical_json(request)
    view: CanonicalView = "sha256" if sha256 else "pretty" if pretty else "raw"
    render(CanonicalResult(body, sha256_hex(body)), view)
