"""The curated namespace (conventions habit 1): explicit imports, a sorted and complete
__all__, and the seed names present."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import toolnexus

#: Names the seeds require in the Python spelling (seeds 000, 001, 003, 004).
SEED_NAMES = {
    "NoulCriteria",
    "NoulQuestion",
    "ChoiceQuestion",
    "ScoreQuestion",
    "RawQuestion",
    "choice_over",
    "canonical_request",
    "canonical_json",
    "RecordedDecision",
    "create_classifier",
    "static_classifier",
    "memory_cache",
    "BACKEND_NAMES",
    "BACKENDS",
    "IMAGES_HEADER",
    "SqliteCache",
    "ClassifierError",
    "ClassifierUnsupported",
    "unsupported",
    "ChoiceAnswer",
    "NoulAnswer",
    "ScoreAnswer",
    "RawAnswer",
    "ClassifierUsage",
    "Decision",
    "parse_decision",
    "near_uniform",
    "NEAR_UNIFORM_TOLERANCE",
    "MAX_CHOICE_OPTIONS",
    "MIN_SCORE_LEVELS",
    "MAX_SCORE_LEVELS",
    "degenerate_criteria",
    "chunk_questions",
    "decision_cache_key",
    "model_cache_key",
    "sha256_hex",
    "validate_decision",
    "threshold_band",
    "DEFAULT_THRESHOLDS",
    "DEFAULT_BASE_URL",
    "DEFAULT_MODEL",
    "DEFAULT_API_KEY_ENV",
    "DEFAULT_BATCH_CONCURRENCY",
    "STYLES",
    "IMAGE_MAX_BYTES",
    "REQUEST_IMAGE_MAX_BYTES",
    "IMAGE_MIN_SIDE",
    "IMAGE_MAX_SIDE",
    "image_size",
}


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: SCREAMING_CASE constants, then CamelCase classes, then the rest.
    if name.isupper():
        return (0, name)
    if name[0].isupper():
        return (1, name)
    return (2, name)


def test_all_is_sorted() -> None:
    assert toolnexus.__all__ == sorted(toolnexus.__all__, key=_isort_key)


def test_all_is_complete_and_importable() -> None:
    # Public names are imported on first use (PEP 562): dir() lists them before that.
    public = {
        name
        for name in dir(toolnexus)
        if not name.startswith("_")
        and name != "TYPE_CHECKING"
        and not inspect.ismodule(getattr(toolnexus, name))
    }
    assert public | {"__version__"} == set(toolnexus.__all__)
    for name in toolnexus.__all__:
        assert hasattr(toolnexus, name), name


INIT = Path(toolnexus.__file__)
_BEGIN = "# --- generated from _LAZY by tests/core/test_public_api.py; do not edit by hand ---"
_END = "# --- end of generated imports ---"


def typed_imports(lazy: dict[str, tuple[str, ...]]) -> str:
    """The TYPE_CHECKING block that ``_LAZY`` implies: one explicit re-export per name."""
    lines = ["if TYPE_CHECKING:"]
    for module, names in lazy.items():
        lines += [f"    from .{module} import {name} as {name}" for name in names]
    return "\n".join(lines) + "\n"


def _generated(text: str) -> tuple[int, int]:
    """Where the generated block starts and ends in ``__init__.py``'s text."""
    start = text.index("\n", text.index(_BEGIN)) + 1
    return start, text.index(_END, start)


def test_lazy_table_is_the_one_list() -> None:
    """Issue 16: 'the lazy-import table is generated from one list, not written three times'.
    ``_LAZY`` is that list: ``__all__`` is derived from it at import, and the typed imports
    are generated from it (``python tests/core/test_public_api.py`` rewrites them)."""
    text = INIT.read_text(encoding="utf-8")
    start, end = _generated(text)
    assert text[start:end] == typed_imports(toolnexus._LAZY), (
        "run `python tests/core/test_public_api.py` to regenerate the typed imports"
    )
    tree = ast.parse(text)
    typed = {
        (node.module, alias.name)
        for guard in tree.body
        if isinstance(guard, ast.If) and ast.unparse(guard.test) == "TYPE_CHECKING"
        for node in guard.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    lazy = {(module, name) for module, names in toolnexus._LAZY.items() for name in names}
    assert typed == lazy
    assert {name for _, name in lazy} | {"__version__"} == set(toolnexus.__all__)
    assert list(toolnexus._LAZY) == sorted(toolnexus._LAZY)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        toolnexus.nope  # noqa: B018


def test_seed_names_are_exported() -> None:
    assert set(toolnexus.__all__) >= SEED_NAMES, sorted(SEED_NAMES - set(toolnexus.__all__))


def test_every_raised_type_is_a_classifier_error() -> None:
    from toolnexus.core import errors

    for name in errors.__all__:
        obj = getattr(errors, name)
        if inspect.isclass(obj):
            assert issubclass(obj, toolnexus.ClassifierError), name


if __name__ == "__main__":
    # Rewrite the generated typed imports of src/toolnexus/__init__.py from its _LAZY table.
    source = INIT.read_text(encoding="utf-8")
    begin, finish = _generated(source)
    INIT.write_text(source[:begin] + typed_imports(toolnexus._LAZY) + source[finish:], "utf-8")
