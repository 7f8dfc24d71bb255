"""toolnexus: typed judgments from System One classifiers.

A state plus typed questions in; numbers out: ``noul`` (a probability), ``choice`` (one named
option with a distribution and a confidence), ``score`` (a point on an ordered rubric).
A classifier interprets; it never authorises.
"""

# `typing` is not imported for this flag: `toolnexus --version` must not pay for it.
TYPE_CHECKING = False

__version__ = "0.1.0"

# THE list of public names: submodule -> the names it provides. The public names are imported
# on first use (PEP 562), so `toolnexus --version`, `check-criteria` and `canonical` do not pay
# for modules they never touch. `__all__` and the lookup are derived from this table here; the
# typed imports below it (what mypy and an editor see) are GENERATED from it: after editing the
# table, run `python tests/core/test_public_api.py` to rewrite them (a test fails until they agree).
_LAZY: dict[str, tuple[str, ...]] = {
    "cache": (
        "Cache",
        "CacheStats",
        "MemoryCache",
        "SqliteCache",
        "memory_cache",
    ),
    "classifier": (
        "Classifier",
        "create_classifier",
        "static_classifier",
    ),
    "config": (
        "BACKEND_NAMES",
        "BACKENDS",
        "IMAGES_HEADER",
        "Backend",
        "BatchOptions",
        "ErrorInfo",
        "RetryPolicy",
        "Timeout",
        "Verdict",
    ),
    "config.options": (
        "STYLES",
        "ClassifierOptions",
        "RecordedDecision",
    ),
    "core": (
        "DEFAULT_API_KEY_ENV",
        "DEFAULT_BANDS",
        "DEFAULT_BASE_URL",
        "DEFAULT_BATCH_CONCURRENCY",
        "DEFAULT_MODEL",
        "DEFAULT_RETRIES",
        "DEFAULT_RETRY_BASE_MS",
        "DEFAULT_RETRYABLE_STATUSES",
        "DEFAULT_THRESHOLDS",
        "DEFAULT_TIMEOUT",
        "IMAGE_MAX_BYTES",
        "IMAGE_MAX_SIDE",
        "IMAGE_MIN_SIDE",
        "MAX_CHOICE_OPTIONS",
        "MAX_SCORE_LEVELS",
        "MIN_SCORE_LEVELS",
        "NEAR_UNIFORM_TOLERANCE",
        "NEEDS_INPUT",
        "REQUEST_IMAGE_MAX_BYTES",
        "Answer",
        "AnswerAccessError",
        "Asset",
        "BackendError",
        "Bands",
        "BatchError",
        "CacheError",
        "ChoiceAnswer",
        "ChoiceQuestion",
        "ClassifierError",
        "ClassifierUnsupported",
        "ClassifierUsage",
        "ConfigError",
        "Decision",
        "DecisionError",
        "GateResult",
        "HookError",
        "HostBackendError",
        "HTTPStatusError",
        "Image",
        "ImageError",
        "ImageLimits",
        "InvalidDecision",
        "InvalidState",
        "JudgedAnswer",
        "LiftedState",
        "NoulAnswer",
        "NoulCriteria",
        "NoulQuestion",
        "Policy",
        "Question",
        "QuestionError",
        "RawAnswer",
        "RawQuestion",
        "ReportError",
        "Request",
        "Rule",
        "RunError",
        "RunStopped",
        "ScoreAnswer",
        "ScoreQuestion",
        "StateWithImages",
        "StaticMiss",
        "TapeMiss",
        "TransportError",
        "canonical_json",
        "canonical_request",
        "choice_over",
        "chunk_questions",
        "decision_cache_key",
        "degenerate_criteria",
        "image_format",
        "image_size",
        "lift_images",
        "model_cache_key",
        "near_uniform",
        "parse_decision",
        "sha256_hex",
        "threshold_band",
        "unsupported",
        "validate_decision",
        "with_images",
    ),
    "evaluate": (
        "METRIC_EVALUATE",
        "METRIC_WARNING",
        "BoundState",
        "BoundStates",
        "StateResult",
    ),
    "judge": (
        "Tape",
        "ask",
        "gate",
    ),
}

_WHERE = {name: module for module, names in _LAZY.items() for name in names}


