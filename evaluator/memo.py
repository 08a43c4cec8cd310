"""A small thread-safe memory of recent results, bounded in entries and optionally in size.

The judge's decoded screenshots, its reference pixel changes and the OCR readings each keep the
last results they computed; the scoring thread and the visual-checkpoint thread share them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any


class BoundedMemo:
    """Least recently used entries first out, past ``max_entries`` or past ``max_size`` in total.

    ``size_of`` gives a value's size (for ``max_size``); a value larger than ``max_size`` on its own
    is not kept at all.
    """

    def __init__(self, max_entries: int, max_size: int | None = None,
                 size_of: Callable[[Any], int] | None = None):
        if max_size is not None and size_of is None:
            raise ValueError("max_size needs size_of")
        self.max_entries, self.max_size, self.size_of = max_entries, max_size, size_of
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        """The value kept for ``key`` (now the most recent), or None."""
        with self._lock:
            if key not in self._entries:
                return None
            self._entries.move_to_end(key)
            return self._entries[key]

    def put(self, key: Hashable, value: Any) -> None:
        if self.max_size is not None and self.size_of(value) > self.max_size:
            return
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries or self._over_size():
                self._entries.popitem(last=False)

    def total_size(self) -> int:
        with self._lock:
            return self._size()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def _over_size(self) -> bool:
        return self.max_size is not None and self._size() > self.max_size

    def _size(self) -> int:
        return sum(self.size_of(value) for value in self._entries.values()) if self.size_of else 0
