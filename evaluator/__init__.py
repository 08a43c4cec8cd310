"""IWR-Bench evaluator: reads task sets, takes submission bundles, replays and scores them.

Pure Python: this package never imports Django and has no side effects at import time.
"""

__version__ = "0.2.0"
