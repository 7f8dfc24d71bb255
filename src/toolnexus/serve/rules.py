"""The API's rules for a System One request, as ``toolnexus serve`` enforces them.

:class:`Reject` carries the status and body the API answers a request it refuses:

- 422 ``{"detail": [{"type", "loc", "msg", "input"}, ...]}`` for field validation (every error
  at once, as FastAPI reports them): a body that is not a JSON object, a missing field, a state
  that is a number/boolean/null, no questions, a question of unknown type, criteria of the
  wrong shape, an empty ``assets``;
- 400 ``{"detail": "..."}`` for the API's own rules: an empty question key, 256 choices, 11 score
  levels, an unknown model (``{"detail": {"error_type": "api_usage_error", "message"}}``), a box
  question off Jev 1.14, and assets that are unsent, not PNG/JPEG, or never mentioned by the
  state or the questions; 413 for images over the seed's byte limits.

Images are checked against the seed's byte limits (16 MiB per image, 32 MiB per request) and
must have a readable PNG/JPEG header (``images.image_size``). The side limits of ``images.py``
are this library's proposals, not the API's published rules, so serve does not enforce them:
it answers what the API would, as far as anyone has published. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from ..core import (
    IMAGE_MAX_BYTES,
    REQUEST_IMAGE_MAX_BYTES,
    canonical_json,
    image_format,
    image_size,
    registry,
)

__all__ = [
    "KNOWN_TYPES",
    "ImageAsset",
    "Reject",
    "check_fields",
    "check_rules",
    "known_model",
    "read_images",
    "reject",
]

KNOWN_TYPES = ("noul", "choice", "score", "box")
_MODEL = re.compile(r"(typesafe/)?jev-\d+\.\d+(\.\d+)?(-\d{8})?")
_ALIASES = ("jev-latest", "jev-preview")


def known_model(model: str) -> bool:
    """The aliases, and pinned ids such as ``jev-1.13.0`` (accepted even when unlisted)."""
    return model in _ALIASES or _MODEL.fullmatch(model) is not None


def _is_jev_114(model: str) -> bool:
    return model == "jev-preview" or "jev-1.14" in model


class Reject(Exception):
    """The answer the API gives a request it refuses: ``status`` and a JSON ``body``."""

    def __init__(
        self,
        status: int,
        body: Any,
        outcome: str = "invalid",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(f"{status} {body}")
        self.status = status
        self.body = body
        self.outcome = outcome
        #: extra response headers (a 429's Retry-After and retry-after-ms)
        self.headers = dict(headers or {})


def reject(status: int, message: str, outcome: str = "invalid") -> Reject:
    """A :class:`Reject` with the API's plain ``{"detail": message}`` body."""
    return Reject(status, {"detail": message}, outcome)


@dataclass(frozen=True)
class ImageAsset:
    """One image of a request: the placeholder the body names it by, its bytes' sha256, its
    format (``png`` / ``jpeg``), its size in bytes, and its part name when multipart."""

    placeholder: str
    sha256: str
    format: str
    nbytes: int
    part: str | None = None


def _error(kind: str, loc: list[Any], msg: str, value: Any) -> dict[str, Any]:
    return {"type": kind, "loc": ["body", *loc], "msg": msg, "input": value}


_CONTENT = (str, dict, list)


_NOT_TEXT = "Input should be a valid string"


def _check_content(value: Any, loc: list[Any], errors: list[dict[str, Any]]) -> None:
    """Text on the wire: a string, object or array, or null."""
    if value is not None and not isinstance(value, _CONTENT):
        errors.append(_error("string_type", loc, _NOT_TEXT, value))


class _Sink:
    """A type's ``api_fields`` findings as the API's 422 error objects (``registry.ApiSink``)."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self.errors = errors

    def error(self, kind: str, loc: list[Any], message: str, value: Any) -> None:
        self.errors.append(_error(kind, loc, message, value))

    def text(self, value: Any, loc: list[Any], *, nullable: bool = True) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, _CONTENT):
            self.errors.append(_error("string_type", loc, _NOT_TEXT, value))


def _check_question(key: str, q: Any, errors: list[dict[str, Any]], allow_unknown: bool) -> None:
    loc: list[Any] = ["questions", key]
    if not isinstance(q, dict):
        errors.append(_error("model_attributes_type", loc, "Input should be an object", q))
        return
    qtype = q.get("type")
    if qtype not in KNOWN_TYPES:
        if allow_unknown and isinstance(qtype, str) and qtype:
            return
        tags = ", ".join(f"'{t}'" for t in KNOWN_TYPES)
        if qtype is None:
            errors.append(
                _error(
                    "union_tag_not_found",
                    loc,
                    "Unable to extract tag using discriminator 'type'",
                    q,
                )
            )
        else:
            errors.append(
                _error(
                    "union_tag_invalid",
                    loc,
                    f"Input tag '{qtype}' found using 'type' does not match any of the expected "
                    f"tags: {tags}",
                    q,
                )
            )
        return
    loc = [*loc, qtype]
    _check_content(q.get("instructions"), [*loc, "instructions"], errors)
    found = registry.find(qtype)  # the type's own fields: its api_fields hook (qtypes/)
    if found is not None:
        found.api_fields(q, loc, _Sink(errors))


def check_fields(body: Any, allow_unknown: bool) -> None:
    """FastAPI-style field validation: every error at once, 422."""
    if not isinstance(body, dict):
        raise Reject(
            422,
            {
                "detail": [
                    _error(
                        "model_attributes_type",
                        [],
                        "Input should be a valid dictionary or object to extract fields from",
                        body,
                    )
                ]
            },
        )
    errors: list[dict[str, Any]] = []
    for name in ("model", "state", "questions"):
        if name not in body:
            errors.append(_error("missing", [name], "Field required", body))
    model = body.get("model")
    if "model" in body and not isinstance(model, str):
        errors.append(_error("string_type", ["model"], "Input should be a valid string", model))
    state = body.get("state")
    if "state" in body and not isinstance(state, _CONTENT):
        errors.extend(
            [
                _error("string_type", ["state", "str"], "Input should be a valid string", state),
                _error(
                    "dict_type",
                    ["state", "dict[str,any]"],
                    "Input should be a valid dictionary",
                    state,
                ),
                _error("list_type", ["state", "list[any]"], "Input should be a valid list", state),
            ]
        )
    questions = body.get("questions")
    if "questions" in body and _non_empty_object(questions, "questions", errors):
        for key, q in questions.items():
            _check_question(key, q, errors, allow_unknown)
    assets = body.get("assets")
    if assets is not None:
        _non_empty_object(assets, "assets", errors)
    if errors:
        raise Reject(422, {"detail": errors})


def _non_empty_object(
    value: Any, name: str, errors: list[dict[str, Any]]
) -> TypeGuard[dict[str, Any]]:
    """True for a dict with an item; else the API's 422 entry for ``name`` is added."""
    if not isinstance(value, dict):
        errors.append(_error("dict_type", [name], "Input should be a valid dictionary", value))
    elif not value:
        errors.append(
            _error(
                "too_short",
                [name],
                "Dictionary should have at least 1 item after validation, not 0",
                value,
            )
        )
    else:
        return True
    return False


