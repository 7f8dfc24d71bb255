"""Ray Data runs (issue 22): ``evaluate_dataset`` maps the Arrow-batch seam (``arrow.py``) over
a Dataset's blocks on a pool of async actors, with ONE rate limit and one 429 backoff for every
worker (``ray_limiter.py``).

::

    import ray
    from toolnexus.ray import evaluate_dataset

    ds = ray.data.read_parquet("tickets/")
    out = evaluate_dataset(ds, QUESTIONS, state_column="text", id_column="id",
                           rate_per_minute=1200, api_key_env="TYPESAFE_API_KEY")
    out.write_parquet("run/")

What it promises, and how:

- **One limit for the account.** Each call starts one named limiter actor (no CPU); every
  worker's batch takes it as an admission member (``BatchOptions.admission``), so the worker
  asks it before each request it sends (a pack of ``pack`` states is one request) and tells it
  how the request ended: ``rate_per_minute`` is the account's limit however many workers run,
  and a 429 one worker meets slows them all.
  ``concurrency`` is the requests in flight per worker; the limiter caps the cluster at
  ``concurrency x workers``.
- **Workers ask for a fraction of a CPU** (``num_cpus``, default 0.25): an HTTP client waits,
  it does not compute, and a whole CPU per actor deadlocks a small cluster (the pool's actors
  and the tasks feeding them wait on each other: ``../shared/reference/engines.md``).
- **One row's failure is an error row**, never a failed job (``arrow.evaluate_rows``: rows
  read by ``batch``'s rules). A column ``batch`` refuses (missing, or a type no state can be)
  is refused on the driver, in ``batch``'s words, when the Dataset knows its schema.
- **A worker that dies**: Ray restarts the actor and re-runs the blocks it held (Ray Data's
  actor pool defaults: ``max_restarts=-1``, ``max_task_retries=-1``; an async actor runs a few
  blocks at once). What is re-paid is the rows of THOSE blocks already evaluated when it died
  (a block's rows are returned together, so none of them had reached the output); finished
  blocks and the other workers' blocks are untouched. Smaller blocks re-pay less.
- **Re-runs skip what is decided**, by ``batch --resume``'s rules (``run.decided``):
  ``previous=`` (the Parquet output of an earlier run, a file with its journal or a directory)
  is read on the driver, by columns, for the ids it decided: its decisions, and its errors
  unless ``retry_errors=True`` (``--retry-errors``); those rows are dropped before scheduling
  (an anti-join on ``id_column``), so a re-run after a crash pays only for the missing rows
  (and the failed ones, when retried). The result holds those rows only; the earlier output
  keeps the rest. A run of a newer ``schema_version``, of another question set, or not a
  readable Parquet run is refused in ``--resume``'s words. (A SQLite cache is not shared across
  nodes: it is no substitute.)
- **Secrets never travel.** The key is read from the environment ON EACH WORKER at call time
  (``api_key_env`` names it); it is never in a closure, a task argument or ``runtime_env``
  (Ray keeps those in its cluster metadata and logs). Options that hold a credential or a live
  object are refused before anything is scheduled, each with one line.

ray is the ``ray`` extra, imported only when this module's functions are called.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..arrow import COLUMN_KEYWORDS, evaluate_rows
from ..classifier import Classifier, create_classifier
from ..config import BatchOptions
from ..core import (
    DEFAULT_BATCH_CONCURRENCY,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    ENV_REF,
    ConfigError,
    Question,
    one_line,
    questions_sha256,
    url_secrets,
)
from ..records import require_pyarrow, run_schema
from ..run import InputSpec, PriorMismatch, UnreadableRecord, column_problem
from ..run import decided_ids as run_decided_ids
from ..sync import background
from .limiter import LimiterCore, SharedLimit, require_ray, shared_limiter

if TYPE_CHECKING:
    import pyarrow as pa

    from ..config import PackSize

__all__ = ["DEFAULT_NUM_CPUS", "evaluate_dataset"]

#: The CPU each worker asks for: HTTP waits, it does not compute (see the module docstring).
DEFAULT_NUM_CPUS = 0.25
#: Rows per batch handed to a worker: big enough that a batch keeps ``concurrency`` requests
#: busy, small enough that a worker's death re-pays little.
DEFAULT_BATCH_SIZE = 256

#: The shared bucket saves a tenth of a second of the rate, not the server's whole second: the
#: rest is slack for the time a request spends between the limiter and the server
#: (``shared_limiter``). Measured at 200 requests/s, 2 workers: a bucket of one second let 5 of
#: 2,000 rows fail on three 429s in a row; this one none.
SHARED_BURST_SECONDS = 0.1

#: Options that hold a live object: a worker cannot use the driver's, it builds its own.
_LIVE = {
    "transport": "an HTTP transport",
    "http_client": "an HTTP client",
    "client": "a chat client",
    "cache": "a cache instance (a SQLite cache is not shared across nodes either)",
}
#: Options that hold a function: it travels to the workers only if it pickles.
_CALLABLES = ("on_metric", "on_error", "body_transform", "evaluate")
_CREDENTIAL_HEADER = ("authorization", "key", "token", "secret", "cookie")


def _refuse(option: str, why: str) -> ConfigError:
    return ConfigError(f"classifier: evaluate_dataset: {option} {why}")


def check_travel(options: Mapping[str, Any]) -> None:
    """Refuse what cannot or must not travel to Ray workers, one line each (see the module)."""
    from ray import cloudpickle

    for name, what in _LIVE.items():
        if options.get(name) is not None:
            raise _refuse(name, f"is {what}, which cannot travel to Ray workers; leave it unset")
    for name in _CALLABLES:
        fn = options.get(name)
        if fn is None:
            continue
        try:
            cloudpickle.dumps(fn)  # type: ignore[no-untyped-call]  # ray ships it untyped
        except Exception as e:
            raise _refuse(
                name,
                f"cannot travel to Ray workers ({type(e).__name__}); give a function that "
                "pickles (a module-level function, or one closing over plain values)",
            ) from None
    base_url = options.get("base_url")
    if isinstance(base_url, str) and any(
        ENV_REF.sub("", s).strip(":") for s in url_secrets(base_url)
    ):
        raise _refuse(
            "base_url",
            "holds a credential, which would be shipped to every worker and kept in Ray's task "
            "metadata; put the key in each node's environment and name it with api_key_env",
        )
    headers = options.get("headers")
    for header, value in (headers or {}).items() if isinstance(headers, Mapping) else ():
        literal = ENV_REF.sub("", str(value)).strip()
        if literal and any(word in str(header).lower() for word in _CREDENTIAL_HEADER):
            raise _refuse(
                f"header {header!r}",
                "holds a literal value, which would be shipped to every worker; write it as "
                "${NAME} and set NAME in each node's environment",
            )


class EvaluateBatches:
    """The callable class each pool actor runs: one classifier per actor (its connection pool
    lives as long as the actor), admitted through the shared limiter."""

    def __init__(
        self,
        *,
        questions: dict[str, Question],
        options: dict[str, Any],
        limiter: Any,
        state_column: str,
        id_column: str,
        concurrency: int,
        pack: PackSize,
    ) -> None:
        self.questions = questions
        self.options = options
        self.limiter = limiter
        self.state_column = state_column
        self.id_column = id_column
        self.concurrency = concurrency
        self.pack = pack
        self.classifier: Classifier | None = None

    async def __call__(self, batch: pa.Table) -> pa.Table:
        if self.classifier is None:
            # Built on the actor's event loop, on first use: the key is read from THIS node's
            # environment when each request is sent, never carried here.
            self.classifier = create_classifier(**self.options)
        # One member per batch: an async actor runs a few batches at once, each under its own
        # scheduler whose ticket ids start at 0, and the limiter keys a lease by (worker, id).
        options = BatchOptions(
            concurrency=self.concurrency,
            pack=self.pack,
            admission=(SharedLimit(self.limiter),),
        )
        return await evaluate_rows(
            self.classifier,
            batch,
            self.questions,
            state_column=self.state_column,
            id_column=self.id_column,
            options=options,
        )


def decided_ids(
    previous: str | os.PathLike[str], questions_sha256: str, *, retry_errors: bool = False
) -> pa.Array:
    """The ids an earlier output decided, by ``--resume``'s rules (``run.decided``), read on
    the driver; a run that cannot be resumed is one line, in ``--resume``'s words."""
    pa = require_pyarrow()
    where = f"classifier: evaluate_dataset: previous={os.fspath(previous)}"
    try:
        return run_decided_ids(previous, questions_sha256, retry_errors=retry_errors)
    except PriorMismatch as e:
        raise ConfigError(f"{where}: cannot resume: {e}") from None
    except UnreadableRecord as e:
        raise ConfigError(f"{where}: cannot resume from it: {e.path}:{e.line}: {e}") from None
    except (OSError, ValueError, pa.ArrowException) as e:
        raise ConfigError(f"{where}: cannot resume from it: {one_line(str(e))}") from None


