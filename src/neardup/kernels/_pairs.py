"""Compiled verification: where a document's own units lie around what it shares with
another (its placement), and whether any of some shingles is shared and not chrome.

Exactly the numbers :mod:`neardup.engine.verify` computes with numpy, with the template
guards of :mod:`neardup.engine.templates` (the reference the tests compare with):
the unions of shingle intervals are walked in one pass over the shingles instead of being
built as arrays.

A template guard reaches a kernel as a kind and its arrays: ``0`` none; ``1`` a count table
(:class:`~neardup.engine.templates.CommonShingles`: ``counts``, ``limit``); ``2`` the slots
that became seen and common and when (:class:`~neardup.engine.templates.TemplateTable`:
``slot_ids``, ``firsts``, ``seconds``, ``at``); ``3`` a flag per shingle, worked out
beforehand (``mask``). With kinds 1 and 2, ``passage`` > 0 makes every run of that many
shingles seen in two stories chrome too (:func:`~neardup.engine.templates.passages`).
"""

from __future__ import annotations

import numpy as np

from ._jit import jit

__all__ = ["any_shared", "placement"]

_SHIFT = np.uint32(6)  # templates.SLOT_BITS = 26 of the 32 bits of a code
_PASSAGE_STORIES = 2  # templates.PASSAGE_STORIES
_PASSAGE_REST = 0.25  # templates.PASSAGE_REST


@jit
def _chrome(codes, kind, counts, limit, slot_ids, firsts, seconds, at, passage, mask):
    """Which of a text's ``codes`` (in text order) are chrome for the guard: common, or in
    a passage of ``passage`` seen shingles. The count table is large, and lookups that do
    not wait on one another overlap in a tight loop."""
    size = len(codes)
    out = np.zeros(size, dtype=np.bool_)
    if kind == 0:
        return out
    if kind == 3:
        for i in range(size):
            out[i] = mask[i]
        return out
    seen = np.zeros(size if passage > 0 else 0, dtype=np.bool_)
    if kind == 1:
        for i in range(size):
            c = counts[codes[i] >> _SHIFT]
            out[i] = c >= limit
            if passage > 0:
                seen[i] = c >= _PASSAGE_STORIES
    else:
        for i in range(size):
            s = np.int64(codes[i] >> _SHIFT)
            j = np.searchsorted(slot_ids, s)
            if j < len(slot_ids) and slot_ids[j] == s:
                out[i] = firsts[j] < at
                if passage > 0:
                    seen[i] = seconds[j] < at
    if passage > 0 and size >= passage:
        inside = 0  # shingles in passages
        start = 0
        for i in range(size + 1):
            if i < size and seen[i]:
                continue
            if i - start >= passage:
                inside += i - start
            start = i + 1
        if size - inside >= _PASSAGE_REST * size:
            start = 0
            for i in range(size + 1):
                if i < size and seen[i]:
                    continue
                if i - start >= passage:
                    for k in range(start, i):
                        out[k] = True
                start = i + 1
    return out


@jit
def _found(mine, theirs, out):
    """``out[k]``: whether ``mine[k]`` is in ``theirs`` (both sorted and distinct)."""
    a, b = len(mine), len(theirs)
    if b > 8 * a:  # a short text against a long one: a binary search each
        for k in range(a):
            j = np.searchsorted(theirs, mine[k])
            out[k] = j < b and theirs[j] == mine[k]
        return
    j = 0
    for k in range(a):
        c = mine[k]
        while j < b and theirs[j] < c:
            j += 1
        out[k] = j < b and theirs[j] == c


@jit
def placement(
    codes,  # uint32: the document's shingle codes, in text order
    n,  # its units
    index,  # where each code is in ``vocab`` (or empty: look each code up in ``other``)
    vocab,  # the document's sorted distinct codes
    other,  # the other document's sorted distinct codes
    cjk_width,
    word_width,
    kind,
    counts,
    limit,
    slot_ids,
    firsts,
    seconds,
    at,
    passage,
    mask,
):
    """(head, tail, gap, total, shared, first, last): the document's
    :class:`~neardup.engine.verify.Placement` and the first and last of its units inside a
    shingle ``other`` has too that is not chrome ((1, 0) when none is)."""
    size = len(codes)
    if size == 0 or len(other) == 0:
        return n, 0, 0, n, 0, 1, 0
    use_index = len(index) == size
    found = np.empty(len(vocab) if use_index else 0, dtype=np.bool_)
    if use_index:
        _found(vocab, other, found)
    total_closed = 0  # units of the own runs (not chrome) before the current one
    c_begin = -1
    c_reach = -1
    s_begin = -1
    s_reach = -1
    run_before = 0  # total_closed and c_begin when the current shared run began
    run_begin = 0
    head = 0
    gap = 0
    shared_units = 0
    first = -1
    chrome = _chrome(codes, kind, counts, limit, slot_ids, firsts, seconds, at, passage, mask)
    for i in range(size):
        code = codes[i]
        if chrome[i]:
            continue
        e = i + (cjk_width if code & np.uint32(1) else word_width)
        if e > n:
            e = n
        if c_reach < 0 or i > c_reach:  # a new run of own units
            if c_reach >= 0:
                total_closed += c_reach - c_begin
            c_begin = i
            c_reach = e
        elif e > c_reach:
            c_reach = e
        if use_index:
            hit = found[index[i]]
        else:
            j = np.searchsorted(other, code)
            hit = j < len(other) and other[j] == code
        if not hit:
            continue
        if first < 0:
            first = i
        if s_reach < 0 or i > s_reach:  # a new run of shared units
            counted = total_closed + i - c_begin
            if s_reach >= 0:
                shared_units += s_reach - s_begin
                stop = run_before + s_reach - run_begin
                if counted - stop > gap:
                    gap = counted - stop
            else:
                head = counted
            s_begin = i
            s_reach = e
            run_before = total_closed
            run_begin = c_begin
        elif e > s_reach:
            s_reach = e
    if c_reach < 0:
        return 0, 0, 0, 0, 0, 1, 0
    total = total_closed + c_reach - c_begin
    if s_reach < 0:
        return total, 0, 0, total, 0, 1, 0
    shared_units += s_reach - s_begin
    stop = run_before + s_reach - run_begin
    return head, total - stop, gap, total, shared_units, first, s_reach - 1


@jit
def any_shared(
    codes, upto, vocab, kind, counts, limit, slot_ids, firsts, seconds, at, passage, mask
):
    """Whether any of the first ``upto`` of a text's ``codes`` is in the sorted ``vocab``
    and not chrome (the codes after them only tell how far a passage of chrome runs)."""
    chrome = _chrome(codes, kind, counts, limit, slot_ids, firsts, seconds, at, passage, mask)
    for i in range(min(upto, len(codes))):
        c = codes[i]
        j = np.searchsorted(vocab, c)
        if j < len(vocab) and vocab[j] == c and not chrome[i]:
            return True
    return False
