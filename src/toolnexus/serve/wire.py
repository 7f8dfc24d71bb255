"""Reading a System One request off the wire, and rejecting it as the API does.

A body arrives as JSON or as ``multipart/form-data`` (the official SDK's image form: a
``request`` part holding the JSON, then ``asset-N`` parts holding image bytes), optionally with
``Content-Encoding: zstd``. :func:`read_request` turns it into a :class:`WireRequest` or raises
:class:`Reject`, which carries the status and body the API answers:

- 413 ``{"detail": ...}`` naming the size cap, for a body (or its decompressed form) over it;
- 415 for a content encoding this server cannot decode (zstd without a codec installed);
- 422 ``{"detail": [{"type", "loc", "msg", "input"}, ...]}`` for field validation: a body that
  is not a JSON object, a missing field, a state that is a number/boolean/null, no questions,
  a question of unknown type, criteria of the wrong shape;
- 400 ``{"detail": "..."}`` for the API's own rules: an empty question key, 256 choices, 11 score
  levels, an unknown model (``{"detail": {"error_type": "api_usage_error", "message"}}``), a box
  question off Jev 1.14, and assets that are empty, unsent, not PNG/JPEG, over the image limits,
  or never mentioned by the state or the questions.

Images are checked against the seed's byte limits (16 MiB per image, 32 MiB per request) and
must have a readable PNG/JPEG header (``images.image_size``). The side limits of ``images.py``
are this library's proposals, not the API's published rules, so serve does not enforce them:
it answers what the API would, as far as anyone has published.

Pure apart from the optional zstd codec: no HTTP library here.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import importlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..canonical import canonical_json
from ..images import IMAGE_MAX_BYTES, REQUEST_IMAGE_MAX_BYTES, image_format, image_size
from ..questions import MAX_CHOICE_OPTIONS, MAX_SCORE_LEVELS

__all__ = [
    "KNOWN_TYPES",
    "ImageAsset",
    "Reject",
    "WireRequest",
    "known_model",
    "read_request",
    "zstd_decompressor",
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

    def __init__(self, status: int, body: Any, outcome: str = "invalid") -> None:
        super().__init__(f"{status} {body}")
        self.status = status
        self.body = body
        self.outcome = outcome


def _detail(status: int, message: str, outcome: str = "invalid") -> Reject:
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


@dataclass(frozen=True)
class WireRequest:
    """A request the API would accept. ``body`` is the parsed JSON object (``assets`` included);
    ``images`` the attached images in body order."""

    model: str
    state: Any
    questions: Mapping[str, Any]
    body: Mapping[str, Any]
    images: tuple[ImageAsset, ...] = field(default=())

    def state_key(self) -> bytes:
        """The canonical state with every placeholder replaced by ``<sha256:HEX>``: what
        replay and the synthetic model key on (placeholders are random per SDK run)."""
        text = canonical_json(self.state)
        return _swap_placeholders(text, self.images)

    def questions_key(self) -> bytes:
        """The canonical questions, placeholders swapped for image hashes as in ``state_key``."""
        return _swap_placeholders(canonical_json(self.questions), self.images)


def _swap_placeholders(text: bytes, images: tuple[ImageAsset, ...]) -> bytes:
    for image in images:
        text = text.replace(image.placeholder.encode("utf-8"), f"<sha256:{image.sha256}>".encode())
    return text


# --- decoding ---------------------------------------------------------------------------------


def zstd_decompressor() -> Callable[[bytes, int], bytes] | None:
    """``decompress(data, limit)`` from the stdlib ``compression.zstd`` (Python 3.14+) or its
    backport ``backports.zstd`` (the same API, and the codec the official SDK compresses with),
    or ``None`` when neither is importable. Raises :class:`Reject` (413) past ``limit`` bytes."""
    module: Any = None
    for name in ("compression.zstd", "backports.zstd"):
        try:
            module = importlib.import_module(name)
            break
        except ImportError:
            continue
    if module is None:
        return None

    def decompress(data: bytes, limit: int) -> bytes:
        decompressor = module.ZstdDecompressor()
        try:
            out: bytes = decompressor.decompress(data, max_length=limit + 1)
        except module.ZstdError as e:
            raise _detail(400, f"The request body is not valid zstd: {e}.") from None
        if len(out) > limit:
            raise _detail(
                413,
                f"The request body decompresses to more than {limit:,} bytes, this server's "
                "limit (--max-body-bytes).",
                "too_large",
            )
        if not decompressor.eof:
            raise _detail(400, "The request body is truncated zstd.")
        return out

    return decompress


def _boundary(content_type: str) -> bytes:
    m = re.search(r'boundary="?([^";]+)"?', content_type)
    if m is None:
        raise _detail(400, "A multipart/form-data body needs a boundary parameter.")
    return m.group(1).encode("latin-1")


def _parts(body: bytes, boundary: bytes) -> dict[str, bytes]:
    """The parts of a multipart/form-data body by their ``name``, in order."""
    delimiter = b"--" + boundary
    chunks = body.split(delimiter)
    if len(chunks) < 3 or not chunks[-1].startswith(b"--"):
        raise _detail(400, "The multipart/form-data body is malformed (no closing boundary).")
    parts: dict[str, bytes] = {}
    for chunk in chunks[1:-1]:
        chunk = chunk.removeprefix(b"\r\n").removesuffix(b"\r\n")
        head, sep, content = chunk.partition(b"\r\n\r\n")
        if not sep:
            raise _detail(400, "A multipart part has no header/body separator.")
        m = re.search(rb'(?im)^content-disposition:.*?\bname="([^"]*)"', head)
        if m is None:
            raise _detail(400, "A multipart part has no Content-Disposition name.")
        name = m.group(1).decode("utf-8", "replace")
        if name in parts:
            raise _detail(400, f"The multipart part {name!r} appears twice.")
        parts[name] = content
    return parts


def _error(kind: str, loc: list[Any], msg: str, value: Any) -> dict[str, Any]:
    return {"type": kind, "loc": ["body", *loc], "msg": msg, "input": value}


_CONTENT = (str, dict, list)


def _check_content(value: Any, loc: list[Any], errors: list[dict[str, Any]]) -> None:
    if value is not None and not isinstance(value, _CONTENT):
        errors.append(_error("string_type", loc, "Input should be a valid string", value))


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
    criteria = q.get("criteria")
    if qtype == "choice":
        if "criteria" not in q:
            errors.append(_error("missing", [*loc, "criteria"], "Field required", q))
        elif not isinstance(criteria, dict):
            errors.append(
                _error(
                    "dict_type", [*loc, "criteria"], "Input should be a valid dictionary", criteria
                )
            )
    elif qtype == "score":
        if "criteria" not in q:
            errors.append(_error("missing", [*loc, "criteria"], "Field required", q))
        elif not isinstance(criteria, list):
            errors.append(
                _error("list_type", [*loc, "criteria"], "Input should be a valid list", criteria)
            )
        elif not criteria:
            errors.append(
                _error(
                    "too_short",
                    [*loc, "criteria"],
                    "List should have at least 1 item after validation, not 0",
                    criteria,
                )
            )
    elif qtype == "noul" and criteria is not None and not isinstance(criteria, dict):
        errors.append(
            _error(
                "model_type",
                [*loc, "criteria"],
                "Input should be a valid dictionary or instance of NoulCriteria",
                criteria,
            )
        )


def _fields(body: Any, allow_unknown: bool) -> None:
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
    if "questions" in body:
        if not isinstance(questions, dict):
            errors.append(
                _error("dict_type", ["questions"], "Input should be a valid dictionary", questions)
            )
        elif not questions:
            errors.append(
                _error(
                    "too_short",
                    ["questions"],
                    "Dictionary should have at least 1 item after validation, not 0",
                    questions,
                )
            )
        else:
            for key, q in questions.items():
                _check_question(key, q, errors, allow_unknown)
    assets = body.get("assets")
    if assets is not None:
        if not isinstance(assets, dict):
            errors.append(
                _error("dict_type", ["assets"], "Input should be a valid dictionary", assets)
            )
        elif not assets:
            errors.append(
                _error(
                    "too_short",
                    ["assets"],
                    "Dictionary should have at least 1 item after validation, not 0",
                    assets,
                )
            )
    if errors:
        raise Reject(422, {"detail": errors})


def _rules(body: Mapping[str, Any]) -> None:
    """The API's own 400s, after the fields are well formed."""
    model: str = body["model"]
    if not known_model(model):
        raise Reject(
            400, {"detail": {"error_type": "api_usage_error", "message": f"Unknown model: {model}"}}
        )
    questions: Mapping[str, Any] = body["questions"]
    for key, q in questions.items():
        if key == "":
            raise _detail(400, "Question key cannot be empty.")
        qtype = q.get("type")
        if qtype == "choice":
            n = len(q["criteria"])
            if n == 0:
                raise _detail(400, "A choice question needs at least 1 choice.")
            if n > MAX_CHOICE_OPTIONS:
                raise _detail(
                    400, f"Too many choices. Must have at most {MAX_CHOICE_OPTIONS} choices."
                )
        elif qtype == "score" and len(q["criteria"]) > MAX_SCORE_LEVELS:
            raise _detail(
                400, f"Too many score levels. Must have at most {MAX_SCORE_LEVELS} levels."
            )
        elif (
            qtype == "noul"
            and q.get("instructions") is None
            and not any(
                (q.get("criteria") or {}).get(side) is not None for side in ("true", "false")
            )
        ):
            raise _detail(400, "A noul question needs instructions or criteria.")
        elif qtype == "box":
            if not _is_jev_114(model):
                raise _detail(400, f"Question type 'box' is not supported by model {model}.")
            if not body.get("assets"):
                raise _detail(400, "A box question needs an image asset.")


