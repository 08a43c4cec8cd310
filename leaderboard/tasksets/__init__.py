"""Task sets on the server: importing datasets, storing task files, building job datasets
and exposing a task's public inputs.

storage    where task files live (TASKS_ROOT/<set>/<split>/<key>/), hashing, moving, job datasets
importing  all-or-nothing, idempotent import of a dataset; re-authoring a task from its script
public     the whitelist of public files, display rows, input downloads, list filters and the
           published tasks of a split (what a submission to it is scored on)

Callers use the names re-exported here (``from leaderboard import tasksets``).
"""

from leaderboard.tasksets.importing import ImportSummary, default_slug, import_dataset, reauthor_task
from leaderboard.tasksets.public import (
    FILTERS,
    PublicFiles,
    action_rows,
    checkpoint_captions,
    dev_actions,
    facets,
    filter_problems,
    filter_tasks,
    in_natural_order,
    inputs_zip,
    natural_key,
    public_dirs,
    public_file_path,
    public_files,
    public_info,
    public_tasks,
    split_inputs_zip,
    split_task_keys,
    split_tasks,
    staff_files,
    task_inputs_zip,
)
from leaderboard.tasksets.storage import (
    TaskImportError,
    delete_task_files,
    iter_task_files,
    move_task,
    remove_job_dataset,
    staff_file_path,
    task_digest,
    tasks_root,
    write_job_dataset,
)

__all__ = [
    "FILTERS", "ImportSummary", "PublicFiles", "TaskImportError", "action_rows", "checkpoint_captions",
    "default_slug", "delete_task_files", "dev_actions", "facets", "filter_problems", "filter_tasks", "import_dataset",
    "in_natural_order", "inputs_zip", "iter_task_files", "move_task", "natural_key", "public_dirs",
    "public_file_path", "public_files", "public_info", "public_tasks", "reauthor_task", "remove_job_dataset",
    "split_inputs_zip", "split_task_keys", "split_tasks",
    "staff_file_path", "staff_files", "task_digest", "task_inputs_zip", "tasks_root",
    "write_job_dataset",
]
