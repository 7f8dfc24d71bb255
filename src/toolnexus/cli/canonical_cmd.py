"""``toolnexus canonical``: the exact bytes the byte-identity claim covers, and nothing else.

No trailing newline, so ``sha256sum`` of the output is the fixture's ``canonicalSha256`` and
``diff <(toolnexus canonical a.yaml) <(toolnexus canonical b.yaml)`` compares what would be
sent. ``--sha256`` prints the request digest, ``--questions-sha256`` the question-set digest
(``toolnexus.core.canonical`` defines both). Offline by construction: it imports the pure core only,
never httpx.

With images (``--state photo.png``, or ``--image NAME=PATH`` for a state that says ``<NAME>``)
it prints the JSON part of the image request, the ``request`` part of its multipart body: the
body with the state as sent (placeholders in place of images) plus its ``assets`` map.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..core import DEFAULT_MODEL, MODEL_ENV


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
            help=f"Model to name in the bytes. Default: {MODEL_ENV}, else the file's model, "
            f"else {DEFAULT_MODEL}.",
            show_default=False,
        ),
    ] = None,
    sha256: Annotated[
        bool,
        typer.Option(
            "--sha256",
            help="Print the request digest instead: the sha256 hex digest of the bytes.",
        ),
    ] = False,
    questions_sha256: Annotated[
        bool,
        typer.Option(
            "--questions-sha256",
            help="Print the question-set digest instead: the sha256 of the canonical questions "
            "object alone, what batch records carry as questions_sha256.",
        ),
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
    pack_states: Annotated[
        str | None,
        typer.Option(
            "--pack-states",
            help="A JSONL file of states, one per line (- for stdin): print the packed request "
            "that asks them all in one (issue 20; a file of one state prints its own request).",
            metavar="FILE",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Print the canonical bytes of model + questions: keys sorted, arrays kept, compact.

    Nothing is added, not even a newline. Exit 2 on an input error (one line, path:line:col).
    """
    from .offline import canonical as run

    run(
        questions,
        model=model,
        sha256=sha256,
        questions_sha256=questions_sha256,
        pretty=pretty,
        state=state,
        image=image or (),
        pack_states=pack_states,
    )
