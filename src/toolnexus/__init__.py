"""toolnexus: typed judgments from System One classifiers.

A state plus typed questions in; numbers out: ``noul`` (a probability), ``choice`` (one named
option with a distribution and a confidence), ``score`` (a point on an ordered rubric).
A classifier interprets; it never authorises.
"""

# `typing` is not imported for this flag: `toolnexus --version` must not pay for it.
TYPE_CHECKING = False

# The public names are imported on first use (PEP 562), so `toolnexus --version`,
# `check-criteria` and `canonical` do not pay for modules they never touch. The explicit
# imports below are what a reader and mypy see; `_LAZY` is the same list for the runtime, and
# a test keeps the two equal.
if TYPE_CHECKING:
    from .assets import Asset, LiftedState, StateWithImages, lift_images, with_images
    from .backends import BACKEND_NAMES, BACKENDS, IMAGES_HEADER, Backend
    from .batch import BoundState, BoundStates, StateResult
    from .cache import Cache, CacheStats, MemoryCache, SqliteCache, memory_cache
    from .canonical import (
        canonical_json,
        canonical_request,
        decision_cache_key,
        model_cache_key,
        sha256_hex,
    )
    from .classifier import (
        METRIC_EVALUATE,
        METRIC_WARNING,
        Classifier,
        create_classifier,
        static_classifier,
    )
    from .decision import (
        NEAR_UNIFORM_TOLERANCE,
        Answer,
        ChoiceAnswer,
        ClassifierUsage,
        Decision,
        NoulAnswer,
        RawAnswer,
        ScoreAnswer,
        near_uniform,
        parse_decision,
    )
    from .defaults import (
        DEFAULT_API_KEY_ENV,
        DEFAULT_BASE_URL,
        DEFAULT_BATCH_CONCURRENCY,
        DEFAULT_MODEL,
        DEFAULT_RETRIES,
        DEFAULT_RETRY_BASE_MS,
        DEFAULT_RETRYABLE_STATUSES,
        DEFAULT_TIMEOUT,
    )
    from .errors import (
        AnswerAccessError,
        BackendError,
        BatchError,
        CacheError,
        ClassifierError,
        ClassifierUnsupported,
        ConfigError,
        DecisionError,
        HookError,
        HostBackendError,
        HTTPStatusError,
        ImageError,
        InvalidDecision,
        InvalidState,
        QuestionError,
        StaticMiss,
        TransportError,
        unsupported,
    )
    from .images import (
        IMAGE_MAX_BYTES,
        IMAGE_MAX_SIDE,
        IMAGE_MIN_SIDE,
        REQUEST_IMAGE_MAX_BYTES,
        Image,
        ImageLimits,
        image_format,
        image_size,
    )
    from .options import STYLES, ClassifierOptions, ErrorInfo, RecordedDecision, Verdict
    from .questions import (
        MAX_CHOICE_OPTIONS,
        MAX_SCORE_LEVELS,
        MIN_SCORE_LEVELS,
        ChoiceQuestion,
        NoulCriteria,
        NoulQuestion,
        Question,
        RawQuestion,
        ScoreQuestion,
        choice_over,
        chunk_questions,
        degenerate_criteria,
    )
    from .validation import DEFAULT_THRESHOLDS, threshold_band, validate_decision

__version__ = "0.1.0"

__all__ = [
    "BACKENDS",
    "BACKEND_NAMES",
    "DEFAULT_API_KEY_ENV",
    "DEFAULT_BASE_URL",
    "DEFAULT_BATCH_CONCURRENCY",
    "DEFAULT_MODEL",
    "DEFAULT_RETRIES",
    "DEFAULT_RETRYABLE_STATUSES",
    "DEFAULT_RETRY_BASE_MS",
    "DEFAULT_THRESHOLDS",
    "DEFAULT_TIMEOUT",
    "IMAGES_HEADER",
    "IMAGE_MAX_BYTES",
    "IMAGE_MAX_SIDE",
    "IMAGE_MIN_SIDE",
    "MAX_CHOICE_OPTIONS",
    "MAX_SCORE_LEVELS",
    "METRIC_EVALUATE",
    "METRIC_WARNING",
    "MIN_SCORE_LEVELS",
    "NEAR_UNIFORM_TOLERANCE",
    "REQUEST_IMAGE_MAX_BYTES",
    "STYLES",
    "Answer",
    "AnswerAccessError",
    "Asset",
    "Backend",
    "BackendError",
    "BatchError",
    "BoundState",
    "BoundStates",
    "Cache",
    "CacheError",
    "CacheStats",
    "ChoiceAnswer",
    "ChoiceQuestion",
    "Classifier",
    "ClassifierError",
    "ClassifierOptions",
    "ClassifierUnsupported",
    "ClassifierUsage",
    "ConfigError",
    "Decision",
    "DecisionError",
    "ErrorInfo",
    "HTTPStatusError",
    "HookError",
    "HostBackendError",
    "Image",
    "ImageError",
    "ImageLimits",
    "InvalidDecision",
    "InvalidState",
    "LiftedState",
    "MemoryCache",
    "NoulAnswer",
    "NoulCriteria",
    "NoulQuestion",
    "Question",
    "QuestionError",
    "RawAnswer",
    "RawQuestion",
    "RecordedDecision",
    "ScoreAnswer",
    "ScoreQuestion",
    "SqliteCache",
    "StateResult",
    "StateWithImages",
    "StaticMiss",
    "TransportError",
    "Verdict",
    "__version__",
    "canonical_json",
    "canonical_request",
    "choice_over",
    "chunk_questions",
    "create_classifier",
    "decision_cache_key",
    "degenerate_criteria",
    "image_format",
    "image_size",
    "lift_images",
    "memory_cache",
    "model_cache_key",
    "near_uniform",
    "parse_decision",
    "sha256_hex",
    "static_classifier",
    "threshold_band",
    "unsupported",
    "validate_decision",
    "with_images",
]

