from typing import Any, Mapping, Optional, Sequence, Union

from ._fex import Plan, TensorSpec

CHUNK: int

def spark_type(spec: TensorSpec) -> Any: ...
def spark_array(column: Any) -> Any: ...
def extract(
    df: Any,
    column: str = "sample",
    config: Union[Plan, str, bytes, Any, None] = None,
    *,
    files: Optional[Mapping[str, Any]] = None,
    outputs: Optional[Sequence[str]] = None,
    format: str = "examples",
    keep: Optional[Sequence[str]] = None,
) -> Any: ...
