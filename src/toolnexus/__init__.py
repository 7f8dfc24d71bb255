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
    "bands": (
        "DEFAULT_BANDS",
        "Bands",
        "JudgedAnswer",
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
    ),
    "config": (
        "BatchOptions",
        "RetryPolicy",
        "Timeout",
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
        "ReportError",
        "RunError",
        "RunStopped",
        "StaticMiss",
        "TapeMiss",
        "TransportError",
        "unsupported",
    ),
    "factory": (
        "create_classifier",
        "static_classifier",
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
    "judge": (
        "Tape",
        "ask",
        "gate",
    ),
    "options": (
        "STYLES",
        "ClassifierOptions",
        "ErrorInfo",
        "RecordedDecision",
        "Verdict",
    ),
    "policy": (
        "NEEDS_INPUT",
        "GateResult",
        "Policy",
        "Request",
        "Rule",
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


def _export_order(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: SCREAMING_CASE constants, then CamelCase classes, then the rest.
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


__all__ = sorted([*_WHERE, "__version__"], key=_export_order)

# --- generated from _LAZY by tests/core/test_public_api.py; do not edit by hand ----------------
if TYPE_CHECKING:
    from .assets import Asset as Asset
    from .assets import LiftedState as LiftedState
    from .assets import StateWithImages as StateWithImages
    from .assets import lift_images as lift_images
    from .assets import with_images as with_images
    from .backends import BACKEND_NAMES as BACKEND_NAMES
    from .backends import BACKENDS as BACKENDS
    from .backends import IMAGES_HEADER as IMAGES_HEADER
    from .backends import Backend as Backend
    from .bands import DEFAULT_BANDS as DEFAULT_BANDS
    from .bands import Bands as Bands
    from .bands import JudgedAnswer as JudgedAnswer
    from .batch import BoundState as BoundState
    from .batch import BoundStates as BoundStates
    from .batch import StateResult as StateResult
    from .cache import Cache as Cache
    from .cache import CacheStats as CacheStats
    from .cache import MemoryCache as MemoryCache
    from .cache import SqliteCache as SqliteCache
    from .cache import memory_cache as memory_cache
    from .canonical import canonical_json as canonical_json
    from .canonical import canonical_request as canonical_request
    from .canonical import decision_cache_key as decision_cache_key
    from .canonical import model_cache_key as model_cache_key
    from .canonical import sha256_hex as sha256_hex
    from .classifier import METRIC_EVALUATE as METRIC_EVALUATE
    from .classifier import METRIC_WARNING as METRIC_WARNING
    from .classifier import Classifier as Classifier
    from .config import BatchOptions as BatchOptions
    from .config import RetryPolicy as RetryPolicy
    from .config import Timeout as Timeout
    from .decision import NEAR_UNIFORM_TOLERANCE as NEAR_UNIFORM_TOLERANCE
    from .decision import Answer as Answer
    from .decision import ChoiceAnswer as ChoiceAnswer
    from .decision import ClassifierUsage as ClassifierUsage
    from .decision import Decision as Decision
    from .decision import NoulAnswer as NoulAnswer
    from .decision import RawAnswer as RawAnswer
    from .decision import ScoreAnswer as ScoreAnswer
    from .decision import near_uniform as near_uniform
    from .decision import parse_decision as parse_decision
    from .defaults import DEFAULT_API_KEY_ENV as DEFAULT_API_KEY_ENV
    from .defaults import DEFAULT_BASE_URL as DEFAULT_BASE_URL
    from .defaults import DEFAULT_BATCH_CONCURRENCY as DEFAULT_BATCH_CONCURRENCY
    from .defaults import DEFAULT_MODEL as DEFAULT_MODEL
    from .defaults import DEFAULT_RETRIES as DEFAULT_RETRIES
    from .defaults import DEFAULT_RETRY_BASE_MS as DEFAULT_RETRY_BASE_MS
    from .defaults import DEFAULT_RETRYABLE_STATUSES as DEFAULT_RETRYABLE_STATUSES
    from .defaults import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
    from .errors import AnswerAccessError as AnswerAccessError
    from .errors import BackendError as BackendError
    from .errors import BatchError as BatchError
    from .errors import CacheError as CacheError
    from .errors import ClassifierError as ClassifierError
    from .errors import ClassifierUnsupported as ClassifierUnsupported
    from .errors import ConfigError as ConfigError
    from .errors import DecisionError as DecisionError
    from .errors import HookError as HookError
    from .errors import HostBackendError as HostBackendError
    from .errors import HTTPStatusError as HTTPStatusError
    from .errors import ImageError as ImageError
    from .errors import InvalidDecision as InvalidDecision
    from .errors import InvalidState as InvalidState
    from .errors import QuestionError as QuestionError
    from .errors import ReportError as ReportError
    from .errors import RunError as RunError
    from .errors import RunStopped as RunStopped
    from .errors import StaticMiss as StaticMiss
    from .errors import TapeMiss as TapeMiss
    from .errors import TransportError as TransportError
    from .errors import unsupported as unsupported
    from .factory import create_classifier as create_classifier
    from .factory import static_classifier as static_classifier
    from .images import IMAGE_MAX_BYTES as IMAGE_MAX_BYTES
    from .images import IMAGE_MAX_SIDE as IMAGE_MAX_SIDE
    from .images import IMAGE_MIN_SIDE as IMAGE_MIN_SIDE
    from .images import REQUEST_IMAGE_MAX_BYTES as REQUEST_IMAGE_MAX_BYTES
    from .images import Image as Image
    from .images import ImageLimits as ImageLimits
    from .images import image_format as image_format
    from .images import image_size as image_size
    from .judge import Tape as Tape
    from .judge import ask as ask
    from .judge import gate as gate
    from .options import STYLES as STYLES
    from .options import ClassifierOptions as ClassifierOptions
    from .options import ErrorInfo as ErrorInfo
    from .options import RecordedDecision as RecordedDecision
    from .options import Verdict as Verdict
    from .policy import NEEDS_INPUT as NEEDS_INPUT
    from .policy import GateResult as GateResult
    from .policy import Policy as Policy
    from .policy import Request as Request
    from .policy import Rule as Rule
    from .questions import MAX_CHOICE_OPTIONS as MAX_CHOICE_OPTIONS
    from .questions import MAX_SCORE_LEVELS as MAX_SCORE_LEVELS
    from .questions import MIN_SCORE_LEVELS as MIN_SCORE_LEVELS
    from .questions import ChoiceQuestion as ChoiceQuestion
    from .questions import NoulCriteria as NoulCriteria
    from .questions import NoulQuestion as NoulQuestion
    from .questions import Question as Question
    from .questions import RawQuestion as RawQuestion
    from .questions import ScoreQuestion as ScoreQuestion
    from .questions import choice_over as choice_over
    from .questions import chunk_questions as chunk_questions
    from .questions import degenerate_criteria as degenerate_criteria
    from .validation import DEFAULT_THRESHOLDS as DEFAULT_THRESHOLDS
    from .validation import threshold_band as threshold_band
    from .validation import validate_decision as validate_decision
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