def drop_decided(batch: pa.Table, *, id_column: str, decided: pa.Array) -> pa.Table:
    """The rows of ``batch`` whose id (as the run writes it: text) is not in ``decided``."""
    pa = require_pyarrow()
    import pyarrow.compute as pc

    ids = pc.cast(batch.column(id_column), pa.string())
    return batch.filter(pc.invert(pc.fill_null(pc.is_in(ids, value_set=decided), False)))


def _check_columns(ds: Any, state_column: str, id_column: str) -> None:
    """``batch``'s column checks (``run.arrowin``), on the driver, when the Dataset knows its
    schema without running anything (``read_parquet``, ``from_arrow``): a missing column or
    one no state can be is one line here, not a failed job. Otherwise each worker's
    ``evaluate_rows`` checks its blocks."""
    pa = require_pyarrow()
    schema = getattr(ds.schema(fetch_if_missing=False), "base_schema", None)
    if not isinstance(schema, pa.Schema):
        return
    spec = InputSpec(id_field=id_column, state_fields=(state_column,))
    problem = column_problem(schema, spec, COLUMN_KEYWORDS)
    if problem is not None:
        raise ConfigError(f"classifier: evaluate_dataset: {problem}")


async def _checked_questions(
    questions: Mapping[str, Any], options: Mapping[str, Any]
) -> dict[str, Question]:
    # Everything else that would fail every row fails here, on the driver, before a worker
    # starts: the options (create_classifier's own check) and the question set.
    async with create_classifier(**options) as classifier:
        return classifier.prepare(questions)


