"""The curated namespace (conventions habit 1): explicit imports, a sorted and complete
__all__, and the seed names present."""

from __future__ import annotations

import inspect

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
    public = {
        name
        for name, value in vars(toolnexus).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public | {"__version__"} == set(toolnexus.__all__)
    for name in toolnexus.__all__:
        assert hasattr(toolnexus, name), name


def test_seed_names_are_exported() -> None:
    assert set(toolnexus.__all__) >= SEED_NAMES, sorted(SEED_NAMES - set(toolnexus.__all__))


def test_every_raised_type_is_a_classifier_error() -> None:
    from toolnexus import errors

    for name in errors.__all__:
        obj = getattr(errors, name)
        if inspect.isclass(obj):
            assert issubclass(obj, toolnexus.ClassifierError), name