def _images(body: Mapping[str, Any], parts: Mapping[str, bytes] | None) -> tuple[ImageAsset, ...]:
    assets = body.get("assets")
    if not assets:
        if parts:
            raise _detail(400, f"The multipart part {next(iter(parts))!r} is claimed by no asset.")
        return ()
    mentioned = canonical_json(body["state"]) + canonical_json(body["questions"])
    out: list[ImageAsset] = []
    claimed: set[str] = set()
    total = 0
    for placeholder, spec in assets.items():
        if not isinstance(spec, dict) or spec.get("type", "image") != "image":
            raise _detail(400, f'Asset {placeholder!r} must be {{"type": "image", ...}}.')
        part = spec.get("part")
        if isinstance(part, str):
            if parts is None or part not in parts:
                raise _detail(
                    400, f"Asset {placeholder!r} names part {part!r}, which was not sent."
                )
            if part in claimed:
                raise _detail(400, f"The part {part!r} is claimed by two assets.")
            claimed.add(part)
            data = parts[part]
        elif isinstance(spec.get("data_base64"), str):
            try:
                data = base64.b64decode(spec["data_base64"], validate=True)
            except (binascii.Error, ValueError):
                raise _detail(400, f"Asset {placeholder!r}: data_base64 is not base64.") from None
        else:
            raise _detail(400, f"Asset {placeholder!r} needs a 'part' or 'data_base64'.")
        if not data:
            raise _detail(400, f"Asset {placeholder!r} is empty.")
        fmt = image_format(data)
        if fmt is None:
            raise _detail(
                400,
                f"Asset {placeholder!r} is not a PNG or JPEG image (it starts "
                f"{data[:4].hex(' ')}).",
            )
        if len(data) > IMAGE_MAX_BYTES:
            raise _detail(
                413,
                f"Asset {placeholder!r} is {len(data):,} bytes, over the limit of "
                f"{IMAGE_MAX_BYTES:,} bytes per image.",
                "too_large",
            )
        total += len(data)
        if total > REQUEST_IMAGE_MAX_BYTES:
            raise _detail(
                413,
                f"The images of this request add up to {total:,} bytes, over the limit of "
                f"{REQUEST_IMAGE_MAX_BYTES:,} bytes per request.",
                "too_large",
            )
        if image_size(fmt, data) is None:
            raise _detail(400, f"Asset {placeholder!r} is not a readable {fmt.upper()} image.")
        if placeholder.encode("utf-8") not in mentioned:
            raise _detail(
                400,
                f"Asset {placeholder!r} is not mentioned in the state or the questions.",
            )
        digest = hashlib.sha256(data).hexdigest()
        out.append(ImageAsset(placeholder, digest, fmt, len(data), part))
    if parts is not None:
        for name in parts:
            if name != "request" and name not in claimed:
                raise _detail(400, f"The multipart part {name!r} is claimed by no asset.")
    return tuple(out)