def _export_order(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: SCREAMING_CASE constants, then CamelCase classes, then the rest.
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


__all__ = sorted([*_WHERE, "__version__"], key=_export_order)

# --- generated from _LAZY by tests/core/test_public_api.py; do not edit by hand ----------------
if TYPE_CHECKING:
    from .cache import Cache as Cache
    from .cache import CacheStats as CacheStats
    from .cache import MemoryCache as MemoryCache
    from .cache import SqliteCache as SqliteCache
    from .cache import memory_cache as memory_cache
    from .classifier import Classifier as Classifier
    from .classifier import create_classifier as create_classifier
    from .classifier import static_classifier as static_classifier
    from .config import BACKEND_NAMES as BACKEND_NAMES
    from .config import BACKENDS as BACKENDS
    from .config import IMAGES_HEADER as IMAGES_HEADER
    from .config import Backend as Backend
    from .config import BatchOptions as BatchOptions
    from .config import ErrorInfo as ErrorInfo
    from .config import RetryPolicy as RetryPolicy
    from .config import Timeout as Timeout
    from .config import Verdict as Verdict
    from .config.options import STYLES as STYLES
    from .config.options import ClassifierOptions as ClassifierOptions
    from .config.options import RecordedDecision as RecordedDecision
    from .core import DEFAULT_API_KEY_ENV as DEFAULT_API_KEY_ENV
    from .core import DEFAULT_BANDS as DEFAULT_BANDS
    from .core import DEFAULT_BASE_URL as DEFAULT_BASE_URL
    from .core import DEFAULT_BATCH_CONCURRENCY as DEFAULT_BATCH_CONCURRENCY
    from .core import DEFAULT_MODEL as DEFAULT_MODEL
    from .core import DEFAULT_RETRIES as DEFAULT_RETRIES
    from .core import DEFAULT_RETRY_BASE_MS as DEFAULT_RETRY_BASE_MS
    from .core import DEFAULT_RETRYABLE_STATUSES as DEFAULT_RETRYABLE_STATUSES
    from .core import DEFAULT_THRESHOLDS as DEFAULT_THRESHOLDS
    from .core import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
    from .core import IMAGE_MAX_BYTES as IMAGE_MAX_BYTES
    from .core import IMAGE_MAX_SIDE as IMAGE_MAX_SIDE
    from .core import IMAGE_MIN_SIDE as IMAGE_MIN_SIDE
    from .core import MAX_CHOICE_OPTIONS as MAX_CHOICE_OPTIONS
    from .core import MAX_SCORE_LEVELS as MAX_SCORE_LEVELS
    from .core import MIN_SCORE_LEVELS as MIN_SCORE_LEVELS
    from .core import NEAR_UNIFORM_TOLERANCE as NEAR_UNIFORM_TOLERANCE
    from .core import NEEDS_INPUT as NEEDS_INPUT
    from .core import REQUEST_IMAGE_MAX_BYTES as REQUEST_IMAGE_MAX_BYTES
    from .core import Answer as Answer
    from .core import AnswerAccessError as AnswerAccessError
    from .core import Asset as Asset
    from .core import BackendError as BackendError
    from .core import Bands as Bands
    from .core import BatchError as BatchError
    from .core import CacheError as CacheError
    from .core import ChoiceAnswer as ChoiceAnswer
    from .core import ChoiceQuestion as ChoiceQuestion
    from .core import ClassifierError as ClassifierError
    from .core import ClassifierUnsupported as ClassifierUnsupported
    from .core import ClassifierUsage as ClassifierUsage
    from .core import ConfigError as ConfigError
    from .core import Decision as Decision
    from .core import DecisionError as DecisionError
    from .core import GateResult as GateResult
    from .core import HookError as HookError
    from .core import HostBackendError as HostBackendError
    from .core import HTTPStatusError as HTTPStatusError
    from .core import Image as Image
    from .core import ImageError as ImageError
    from .core import ImageLimits as ImageLimits
    from .core import InvalidDecision as InvalidDecision
    from .core import InvalidState as InvalidState
    from .core import JudgedAnswer as JudgedAnswer
    from .core import LiftedState as LiftedState
    from .core import NoulAnswer as NoulAnswer
    from .core import NoulCriteria as NoulCriteria
    from .core import NoulQuestion as NoulQuestion
    from .core import Policy as Policy
    from .core import Question as Question
    from .core import QuestionError as QuestionError
    from .core import RawAnswer as RawAnswer
    from .core import RawQuestion as RawQuestion
    from .core import ReportError as ReportError
    from .core import Request as Request
    from .core import Rule as Rule
    from .core import RunError as RunError
    from .core import RunStopped as RunStopped
    from .core import ScoreAnswer as ScoreAnswer
    from .core import ScoreQuestion as ScoreQuestion
    from .core import StateWithImages as StateWithImages
    from .core import StaticMiss as StaticMiss
    from .core import TapeMiss as TapeMiss
    from .core import TransportError as TransportError
    from .core import canonical_json as canonical_json
    from .core import canonical_request as canonical_request
    from .core import choice_over as choice_over
    from .core import chunk_questions as chunk_questions
    from .core import decision_cache_key as decision_cache_key
    from .core import degenerate_criteria as degenerate_criteria
    from .core import image_format as image_format
    from .core import image_size as image_size
    from .core import lift_images as lift_images
    from .core import model_cache_key as model_cache_key
    from .core import near_uniform as near_uniform
    from .core import parse_decision as parse_decision
    from .core import sha256_hex as sha256_hex
    from .core import threshold_band as threshold_band
    from .core import unsupported as unsupported
    from .core import validate_decision as validate_decision
    from .core import with_images as with_images
    from .evaluate import METRIC_EVALUATE as METRIC_EVALUATE
    from .evaluate import METRIC_WARNING as METRIC_WARNING
    from .evaluate import BoundState as BoundState
    from .evaluate import BoundStates as BoundStates
    from .evaluate import StateResult as StateResult
    from .judge import Tape as Tape
    from .judge import ask as ask
    from .judge import gate as gate
# --- end of generated imports ------------------------------------------------------------------

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