def check_rules(body: Mapping[str, Any]) -> None:
    """The API's own 400s, after the fields are well formed."""
    model: str = body["model"]
    if not known_model(model):
        raise Reject(
            400, {"detail": {"error_type": "api_usage_error", "message": f"Unknown model: {model}"}}
        )
    questions: Mapping[str, Any] = body["questions"]
    for key, q in questions.items():
        if key == "":
            raise reject(400, "Question key cannot be empty.")
        qtype = q.get("type")
        found = registry.find(qtype)  # a built-in type's own 400: its api_rule hook (qtypes/)
        message = found.api_rule(q) if found is not None else None
        if message is not None:
            raise reject(400, message)
        if qtype == "box":
            if not _is_jev_114(model):
                raise reject(400, f"Question type 'box' is not supported by model {model}.")
            if not body.get("assets"):
                raise reject(400, "A box question needs an image asset.")


def read_images(
    body: Mapping[str, Any], parts: Mapping[str, bytes] | None
) -> tuple[ImageAsset, ...]:
    assets = body.get("assets")
    if not assets:
        if parts:
            raise reject(400, f"The multipart part {next(iter(parts))!r} is claimed by no asset.")
        return ()
    mentioned = canonical_json(body["state"]) + canonical_json(body["questions"])
    out: list[ImageAsset] = []
    claimed: set[str] = set()
    total = 0
    for placeholder, spec in assets.items():
        if not isinstance(spec, dict) or spec.get("type", "image") != "image":
            raise reject(400, f'Asset {placeholder!r} must be {{"type": "image", ...}}.')
        part = spec.get("part")
        if isinstance(part, str):
            if parts is None or part not in parts:
                raise reject(400, f"Asset {placeholder!r} names part {part!r}, which was not sent.")
            if part in claimed:
                raise reject(400, f"The part {part!r} is claimed by two assets.")
            claimed.add(part)
            data = parts[part]
        elif isinstance(spec.get("data_base64"), str):
            try:
                data = base64.b64decode(spec["data_base64"], validate=True)
            except (binascii.Error, ValueError):
                raise reject(400, f"Asset {placeholder!r}: data_base64 is not base64.") from None
        else:
            raise reject(400, f"Asset {placeholder!r} needs a 'part' or 'data_base64'.")
        if not data:
            raise reject(400, f"Asset {placeholder!r} is empty.")
        fmt = image_format(data)
        if fmt is None:
            raise reject(
                400,
                f"Asset {placeholder!r} is not a PNG or JPEG image (it starts "
                f"{data[:4].hex(' ')}).",
            )
        if len(data) > IMAGE_MAX_BYTES:
            raise reject(
                413,
                f"Asset {placeholder!r} is {len(data):,} bytes, over the limit of "
                f"{IMAGE_MAX_BYTES:,} bytes per image.",
                "too_large",
            )
        total += len(data)
        if total > REQUEST_IMAGE_MAX_BYTES:
            raise reject(
                413,
                f"The images of this request add up to {total:,} bytes, over the limit of "
                f"{REQUEST_IMAGE_MAX_BYTES:,} bytes per request.",
                "too_large",
            )
        if image_size(fmt, data) is None:
            raise reject(400, f"Asset {placeholder!r} is not a readable {fmt.upper()} image.")
        if placeholder.encode("utf-8") not in mentioned:
            raise reject(
                400,
                f"Asset {placeholder!r} is not mentioned in the state or the questions.",
            )
        digest = hashlib.sha256(data).hexdigest()
        out.append(ImageAsset(placeholder, digest, fmt, len(data), part))
    if parts is not None:
        for name in parts:
            if name != "request" and name not in claimed:
                raise reject(400, f"The multipart part {name!r} is claimed by no asset.")
    return tuple(out)
