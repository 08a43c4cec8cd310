"""The bounded memory behind the judge's decoded screenshots, its pixel changes and the OCR readings."""

import threading

import pytest

from evaluator.memo import BoundedMemo


def test_it_drops_the_least_recently_used_entry_past_its_count():
    memo = BoundedMemo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a") == 1  # "a" is now the most recent
    memo.put("c", 3)
    assert memo.get("b") is None and memo.get("a") == 1 and memo.get("c") == 3 and len(memo) == 2


def test_it_keeps_falsy_values():
    memo = BoundedMemo(4)
    memo.put("none-changed", 0.0)
    assert memo.get("none-changed") == 0.0


def test_it_bounds_the_total_size_and_skips_a_value_too_big_alone():
    memo = BoundedMemo(10, max_size=10, size_of=len)
    memo.put("a", "xxxx")
    memo.put("b", "yyyy")
    memo.put("c", "zzzz")  # 12 > 10: the oldest goes
    assert memo.get("a") is None and memo.total_size() == 8
    memo.put("huge", "h" * 11)
    assert memo.get("huge") is None and memo.get("b") == "yyyy" and memo.get("c") == "zzzz"
    memo.clear()
    assert len(memo) == 0 and memo.total_size() == 0


def test_a_size_bound_needs_a_size_function():
    with pytest.raises(ValueError, match="size_of"):
        BoundedMemo(3, max_size=100)


def test_threads_share_it_without_losing_its_bound():
    memo = BoundedMemo(50)

    def work(offset):
        for i in range(2000):
            memo.put((offset, i), i)
            memo.get((offset, i - 1))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(memo) == 50
