from typing import Any, Mapping, Optional, Sequence, Union

from ._fex import Column, Plan, TensorSpec

CHUNK: int
RECORDS_PER_BATCH: int

def spark_type(spec: TensorSpec, keys: Optional[Sequence[str]] = None) -> Any: ...
def spark_schema(plan: Plan, names: Optional[Sequence[str]] = None) -> list[Any]: ...
def spark_array(column: Union[Column, Any]) -> Any: ...
def spark_type_of(array: Any) -> Any: ...
def extract(
    df: Any,
    column: str = "sample",
    config: Union[Plan, str, bytes, Any, None] = None,
    *,
    files: Optional[Mapping[str, Any]] = None,
    outputs: Optional[Sequence[str]] = None,
    format: str = "examples",
    keep: Optional[Sequence[str]] = None,
    identity: bool = False,
    ignore_transforms: bool = False,
) -> Any: ...
def read_pbdataset(
    spark: Any,
    path: Union[str, Sequence[str]],
    *,
    column: str = "sample",
    compression: str = "auto",
    lagrangex_header: bool = False,
    kafka_dump_prefix: bool = False,
    has_sort_id: bool = False,
    kafka_dump: bool = False,
    max_record_bytes: Optional[int] = None,
    path_glob_filter: Optional[str] = None,
    recursive: bool = False,
) -> Any: ...

ICEBERG_CATALOG: str

def iceberg_catalog(
    spark: Any, warehouse: str, catalog_uri: Optional[str] = None, properties: Optional[Mapping[str, str]] = None
) -> None: ...
def iceberg_view(spark: Any, table: str, sidecars: Sequence[str] = ..., *, view: Optional[str] = None) -> Any: ...
def write_iceberg(df: Any, table: str, plan: Plan, *, overwrite: Optional[Sequence[Any]] = None) -> None: ...
