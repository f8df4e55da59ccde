"""Types of ``pgpour._native``, the Rust module under the package: called by
``pgpour/__init__.py``, which gives the public signatures."""

from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from .results import Explain, Forgotten, LoadResult, LoadStatus, Sniffed

OnProgress = Optional[Callable[[Dict[str, Any]], Any]]

def load(
    table: str,
    inputs: List[str],
    stream: Optional[Any],
    arrow: Optional[Any],
    db: Optional[str],
    options: Dict[str, Any],
    progress: OnProgress,
) -> LoadResult: ...
def explain(
    table: str,
    inputs: List[str],
    stream: Optional[Any],
    arrow: Optional[Any],
    db: Optional[str],
    options: Dict[str, Any],
) -> Explain: ...
def resume(
    load_id: str,
    db: Optional[str],
    workers: Optional[int],
    max_errors: Union[int, str, None],
    progress: OnProgress,
) -> LoadResult: ...
def status(
    db: Optional[str],
    load_id: Optional[str],
    states: List[str],
    table: Optional[str],
    since: Union[str, float, None],
    older_than: Union[str, float, None],
) -> List[LoadStatus]: ...
def forget(
    load_ids: List[str], db: Optional[str], failed: bool, older_than: Union[str, float, None]
) -> List[Forgotten]: ...
def sniff(path: str, table: Optional[str], options: Dict[str, Any]) -> Sniffed: ...
def _arrow_batches(obj: Any) -> Tuple[str, int, int]: ...
