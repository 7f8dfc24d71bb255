"""The one record model of a batch run and its codecs: ``model`` (what a record is),
``decision`` (a decision as a record: wire fields, derived fields, flags), ``codec`` (how each
line format writes and reads it), and ``parquet`` (a Parquet run on disk: the file and its
journal). Everything that writes or reads a run goes through here: ``batch`` output,
``--resume`` / ``--retry-errors``, ``report`` and ``toolnexus.arrow``."""

from .codec import (
    CODECS,
    Codec,
    JsonCodec,
    JsonlCodec,
    codec_for,
)
from .csvcodec import (
    CsvCodec,
    RecordDecodeError,
)
from .model import (
    QUESTIONS_SHA256,
    RECORD_KEYS,
    DecisionRecord,
    ErrorRecord,
    Record,
    RecordUsage,
    record_from_object,
)

__all__ = [
    "CODECS",
    "QUESTIONS_SHA256",
    "RECORD_KEYS",
    "Codec",
    "CsvCodec",
    "DecisionRecord",
    "ErrorRecord",
    "JsonCodec",
    "JsonlCodec",
    "Record",
    "RecordDecodeError",
    "RecordUsage",
    "codec_for",
    "record_from_object",
]
