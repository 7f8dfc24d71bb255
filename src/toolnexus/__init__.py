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
    "cache.memory": (
        "Cache",
        "MemoryCache",
        "memory_cache",
    ),
    "cache.sqlite": (
        "CacheStats",
        "SqliteCache",
    ),
    "classifier.client": ("Classifier",),
    "classifier.factory": (
        "create_classifier",
        "static_classifier",
    ),
    "config": (
        "BatchOptions",
        "ErrorInfo",
        "RetryPolicy",
        "Timeout",
        "Verdict",
    ),
    "config.backends": (
        "BACKEND_NAMES",
        "BACKENDS",
        "IMAGES_HEADER",
        "Backend",
    ),
    "config.options": (
        "STYLES",
        "ClassifierOptions",
        "RecordedDecision",
    ),
    "core.answers": (
        "Answer",
        "ClassifierUsage",
    ),
    "core.assets": (
        "Asset",
        "LiftedState",
        "StateWithImages",
        "lift_images",
        "with_images",
    ),
    "core.bands": (
        "DEFAULT_BANDS",
        "Bands",
        "JudgedAnswer",
    ),
    "core.canonical": (
        "canonical_json",
        "canonical_request",
        "decision_cache_key",
        "model_cache_key",
        "sha256_hex",
    ),
    "core.decision": (
        "Decision",
        "parse_decision",
    ),
    "core.defaults": (
        "DEFAULT_API_KEY_ENV",
        "DEFAULT_BASE_URL",
        "DEFAULT_BATCH_CONCURRENCY",
        "DEFAULT_MODEL",
        "DEFAULT_RETRIES",
        "DEFAULT_RETRY_BASE_MS",
        "DEFAULT_RETRYABLE_STATUSES",
        "DEFAULT_TIMEOUT",
    ),
    "core.errors": (
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
    "core.imagelimits": (
        "IMAGE_MAX_BYTES",
        "IMAGE_MAX_SIDE",
        "IMAGE_MIN_SIDE",
        "REQUEST_IMAGE_MAX_BYTES",
        "ImageLimits",
        "image_format",
        "image_size",
    ),
    "core.images": ("Image",),
    "core.policy": (
        "NEEDS_INPUT",
        "GateResult",
        "Policy",
        "Request",
        "Rule",
    ),
    "core.qtypes.choice": (
        "MAX_CHOICE_OPTIONS",
        "NEAR_UNIFORM_TOLERANCE",
        "ChoiceAnswer",
        "ChoiceQuestion",
        "near_uniform",
    ),
    "core.qtypes.noul": (
        "NoulAnswer",
        "NoulCriteria",
        "NoulQuestion",
    ),
    "core.qtypes.raw": (
        "RawAnswer",
        "RawQuestion",
    ),
    "core.qtypes.rubric": (
        "MAX_SCORE_LEVELS",
        "MIN_SCORE_LEVELS",
        "ScoreQuestion",
    ),
    "core.qtypes.score": ("ScoreAnswer",),
    "core.questions": (
        "Question",
        "choice_over",
        "chunk_questions",
        "degenerate_criteria",
    ),
    "core.validation": (
        "DEFAULT_THRESHOLDS",
        "threshold_band",
        "validate_decision",
    ),
    "evaluate.batch": (
        "BoundState",
        "BoundStates",
    ),
    "evaluate.batchgroups": ("StateResult",),
    "evaluate.pipeline": (
        "METRIC_EVALUATE",
        "METRIC_WARNING",
    ),
    "judge.ask": (
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
    from .cache.memory import Cache as Cache
    from .cache.memory import MemoryCache as MemoryCache
    from .cache.memory import memory_cache as memory_cache
    from .cache.sqlite import CacheStats as CacheStats
    from .cache.sqlite import SqliteCache as SqliteCache
    from .classifier.client import Classifier as Classifier
    from .classifier.factory import create_classifier as create_classifier
    from .classifier.factory import static_classifier as static_classifier
    from .config import BatchOptions as BatchOptions
    from .config import ErrorInfo as ErrorInfo
    from .config import RetryPolicy as RetryPolicy
    from .config import Timeout as Timeout
    from .config import Verdict as Verdict
    from .config.backends import BACKEND_NAMES as BACKEND_NAMES
    from .config.backends import BACKENDS as BACKENDS
    from .config.backends import IMAGES_HEADER as IMAGES_HEADER
    from .config.backends import Backend as Backend
    from .config.options import STYLES as STYLES
    from .config.options import ClassifierOptions as ClassifierOptions
    from .config.options import RecordedDecision as RecordedDecision
    from .core.answers import Answer as Answer
    from .core.answers import ClassifierUsage as ClassifierUsage
    from .core.assets import Asset as Asset
    from .core.assets import LiftedState as LiftedState
    from .core.assets import StateWithImages as StateWithImages
    from .core.assets import lift_images as lift_images
    from .core.assets import with_images as with_images
    from .core.bands import DEFAULT_BANDS as DEFAULT_BANDS
    from .core.bands import Bands as Bands
    from .core.bands import JudgedAnswer as JudgedAnswer
    from .core.canonical import canonical_json as canonical_json
    from .core.canonical import canonical_request as canonical_request
    from .core.canonical import decision_cache_key as decision_cache_key
    from .core.canonical import model_cache_key as model_cache_key
    from .core.canonical import sha256_hex as sha256_hex
    from .core.decision import Decision as Decision
    from .core.decision import parse_decision as parse_decision
    from .core.defaults import DEFAULT_API_KEY_ENV as DEFAULT_API_KEY_ENV
    from .core.defaults import DEFAULT_BASE_URL as DEFAULT_BASE_URL
    from .core.defaults import DEFAULT_BATCH_CONCURRENCY as DEFAULT_BATCH_CONCURRENCY
    from .core.defaults import DEFAULT_MODEL as DEFAULT_MODEL
    from .core.defaults import DEFAULT_RETRIES as DEFAULT_RETRIES
    from .core.defaults import DEFAULT_RETRY_BASE_MS as DEFAULT_RETRY_BASE_MS
    from .core.defaults import DEFAULT_RETRYABLE_STATUSES as DEFAULT_RETRYABLE_STATUSES
    from .core.defaults import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
    from .core.errors import AnswerAccessError as AnswerAccessError
    from .core.errors import BackendError as BackendError
    from .core.errors import BatchError as BatchError
    from .core.errors import CacheError as CacheError
    from .core.errors import ClassifierError as ClassifierError
    from .core.errors import ClassifierUnsupported as ClassifierUnsupported
    from .core.errors import ConfigError as ConfigError
    from .core.errors import DecisionError as DecisionError
    from .core.errors import HookError as HookError
    from .core.errors import HostBackendError as HostBackendError
    from .core.errors import HTTPStatusError as HTTPStatusError
    from .core.errors import ImageError as ImageError
    from .core.errors import InvalidDecision as InvalidDecision
    from .core.errors import InvalidState as InvalidState
    from .core.errors import QuestionError as QuestionError
    from .core.errors import ReportError as ReportError
    from .core.errors import RunError as RunError
    from .core.errors import RunStopped as RunStopped
    from .core.errors import StaticMiss as StaticMiss
    from .core.errors import TapeMiss as TapeMiss
    from .core.errors import TransportError as TransportError
    from .core.errors import unsupported as unsupported
    from .core.imagelimits import IMAGE_MAX_BYTES as IMAGE_MAX_BYTES
    from .core.imagelimits import IMAGE_MAX_SIDE as IMAGE_MAX_SIDE
    from .core.imagelimits import IMAGE_MIN_SIDE as IMAGE_MIN_SIDE
    from .core.imagelimits import REQUEST_IMAGE_MAX_BYTES as REQUEST_IMAGE_MAX_BYTES
    from .core.imagelimits import ImageLimits as ImageLimits
    from .core.imagelimits import image_format as image_format
    from .core.imagelimits import image_size as image_size
    from .core.images import Image as Image
    from .core.policy import NEEDS_INPUT as NEEDS_INPUT
    from .core.policy import GateResult as GateResult
    from .core.policy import Policy as Policy
    from .core.policy import Request as Request
    from .core.policy import Rule as Rule
    from .core.qtypes.choice import MAX_CHOICE_OPTIONS as MAX_CHOICE_OPTIONS
    from .core.qtypes.choice import NEAR_UNIFORM_TOLERANCE as NEAR_UNIFORM_TOLERANCE
    from .core.qtypes.choice import ChoiceAnswer as ChoiceAnswer
    from .core.qtypes.choice import ChoiceQuestion as ChoiceQuestion
    from .core.qtypes.choice import near_uniform as near_uniform
    from .core.qtypes.noul import NoulAnswer as NoulAnswer
    from .core.qtypes.noul import NoulCriteria as NoulCriteria
    from .core.qtypes.noul import NoulQuestion as NoulQuestion
    from .core.qtypes.raw import RawAnswer as RawAnswer
    from .core.qtypes.raw import RawQuestion as RawQuestion
    from .core.qtypes.rubric import MAX_SCORE_LEVELS as MAX_SCORE_LEVELS
    from .core.qtypes.rubric import MIN_SCORE_LEVELS as MIN_SCORE_LEVELS
    from .core.qtypes.rubric import ScoreQuestion as ScoreQuestion
    from .core.qtypes.score import ScoreAnswer as ScoreAnswer
    from .core.questions import Question as Question
    from .core.questions import choice_over as choice_over
    from .core.questions import chunk_questions as chunk_questions
    from .core.questions import degenerate_criteria as degenerate_criteria
    from .core.validation import DEFAULT_THRESHOLDS as DEFAULT_THRESHOLDS
    from .core.validation import threshold_band as threshold_band
    from .core.validation import validate_decision as validate_decision
    from .evaluate.batch import BoundState as BoundState
    from .evaluate.batch import BoundStates as BoundStates
    from .evaluate.batchgroups import StateResult as StateResult
    from .evaluate.pipeline import METRIC_EVALUATE as METRIC_EVALUATE
    from .evaluate.pipeline import METRIC_WARNING as METRIC_WARNING
    from .judge.ask import Tape as Tape
    from .judge.ask import ask as ask
    from .judge.ask import gate as gate
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