def read_request(
    raw: bytes,
    *,
    content_type: str,
    content_encoding: str,
    max_body_bytes: int,
    allow_unknown_types: bool = False,
) -> WireRequest:
    """Decode, parse and validate one ``POST /systemone`` body, or raise :class:`Reject`."""
    encoding = content_encoding.strip().lower()
    if encoding in ("zstd",):
        decompress = zstd_decompressor()
        if decompress is None:
            raise _detail(
                415,
                "Content-Encoding: zstd is not supported by this server (install backports.zstd, "
                "or run on Python 3.14+).",
                "unsupported_encoding",
            )
        raw = decompress(raw, max_body_bytes)
    elif encoding not in ("", "identity"):
        raise _detail(415, f"Unsupported Content-Encoding: {encoding}.", "unsupported_encoding")
    parts: dict[str, bytes] | None = None
    mime = content_type.split(";", 1)[0].strip().lower()
    if mime == "multipart/form-data":
        parts = _parts(raw, _boundary(content_type))
        if "request" not in parts:
            raise _detail(400, "A multipart/form-data body needs a 'request' part (the JSON).")
        raw = parts.pop("request")
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise Reject(
            422,
            {
                "detail": [
                    {
                        "type": "json_invalid",
                        "loc": ["body", getattr(e, "pos", 0)],
                        "msg": "JSON decode error",
                        "input": {},
                        "ctx": {"error": str(e).split(":")[0]},
                    }
                ]
            },
        ) from None
    _fields(body, allow_unknown_types)
    _rules(body)
    images = _images(body, parts)
    return WireRequest(
        model=body["model"],
        state=body["state"],
        questions=body["questions"],
        body=body,
        images=images,
    )