#: Submodule -> the public names it provides (the TYPE_CHECKING imports above, for runtime).
_LAZY: dict[str, tuple[str, ...]] = {
    "assets": (
        "Asset",
        "LiftedState",
        "StateWithImages",
        "lift_images",
        "with_images",
    ),
    "backends": (
        "BACKEND_NAMES",
        "BACKENDS",
        "IMAGES_HEADER",
        "Backend",
    ),
    "batch": (
        "BoundState",
        "BoundStates",
        "StateResult",
    ),
    "cache": (
        "Cache",
        "CacheStats",
        "MemoryCache",
        "SqliteCache",
        "memory_cache",
    ),
    "canonical": (
        "canonical_json",
        "canonical_request",
        "decision_cache_key",
        "model_cache_key",
        "sha256_hex",
    ),
    "classifier": (
        "METRIC_EVALUATE",
        "METRIC_WARNING",
        "Classifier",
        "create_classifier",
        "static_classifier",
    ),
    "decision": (
        "NEAR_UNIFORM_TOLERANCE",
        "Answer",
        "ChoiceAnswer",
        "ClassifierUsage",
        "Decision",
        "NoulAnswer",
        "RawAnswer",
        "ScoreAnswer",
        "near_uniform",
        "parse_decision",
    ),
    "defaults": (
        "DEFAULT_API_KEY_ENV",
        "DEFAULT_BASE_URL",
        "DEFAULT_BATCH_CONCURRENCY",
        "DEFAULT_MODEL",
        "DEFAULT_RETRIES",
        "DEFAULT_RETRY_BASE_MS",
        "DEFAULT_RETRYABLE_STATUSES",
        "DEFAULT_TIMEOUT",
    ),
    "errors": (
        "AnswerAccessError",
        "BackendError",
        "BatchError",
        "CacheError",
        "ClassifierError",
        "ClassifierUnsupported",
        "ConfigError",
        "DecisionError",
        "HookError",
        "HostBackendError",
        "HTTPStatusError",
        "ImageError",
        "InvalidDecision",
        "InvalidState",
        "QuestionError",
        "StaticMiss",
        "TransportError",
        "unsupported",
    ),
    "images": (
        "IMAGE_MAX_BYTES",
        "IMAGE_MAX_SIDE",
        "IMAGE_MIN_SIDE",
        "REQUEST_IMAGE_MAX_BYTES",
        "Image",
        "ImageLimits",
        "image_format",
        "image_size",
    ),
    "options": (
        "STYLES",
        "ClassifierOptions",
        "ErrorInfo",
        "RecordedDecision",
        "Verdict",
    ),
    "questions": (
        "MAX_CHOICE_OPTIONS",
        "MAX_SCORE_LEVELS",
        "MIN_SCORE_LEVELS",
        "ChoiceQuestion",
        "NoulCriteria",
        "NoulQuestion",
        "Question",
        "RawQuestion",
        "ScoreQuestion",
        "choice_over",
        "chunk_questions",
        "degenerate_criteria",
    ),
    "validation": (
        "DEFAULT_THRESHOLDS",
        "threshold_band",
        "validate_decision",
    ),
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names}

if not TYPE_CHECKING:  # mypy resolves the names through the imports above

    def __getattr__(name: str) -> object:
        module = _WHERE.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from importlib import import_module

        value = getattr(import_module(f".{module}", __name__), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
