"""IWR-Bench task sets: read, validate and write the official layout.

```
<root>/data.jsonl                 one task record per line
<root>/data/<id>/video.mp4        the interaction recording
<root>/data/<id>/assets/          the page's crawled assets
<root>/data/<id>/stitched_assets/ grid images of the assets
<root>/data/<id>/checkpoints/     step_<k>.png reference screenshots
<root>/data/<id>/metadata.json    optional (resolution fallback)
<root>/data/<id>/reference/       optional step_<k>.json reference data
```
(the ``data`` folder is named after the jsonl file's stem).

``load_dataset`` is the fast path used by every scoring job; ``validate_dataset``
checks every file and reports all problems as data.
"""

from evaluator.dataset.files import Limits
from evaluator.dataset.model import (
    ACTION_TYPES,
    AFTER_ACTION,
    DEFAULT_RESOLUTION,
    FLAGGED,
    UNKNOWN,
    Action,
    Dataset,
    DatasetError,
    Task,
    UnknownTaskError,
)
from evaluator.dataset.problems import Problem
from evaluator.dataset.report import Report, validate_dataset
from evaluator.dataset.store import append_record, load_dataset, render_jsonl, write_dataset

__all__ = [
    "ACTION_TYPES", "AFTER_ACTION", "DEFAULT_RESOLUTION", "FLAGGED", "UNKNOWN",
    "Action", "Dataset", "DatasetError", "Limits", "Problem", "Report", "Task", "UnknownTaskError",
    "append_record", "load_dataset", "render_jsonl", "validate_dataset", "write_dataset",
]
