"""fex: feature extraction for recommender models, from Python.

The same library and model config as fex-server: a ``Plan`` compiled from a
model YAML extracts serialized Monolith samples (ExampleBatch, Examples,
Instances) into typed columns that numpy, torch and Arrow view without a
copy. ``fex.spark`` runs the same extraction over a Spark DataFrame.
"""

from collections.abc import Mapping as _Mapping

from ._fex import (
    Buffer,
    Column,
    ConfigError,
    Extracted,
    ExtractError,
    Identity,
    Plan,
    RecordError,
    Records,
    TensorSpec,
    __version__,
    read_records,
)

# Extracted implements the read-only mapping protocol in Rust.
_Mapping.register(Extracted)

__all__ = [
    "Buffer",
    "Column",
    "ConfigError",
    "Extracted",
    "ExtractError",
    "Identity",
    "Plan",
    "RecordError",
    "Records",
    "TensorSpec",
    "__version__",
    "read_records",
]
