"""Type stubs of the native module fex._fex (see python/src/)."""

import os
from typing import Any, Iterator, Literal, Mapping, Optional, Sequence, Tuple, TypedDict, Union, overload

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

class JoinError(ValueError):
    """A logged request the label join cannot read (or a model without a
    ``label_join:`` section); ``offset`` is the byte of the logged record
    where decoding stopped, or None."""

    offset: Optional[int]

class LabelJoin(TypedDict):
    requests_back: int
    after_ms: int
    watermark_delay_ms: int
    late_actions: Literal["drop", "correction"]
    retention_ms: int
    has_refresh: bool

class RequestKeys:
    """What a logged request (``fex.v1.LoggedRequest``) is joined on, read
    as the model's ``label_join:`` section says."""

    @property
    def request_id(self) -> str: ...
    @property
    def user_id(self) -> str: ...
    @property
    def time_ms(self) -> int: ...
    @property
    def refresh(self) -> bool: ...
    @property
    def item_ids(self) -> list[str]: ...
    @property
    def payload(self) -> Literal["batch", "examples"]: ...
    @property
    def rows(self) -> int: ...
    @property
    def model(self) -> str: ...

class RecordError(OSError):
    """A record file that cannot be read: where, and what was found."""

    file: str
    index: int
    offset: int
    kind: Literal["io", "truncated", "corrupt_length", "too_large", "compression", "other"]

class Records(Iterator[Any]):
    def __iter__(self) -> "Records": ...
    def __next__(self) -> Any: ...

Compression = Literal["auto", "none", "zstd", "gzip", "zlib", "snappy", "snappy_framed"]

def read_records(
    source: Union[str, "os.PathLike[str]", bytes],
    *,
    compression: Compression = "auto",
    lagrangex_header: bool = False,
    kafka_dump_prefix: bool = False,
    has_sort_id: bool = False,
    kafka_dump: bool = False,
    max_record_bytes: int = ...,
    with_meta: bool = False,
    name: Optional[str] = None,
) -> Records:
    """Records of a Monolith PBDataset file (or of a stream held in memory,
    ``bytes``, called ``name`` in errors): bytes, or with ``with_meta``
    tuples of (payload, index, offset, pb_type, data_source_key)."""

class BadRecordError(Exception):
    """A record an offline run could not read or extract."""

    file: str
    index: int
    offset: int
    kind: Literal["read", "extract", "arrow"]
    message: str
    cause: Optional[Union[ExtractError, RecordError]]

class BadRecord:
    """A record ``run`` skipped (on_error="skip"): the fields of BadRecordError."""

    file: str
    index: int
    offset: int
    kind: Literal["read", "extract", "arrow"]
    message: str
    cause: Optional[Union[ExtractError, RecordError]]

class RunResult:
    """What ``run`` did, and its output when kept in memory."""

    @property
    def files(self) -> int: ...
    @property
    def records(self) -> int: ...
    @property
    def bad_records(self) -> int: ...
    @property
    def rows_written(self) -> int: ...
    @property
    def input_bytes(self) -> int: ...
    @property
    def payload_bytes(self) -> int: ...
    @property
    def transforms(self) -> dict[str, int]: ...
    @property
    def bad(self) -> list[BadRecord]: ...
    @property
    def responses(self) -> Optional[list[bytes]]: ...
    @property
    def has_table(self) -> bool: ...
    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...
    def to_arrow(self) -> Any: ...

PathLike = Union[str, "os.PathLike[str]"]

def run(
    plan: "Plan",
    inputs: Union[PathLike, Sequence[PathLike], bytes],
    out: Optional[PathLike] = None,
    *,
    format: Literal["parquet", "arrow", "ipc", "responses"] = "parquet",
    payload: Literal["batch", "examples", "instances"] = "batch",
    threads: Optional[int] = None,
    on_error: Literal["fail", "skip"] = "fail",
    transforms: bool = True,
    compression: Compression = "auto",
    lagrangex_header: bool = False,
    kafka_dump_prefix: bool = False,
    has_sort_id: bool = False,
    kafka_dump: bool = False,
    max_record_bytes: int = ...,
    row_group_size: int = 65536,
    parquet_compression: Literal["none", "snappy", "zstd"] = "snappy",
    parquet_dictionary: bool = False,
    chunk_records: int = 4096,
    item_pool_restore: Optional[PathLike] = None,
    item_pool_save: Optional[PathLike] = None,
    identity: bool = False,
) -> RunResult:
    """The offline pipeline of ``fex extract``: ``inputs`` (paths, globs,
    directories) extracted with ``plan`` (and its ``offline:`` transforms)
    into ``out``, or kept in memory when ``out`` is None. Releases the GIL.
    ``inputs`` may also be ``bytes``: a whole record stream held in memory
    (``<memory>`` in errors). ``item_pool_restore`` / ``item_pool_save``:
    negative_gen's item pool read
    before the run and written after it (``--item-pool-restore`` /
    ``--item-pool-save``). ``identity=True`` (with ``out`` None) keeps the
    table with each row's identity first: ``request_id``, ``row`` (its
    index in its record's output) and ``request_time``, read from the
    LineId as ``fex extract --format iceberg`` reads them (``fex.iceberg.write``
    takes this table)."""

def _corpus_case(text: str) -> dict[str, Any]:
    """A golden-corpus case file, its sample encoded (for tests)."""

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
    def offline_transforms(self) -> list[str]: ...
    @property
    def config_text(self) -> str: ...
    @property
    def label_join(self) -> Optional[LabelJoin]: ...
    def request_keys(self, logged: bytes) -> RequestKeys: ...
    def attach_actions(self, logged: bytes, actions: Sequence[Sequence[int]]) -> list[bytes]: ...
    def extract_batch(
        self, data: bytes, outputs: Optional[Sequence[str]] = None, shared: Shared = "declared"
    ) -> Extracted: ...
    def extract_examples(
        self, samples: Sequence[bytes], outputs: Optional[Sequence[str]] = None, shared: Shared = "declared"
    ) -> Extracted: ...
    def extract_instances(
        self, samples: Sequence[bytes], outputs: Optional[Sequence[str]] = None, shared: Shared = "declared"
    ) -> Extracted: ...
