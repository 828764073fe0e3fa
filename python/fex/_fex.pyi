"""Type stubs of the native module fex._fex (see python/src/)."""

import os
from typing import Any, Iterator, Literal, Mapping, Optional, Sequence, Tuple, Union, overload

import numpy as np

__version__: str

Shared = Literal["declared", "broadcast", "once"]
FileBytes = Union[bytes, str, "os.PathLike[str]"]

class ExtractError(ValueError):
    """Bad sample bytes. Fields are None where the library does not know them."""

    row: Optional[int]
    source: Optional[str]
    path: Optional[str]
    offset: Optional[int]
    kind: str

class ConfigError(ValueError):
    """A model config with errors: every problem as (path, message)."""

    errors: list[Tuple[str, str]]

class RecordError(OSError):
    """A record file that cannot be read: where, and what was found."""

    file: str
    index: int
    offset: int
    kind: Literal["io", "truncated", "corrupt_length", "too_large", "compression", "other"]

class Records(Iterator[Any]):
    def __iter__(self) -> "Records": ...
    def __next__(self) -> Any: ...

def read_records(
    path: Union[str, "os.PathLike[str]"],
    *,
    compression: Literal["auto", "none", "zstd", "gzip", "snappy"] = "auto",
    lagrangex_header: bool = False,
    kafka_dump_prefix: bool = False,
    has_sort_id: bool = False,
    kafka_dump: bool = False,
    max_record_bytes: int = ...,
    with_meta: bool = False,
) -> Records:
    """Records of a Monolith PBDataset file: bytes, or with ``with_meta``
    tuples of (payload, index, offset, pb_type, data_source_key)."""

class Identity:
    version: str
    digest: int

class TensorSpec:
    name: str
    layout: Literal["ragged", "dense", "strings", "keyed_jagged"]
    dtype: str
    shape: list[int]
    splits_dtype: Optional[str]
    shared_once: bool

class Buffer:
    """Memory of a column that numpy arrays view (their ``base``)."""

    @property
    def __array_interface__(self) -> dict[str, Any]: ...
    @property
    def address(self) -> int: ...
    @property
    def nbytes(self) -> int: ...

class Column:
    @property
    def name(self) -> str: ...
    @property
    def layout(self) -> Literal["ragged", "dense", "strings", "keyed_jagged"]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def splits_dtype(self) -> Optional[str]: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def rows(self) -> int: ...
    @property
    def shared(self) -> bool: ...
    @property
    def keys(self) -> Optional[list[str]]: ...
    @property
    def values(self) -> np.ndarray: ...
    @property
    def row_splits(self) -> Optional[np.ndarray]: ...
    @property
    def offsets(self) -> Optional[np.ndarray]: ...
    @property
    def lengths(self) -> Optional[np.ndarray]: ...
    @property
    def weights(self) -> Optional[np.ndarray]: ...
    def __arrow_c_array__(self, requested_schema: Optional[object] = None) -> Tuple[object, object]: ...
    def to_numpy(self) -> Any: ...
    def to_torch(self) -> Any: ...
    def to_kjt(self) -> Any: ...
    def to_arrow(self) -> Any: ...
    def to_tf_ragged(self) -> Any: ...

class Extracted(Mapping[str, Column]):
    @property
    def batch_size(self) -> int: ...
    @property
    def lists_seen(self) -> int: ...
    @property
    def lists_decoded(self) -> int: ...
    def __getitem__(self, name: str) -> Column: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[str]: ...
    def __contains__(self, name: object) -> bool: ...
    def keys(self) -> list[str]: ...  # type: ignore[override]
    def values(self) -> list[Column]: ...  # type: ignore[override]
    def items(self) -> list[Tuple[str, Column]]: ...  # type: ignore[override]
    @overload
    def get(self, name: str) -> Optional[Column]: ...
    @overload
    def get(self, name: str, default: Any) -> Any: ...
    def to_arrow(self) -> Any: ...

class Plan:
    @staticmethod
    def from_yaml(
        config: Union[str, bytes, "os.PathLike[str]"], files: Optional[Mapping[str, FileBytes]] = None
    ) -> "Plan": ...
    @staticmethod
    def default() -> "Plan": ...
    @property
    def name(self) -> str: ...
    @property
    def compat(self) -> Literal["native", "monolith"]: ...
    @property
    def identity(self) -> Identity: ...
    @property
    def outputs(self) -> list[TensorSpec]: ...
    @property
    def config_text(self) -> str: ...
    def extract_batch(
        self, data: bytes, outputs: Optional[Sequence[str]] = None, shared: Shared = "declared"
    ) -> Extracted: ...
    def extract_examples(
        self, samples: Sequence[bytes], outputs: Optional[Sequence[str]] = None, shared: Shared = "declared"
    ) -> Extracted: ...
    def extract_instances(
        self, samples: Sequence[bytes], outputs: Optional[Sequence[str]] = None, shared: Shared = "declared"
    ) -> Extracted: ...
