"""Bounded memos: the per-function dicts the planner keeps per call class."""

MEMO_LIMIT = 4096  # call classes (and class pairs) kept per function; past it the memo restarts


def remember(memo: dict, key, value) -> None:
    """memo[key] = value, emptying the memo first once it holds MEMO_LIMIT entries."""
    if len(memo) >= MEMO_LIMIT:
        memo.clear()
    memo[key] = value