def evaluate_dataset(
    ds: Any,
    questions: Mapping[str, Any],
    *,
    state_column: str,
    id_column: str | None = None,
    rate_per_minute: float | None = None,
    pack: PackSize = 1,
    concurrency: int = DEFAULT_BATCH_CONCURRENCY,
    previous: str | os.PathLike[str] | None = None,
    retry_errors: bool = False,
    workers: int = 2,
    num_cpus: float = DEFAULT_NUM_CPUS,
    batch_size: int = DEFAULT_BATCH_SIZE,
    **classifier_options: Any,
) -> Any:
    """A lazy ``ray.data.Dataset`` of run records (``records.arrow.run_schema(questions)``), one
    per row of ``ds`` (less those ``previous`` decided). See the module docstring.

    ``id_column`` is required: a Dataset has no row index that is stable across blocks and
    runs, and the id is what ``previous=`` skips by. ``retry_errors``: ``previous``'s error
    rows are sent again (``--retry-errors``); without it they are decided, as ``--resume``
    leaves them. ``workers`` actors each keep ``concurrency`` requests in flight;
    ``rate_per_minute`` is the limit for all of them together. ``pack``: states per request
    (``BatchOptions.pack``). ``classifier_options`` are ``create_classifier``'s keywords."""
    ray = require_ray()
    require_pyarrow()
    # The batch options' own checks (concurrency, pack), on the driver: each worker builds the
    # same options around its own shared-limit member.
    BatchOptions(concurrency=concurrency, pack=pack)
    if id_column is None:
        raise ConfigError(
            "classifier: evaluate_dataset needs id_column=: a Dataset has no row index that is "
            "stable across blocks and runs, and the id is what previous= skips by"
        )
    if retry_errors and previous is None:
        raise ConfigError(
            "classifier: evaluate_dataset: retry_errors=True needs previous= (the run whose "
            "error rows it sends again), as --retry-errors needs --output"
        )
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"classifier: evaluate_dataset: workers must be >= 1, got {workers!r}")
    check_travel(classifier_options)
    qs = background.run(_checked_questions(questions, classifier_options))
    # The limiter's own checks (a rate above 0), on the driver rather than in the actor.
    LimiterCore(rate_per_minute=rate_per_minute, max_concurrency=concurrency * workers)
    run_schema(qs)  # the question set has a schema before any worker relies on it

    decided = (
        None
        if previous is None
        else decided_ids(previous, questions_sha256(qs), retry_errors=retry_errors)
    )
    _check_columns(ds, state_column, id_column)  # before a map hides the schema
    if decided is not None and len(decided):
        ds = ds.map_batches(
            drop_decided,
            batch_format="pyarrow",
            fn_kwargs={"id_column": id_column, "decided": decided},
            num_cpus=num_cpus,
        )

    timeout = float(classifier_options.get("timeout", DEFAULT_TIMEOUT))
    retries = int(classifier_options.get("retries", DEFAULT_RETRIES))
    limiter = shared_limiter(
        f"toolnexus-limit-{uuid.uuid4().hex}",
        rate_per_minute=rate_per_minute,
        max_concurrency=concurrency * workers,
        # A dead worker's admitted states come back after their longest possible life: every
        # attempt's timeout plus the backoff between them.
        lease_seconds=(timeout + 30.0) * (retries + 1),
        burst_seconds=SHARED_BURST_SECONDS,
    )
    return ds.map_batches(
        EvaluateBatches,
        batch_format="pyarrow",
        batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_cpus=num_cpus,
        fn_constructor_kwargs={
            "questions": qs,
            "options": dict(classifier_options),
            "limiter": limiter,
            "state_column": state_column,
            "id_column": id_column,
            "concurrency": concurrency,
            "pack": pack,
        },
    )
