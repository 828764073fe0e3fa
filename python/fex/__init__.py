"""fex: feature extraction for recommender models, from Python.

The same library and model config as fex-server: a ``Plan`` compiled from a
model YAML extracts serialized Monolith samples (ExampleBatch, Examples,
Instances) into typed columns that numpy, torch and Arrow view without a
copy. ``fex.run`` is the offline pipeline of ``fex extract`` (PBDataset
files in, Parquet / Arrow IPC / framed responses or an in-memory table out,
with the model's ``offline:`` transforms). ``fex.spark`` runs the same extraction over a Spark DataFrame.
"""

from collections.abc import Mapping as _Mapping

from ._fex import (
    BadRecord,
    BadRecordError,
    Buffer,
    Column,
    ConfigError,
    Extracted,
    ExtractError,
    Identity,
    JoinError,
    Plan,
    RecordError,
    Records,
    RequestKeys,
    RunResult,
    TensorSpec,
    __version__,
    read_records,
    run,
)

# Extracted implements the read-only mapping protocol in Rust.
_Mapping.register(Extracted)

__all__ = [
    "BadRecord",
    "BadRecordError",
    "Buffer",
    "Column",
    "ConfigError",
    "Extracted",
    "ExtractError",
    "Identity",
    "JoinError",
    "Plan",
    "RecordError",
    "Records",
    "RequestKeys",
    "RunResult",
    "TensorSpec",
    "__version__",
    "read_records",
    "run",
]
