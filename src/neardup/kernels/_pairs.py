"""Compiled verification: where a document's own units lie around what it shares with
another (its placement), and whether any of some shingles is shared and not chrome.

Exactly the numbers :mod:`neardup.engine.verify` computes with numpy, with the template
guards of :mod:`neardup.engine.templates` (the reference the tests compare with):
the unions of shingle intervals are walked in one pass over the shingles instead of being
built as arrays.

A template guard reaches a kernel as a kind and its arrays: ``0`` none; ``1`` a count table
(:class:`~neardup.engine.templates.CommonShingles`: ``counts``, ``limit``); ``2`` the slots
that became seen and common and when (:class:`~neardup.engine.templates.TemplateTable`:
``slot_ids``, ``firsts``, ``seconds``, ``at``, and in ``counts`` its bucket index, or one
value for none); ``3`` a flag per shingle, worked out
beforehand (``mask``). With kinds 1 and 2, ``passage`` > 0 makes every run of that many
shingles seen in two stories chrome too (:func:`~neardup.engine.templates.passages`).
"""

from __future__ import annotations

import numpy as np

from ._hash import chained, table_size
from ._jit import jit, prefetch
from ._sketch import _CJK, _WORD, unit_class

__all__ = [
    "align_shared",
    "alike_rows",
    "any_shared",
    "changed_number",
    "count_story",
    "count_story_turning",
    "nearest_known",
    "nonzero_slots",
    "placement",
    "quoted_units",
    "sampled_statuses",
    "sorted_overlap",
    "unit_chars",
    "unquoted_placement",
]

_SHIFT = np.uint32(6)  # templates.SLOT_BITS = 26 of the 32 bits of a code
_BUCKET_SHIFT = np.int64(6)  # templates.BUCKET_SHIFT: a bucket of the index is 2^6 slots
_PASSAGE_STORIES = 2  # templates.PASSAGE_STORIES
_PASSAGE_REST = 0.25  # templates.PASSAGE_REST
#: how many codes ahead of the one a loop looks up in a count table it asks for
#: (:func:`~neardup.kernels._jit.prefetch`)
_AHEAD = 16
#: and how many pairs ahead a loop over pairs of rows asks for a row
_AHEAD_ROWS = 8


@jit
def _chrome(codes, kind, counts, limit, slot_ids, firsts, seconds, at, passage, mask):
    """Which of a text's ``codes`` (in text order) are chrome for the guard: common, or in
    a passage of ``passage`` seen shingles (a new array: see :func:`_chrome_into`)."""
    size = len(codes)
    flags = np.zeros(2 * size, dtype=np.bool_)
    out = flags[:size]
    _chrome_into(codes, kind, counts, limit, slot_ids, firsts, seconds, at, passage, mask, flags)
    return out


@jit
def _chrome_into(codes, kind, counts, limit, slot_ids, firsts, seconds, at, passage, mask, flags):
    """:func:`_chrome` into ``flags[:size]`` (``size``: the codes), with ``flags[size:2 *
    size]`` to work in; ``flags`` all False. The count table is large, and lookups that do
    not wait on one another overlap in a tight loop. (A placement's arrays come from one
    allocation: in a run that holds gigabytes, each allocation of its own cost the kernel
    an eighth of its time in ``malloc``.)"""
    size = len(codes)
    out = flags[:size]
    if kind == 0:
        return
    if kind == 3:
        for i in range(size):
            out[i] = mask[i]
        return
    seen = flags[size : 2 * size]
    if kind == 1:
        _ask_first(counts, codes)
        for i in range(size):
            if i + _AHEAD < size:
                prefetch(counts, codes[i + _AHEAD] >> _SHIFT)
            c = counts[codes[i] >> _SHIFT]
            out[i] = c >= limit
            if passage > 0:
                seen[i] = c >= _PASSAGE_STORIES
    else:
        for i in range(size):
            s = np.int64(codes[i] >> _SHIFT)
            j = _slot_at(s, counts, slot_ids)
            if j < len(slot_ids) and slot_ids[j] == s:
                out[i] = firsts[j] < at
                if passage > 0:
                    seen[i] = seconds[j] < at
    if passage > 0 and size >= passage:
        _passages(seen, passage, out)


@jit
def _ask_first(table, codes):
    """Ask for the slots of the first :data:`_AHEAD` of ``codes`` in ``table`` (a loop over
    them then asks for each slot that many codes ahead)."""
    for i in range(min(len(codes), _AHEAD)):
        prefetch(table, codes[i] >> _SHIFT)


@jit
def _passages(seen, passage, out):
    """Mark as chrome in ``out`` the passages — runs of at least ``passage`` ``seen``
    shingles — unless they hold more than ``1 - _PASSAGE_REST`` of the text. One pass
    counts the shingles in them (the run's length kept without a branch on each shingle:
    only the end of a long enough run, rare, is a branch taken), and a second marks them
    when they are to be marked."""
    size = len(seen)
    inside = 0  # shingles in passages
    run = 0
    for i in range(size):
        s = np.int64(seen[i])
        if s == 0 and run >= passage:
            inside += run
        run = (run + 1) * s
    if run >= passage:
        inside += run
    if inside == 0 or size - inside < _PASSAGE_REST * size:
        return
    run = 0
    for i in range(size + 1):
        s = np.int64(seen[i]) if i < size else np.int64(0)
        if s == 0 and run >= passage:
            for k in range(i - run, i):
                out[k] = True
        run = (run + 1) * s


@jit
def _found(mine, theirs, out):
    """``out[k]``: whether ``mine[k]`` is in ``theirs`` (both sorted and distinct)."""
    a, b = len(mine), len(theirs)
    if b > 8 * a:  # a short text against a long one: a binary search each
        for k in range(a):
            j = np.searchsorted(theirs, mine[k])
            out[k] = j < b and theirs[j] == mine[k]
        return
    # one merge without a branch on the codes (which side steps on is as often one as the
    # other where two texts share half their shingles, and a mispredicted branch costs more
    # than the step): out[k] is written again until k moves on, last with its answer
    k = 0
    j = 0
    while k < a and j < b:
        x = mine[k]
        y = theirs[j]
        out[k] = x == y
        k += x <= y
        j += y <= x
    while k < a:  # past the end of theirs
        out[k] = False
        k += 1


@jit
def _found_vocab(index, vocab, other, size, flags):
    """Whether each of a text's sorted distinct codes (``vocab``) is in ``other``, when the
    text is read through its vocabulary ``index`` (as long as its ``size`` codes), in
    ``flags[2 * size:]`` (as long as ``vocab``); else empty (each code is looked up by
    :func:`_shared_at`)."""
    found = flags[2 * size : 2 * size + (len(vocab) if len(index) == size else 0)]
    if len(index) == size:
        _found(vocab, other, found)
    return found


@jit
def _flags_in(spare, size, vocab):
    """The flags a placement of ``size`` codes works in, taken from ``spare`` when it is
    long enough (see :func:`placement`), else new: the chrome and the seen, all False
    (:func:`_chrome_into`), then whether each of ``vocab`` is found (:func:`_found_vocab`)."""
    want = 2 * size + len(vocab)
    if len(spare) < want:
        return np.zeros(want, dtype=np.bool_)
    flags = spare[:want]
    flags[: 2 * size] = False
    return flags


@jit
def _shared_at(i, code, found, index, other):
    """Whether the text's ``i``-th shingle ``code`` is in ``other`` (``found``: see
    :func:`_found_vocab`)."""
    if len(found) > 0:
        return found[index[i]]
    j = np.searchsorted(other, code)
    return j < len(other) and other[j] == code


@jit
def _end(i, code, n, cjk_width, word_width):
    """One past the last unit of the shingle ``code`` starting at unit ``i`` of ``n``."""
    e = i + (cjk_width if code & np.uint32(1) else word_width)
    return n if e > n else e


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
    spare_codes,  # uint32: where the codes are made when ``codes`` is empty
    spare_flags,  # bool: the flags worked in (2 * the codes + the vocabulary)
):
    """(head, tail, gap, total, shared, first, last, holes): the document's
    :class:`~neardup.engine.verify.Placement`, the first and last of its units inside a
    shingle ``other`` has too that is not chrome ((1, 0) when none is), and whether some of
    its units lie outside every shingle it shares with ``other``, chrome or not, between
    units inside one (what :func:`changed_number` reads: without such units no number
    changed). ``codes`` may be empty when ``index`` is given: they are ``vocab[index]``.
    It works in ``spare_codes`` and ``spare_flags`` where they are long enough, arrays
    the caller keeps from one call to the next: in a run that holds gigabytes, allocating
    them anew cost the kernel an eighth of its time in ``malloc``."""
    codes = _in_order_into(codes, index, vocab, spare_codes)
    size = len(codes)
    if size == 0 or len(other) == 0:
        return n, 0, 0, n, 0, 1, 0, False
    flags = _flags_in(spare_flags, size, vocab)
    found = _found_vocab(index, vocab, other, size, flags)
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
    reach = -1  # one past the last unit the shared shingles so far cover, chrome or not
    holes = False
    _chrome_into(codes, kind, counts, limit, slot_ids, firsts, seconds, at, passage, mask, flags)
    chrome = flags[:size]
    for i in range(size):
        code = codes[i]
        # (the shared lookup is made in each branch: made once before them, for every
        # shingle, the loop ran three times slower — docs/measurements.md, Scaling)
        if chrome[i]:
            if _shared_at(i, code, found, index, other):
                e = _end(i, code, n, cjk_width, word_width)
                holes |= i > reach >= 0
                reach = max(reach, e)
            continue
        e = _end(i, code, n, cjk_width, word_width)
        if c_reach < 0 or i > c_reach:  # a new run of own units
            if c_reach >= 0:
                total_closed += c_reach - c_begin
            c_begin = i
            c_reach = e
        elif e > c_reach:
            c_reach = e
        if not _shared_at(i, code, found, index, other):
            continue
        holes |= i > reach >= 0
        reach = max(reach, e)
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
        return 0, 0, 0, 0, 0, 1, 0, holes
    total = total_closed + c_reach - c_begin
    if s_reach < 0:
        return total, 0, 0, total, 0, 1, 0, holes
    shared_units += s_reach - s_begin
    stop = run_before + s_reach - run_begin
    return head, total - stop, gap, total, shared_units, first, s_reach - 1, holes


@jit
def _in_order_into(codes, index, vocab, spare):
    """:func:`_in_order`, made in ``spare`` when it is made and ``spare`` is long enough."""
    if len(codes) > 0 or len(index) == 0:
        return codes
    if len(spare) < len(index):
        return _in_order(codes, index, vocab)
    out = spare[: len(index)]
    for i in range(len(index)):
        out[i] = vocab[index[i]]
    return out


@jit
def _in_order(codes, index, vocab):
    """A text's shingle codes in text order: ``codes``, or when that is empty and ``index``
    is not, ``vocab[index]`` (a kept sketch holds only its vocabulary and index)."""
    if len(codes) > 0 or len(index) == 0:
        return codes
    out = np.empty(len(index), dtype=vocab.dtype)
    for i in range(len(index)):
        out[i] = vocab[index[i]]
    return out


@jit
def _seen_at(code, kind, counts, limit, slot_ids, firsts, seconds, at):
    """(common, seen) for one shingle code and a guard of kind 1 or 2 (see :func:`_chrome`)."""
    if kind == 1:
        c = counts[code >> _SHIFT]
        return c >= limit, c >= _PASSAGE_STORIES
    s = np.int64(code >> _SHIFT)
    j = _slot_at(s, counts, slot_ids)
    if j < len(slot_ids) and slot_ids[j] == s:
        return firsts[j] < at, seconds[j] < at
    return False, False


@jit
def _slot_at(s, starts, slot_ids):
    """Where slot ``s`` is, or would be, in the sorted ``slot_ids``: searched in its bucket
    of ``starts`` (a guard of kind 2's bucket index, :func:`slot_buckets`; a binary search
    of a large table waits on memory at every step), or in all of them without one."""
    if len(starts) > 1:
        b = s >> _BUCKET_SHIFT
        lo = np.int64(starts[b])
        hi = np.int64(starts[b + 1])
        while lo < hi and slot_ids[lo] < s:
            lo += 1
        return lo
    return np.searchsorted(slot_ids, s)


@jit
def any_shared(
    codes,
    index,
    own,
    upto,
    vocab,
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
    """Whether any of the first ``upto`` of a text's shingle codes (``codes``, or when that
    is empty ``own[index]``) is in the sorted ``vocab`` and not chrome. Whether a shingle
    is chrome is looked up for the shingles found only, and the whole text's chrome worked
    out only when one of them lies in a run of ``passage`` seen shingles (whether the run
    is a passage of chrome depends on the rest of the text)."""
    given = len(codes) > 0
    size = len(codes) if given else len(index)
    chrome = np.zeros(0, dtype=np.bool_)
    whole = False
    for i in range(min(upto, size)):
        c = codes[i] if given else own[index[i]]
        j = np.searchsorted(vocab, c)
        if not (j < len(vocab) and vocab[j] == c):
            continue
        if kind == 0:
            return True
        if kind == 3:
            if not mask[i]:
                return True
            continue
        if whole:
            if not chrome[i]:
                return True
            continue
        common, seen = _seen_at(c, kind, counts, limit, slot_ids, firsts, seconds, at)
        if common:
            continue
        if passage <= 0 or not seen:
            return True
        # is it in a run of ``passage`` seen shingles?
        lo = i
        while lo > 0:
            p = codes[lo - 1] if given else own[index[lo - 1]]
            if not _seen_at(p, kind, counts, limit, slot_ids, firsts, seconds, at)[1]:
                break
            lo -= 1
        hi = i + 1
        while hi < size and hi - lo < passage:
            p = codes[hi] if given else own[index[hi]]
            if not _seen_at(p, kind, counts, limit, slot_ids, firsts, seconds, at)[1]:
                break
            hi += 1
        if hi - lo < passage:
            return True
        chrome = _chrome(
            _in_order(codes, index, own), kind, counts, limit, slot_ids, firsts, seconds,
            at, passage, mask,
        )  # fmt: skip
        whole = True
        if not chrome[i]:
            return True
    return False


@jit
def alike_rows(light, a, b):
    """For each pair of rows (``a[k]``, ``b[k]``) of ``light`` (one light signature a row),
    the share of their values that are equal (what ``decide.alike`` gives for
    ``light[a]``, ``light[b]``), without gathering the rows. The pairs come sorted by
    ``a``, so the rows of ``b`` lie anywhere in the table: each is asked for
    :data:`_AHEAD_ROWS` pairs before it is read (4.4 million pairs of 192,000 rows: 0.24 ->
    0.13 s)."""
    width = light.shape[1]
    line = max(1, 64 // light.itemsize)  # the values of a row in a cache line of 64 bytes
    out = np.empty(len(a), dtype=np.float64)
    for k in range(len(a)):
        if k + _AHEAD_ROWS < len(a):  # ``b``'s rows lie anywhere in the table: asked ahead
            ahead = light[b[k + _AHEAD_ROWS]]
            for t in range(0, width, line):
                prefetch(ahead, t)
        x = light[a[k]]
        y = light[b[k]]
        same = 0
        for t in range(width):
            if x[t] == y[t]:
                same += 1
        out[k] = same / width
    return out


@jit
def top_per_later(later, earlier, likeness, k, out):
    """``decide.to_verify`` for pairs sorted by ``later``, then ``earlier`` (what the LSH
    join gives): sets ``out`` for each later document's ``k`` most alike candidates, the
    earliest on ties, and returns True; returns False, ``out`` untouched, for pairs not so
    sorted or a likeness that is NaN (the caller then ranks them by sorting)."""
    n = len(later)
    for t in range(n):
        if likeness[t] != likeness[t]:
            return False
        if t > 0 and (
            later[t] < later[t - 1] or (later[t] == later[t - 1] and earlier[t] <= earlier[t - 1])
        ):
            return False
    if k <= 0:
        return True
    best = np.empty(k, dtype=np.int64)  # the group's best so far, most alike first
    start = 0
    while start < n:
        end = start + 1
        while end < n and later[end] == later[start]:
            end += 1
        if end - start <= k:
            for t in range(start, end):
                out[t] = True
        else:
            size = 0
            for t in range(start, end):  # earlier ascending: a tie keeps the one before
                v = likeness[t]
                if size == k and v <= likeness[best[k - 1]]:
                    continue
                at = size if size < k else k - 1
                while at > 0 and likeness[best[at - 1]] < v:
                    best[at] = best[at - 1]
                    at -= 1
                best[at] = t
                if size < k:
                    size += 1
            for r in range(size):
                out[best[r]] = True
        start = end
    return True


@jit
def count_story(counts, codes):
    """One more story for the slot of each of ``codes`` in the count table ``counts``
    (saturating at 255), a slot that several codes share counted once: what
    :meth:`~neardup.engine.templates.CommonShingles.add` does with numpy (every count read
    before any is written, as a fancy-index assignment does)."""
    old = np.empty(len(codes), dtype=np.uint8)
    _ask_first(counts, codes)
    for i in range(len(codes)):  # the reads do not wait on one another
        if i + _AHEAD < len(codes):
            prefetch(counts, codes[i + _AHEAD] >> _SHIFT)
        old[i] = counts[codes[i] >> _SHIFT]
    for i in range(len(codes)):
        c = old[i]
        if c < 255:
            counts[codes[i] >> _SHIFT] = c + 1


@jit
def count_story_turning(counts, fresh, codes):
    """One more story for the slot of each of ``codes`` in this turn's table ``fresh`` and
    in ``counts`` (each saturating at 255, a slot that several codes share counted once):
    what :meth:`~neardup.engine.templates.CommonShingles.add` does with numpy for a guard
    with a window (``fresh`` may be ``counts`` itself: the first turn). Returns how many of
    ``fresh``'s counts went up."""
    old = np.empty(len(codes), dtype=np.uint8)
    _ask_first(fresh, codes)
    _ask_first(counts, codes)
    for i in range(len(codes)):  # and the slots of ``counts``, read in the second loop
        if i + _AHEAD < len(codes):
            prefetch(fresh, codes[i + _AHEAD] >> _SHIFT)
            prefetch(counts, codes[i + _AHEAD] >> _SHIFT)
        old[i] = fresh[codes[i] >> _SHIFT]
    added = 0
    for i in range(len(codes)):
        s = codes[i] >> _SHIFT
        f = old[i]
        if f < 255 and fresh[s] == f:  # not yet counted for this story
            c = counts[s]  # first, for when fresh is counts: it is then f
            if c < 255:
                counts[s] = c + 1
            fresh[s] = f + 1
            added += 1
    return added


@jit
def nonzero_slots(counts, n):
    """The slots of a count table whose counts are not zero, in order (``n`` of them, as
    ``np.count_nonzero`` says: ``np.flatnonzero(counts)``, in one pass without a branch,
    about 4x quicker on a table of 2^26 slots; a wrong ``n`` never writes past the array)."""
    out = np.empty(n + 1, dtype=np.int64)
    k = 0
    for i in range(len(counts)):
        out[min(k, n)] = i
        k += counts[i] != 0
    return out[: min(k, n)]


_NEWLINE = 10
_SPACE = 32
_TAB = 9
_QUOTE = 62  # ">"


@jit
def quoted_units(cp, classes, astral_words, n):
    """Which of a text's first ``n`` units (``cp``: its code points) lie on a quoted line —
    one whose first character after spaces and tabs is ``>`` — as
    :func:`neardup.engine.verify.quoted_units` says; units past the text's end are not
    quoted. ``classes`` is the class table of the BMP, ``astral_words`` the sorted code
    points beyond it that are letters or digits (not CJK)."""
    out = np.zeros(n + 1, dtype=np.bool_)
    u = 0  # the units so far
    quoted = False
    opening = True  # still in the spaces and tabs that open the line
    for i in range(len(cp)):
        if u >= n:
            break
        c = cp[i]
        # the BMP's table read here: a call per character is not inlined (5x slower)
        k = classes[c] if c < 0x10000 else unit_class(c, classes, astral_words)
        # without a branch on the character (a fifth to a quarter quicker): a line's first
        # character but spaces and tabs says whether it is quoted, and a line break starts
        # a line (a line's units all come at or after its first character)
        nl = c == _NEWLINE
        first = opening & (c != _SPACE) & (c != _TAB) & (not nl)
        quoted = (quoted & (not first)) | (first & (c == _QUOTE))
        opening = nl | (opening & (not first))
        out[u] = quoted  # a unit's, unless a unit comes later: then it is written again
        u += np.int64((k == _WORD) | (k == _CJK))  # a letter, digit or CJK character
    out[u] = False  # past the last unit
    return out[:n]


@jit
def own_vocab(cp, classes, astral_words, index, vocab):
    """The codes of ``vocab`` (a text's sorted distinct shingle codes) that some shingle
    starting on a line that is not quoted has (``index``: where each of its shingles, in
    text order, is in ``vocab``; ``cp`` its code points): the story's own codes, as
    :func:`neardup.engine.decide.story_codes` says."""
    quoted = quoted_units(cp, classes, astral_words, len(index))
    keep = np.zeros(len(vocab), dtype=np.bool_)
    kept = 0
    for i in range(len(index)):
        if not quoted[i] and not keep[index[i]]:
            keep[index[i]] = True
            kept += 1
    out = np.empty(kept, dtype=vocab.dtype)
    j = 0
    for k in range(len(vocab)):
        if keep[k]:
            out[j] = vocab[k]
            j += 1
    return out


@jit
def unit_chars(cp, classes, astral_words, first, last):
    """Where a text's units ``first`` and ``last`` are (``cp``: its code points): the
    index of each one's character, each unit past the text's last taken as its last
    (``shingling.unit_offsets(text)[min(k, len - 1)]``); (-1, -1) when it has no units."""
    u = 0
    lo = -1
    hi = -1
    for i in range(len(cp)):
        c = cp[i]
        k = classes[c] if c < 0x10000 else unit_class(c, classes, astral_words)
        if k == _WORD or k == _CJK:  # a letter, digit or CJK character
            if u <= first:
                lo = i
            if u <= last:
                hi = i
            if u >= first and u >= last:
                break
            u += 1
    return lo, hi


@jit
def changed_number(
    codes,  # uint32: the later document's shingle codes, in text order
    n,  # its units
    index,  # where each code is in ``vocab`` (or empty: look each code up in ``other``)
    vocab,  # its sorted distinct codes
    other,  # the earlier document's sorted distinct codes
    cjk_width,
    word_width,
    cp,  # the later document's text, as code points
    classes,
    astral_words,
    numeral,  # bool by BMP code point: a numeral
    spare_codes,  # as :func:`placement`'s
    spare_flags,
):
    """Whether a run of the later document's units that ``other`` does not cover, between
    units it covers, is all numerals (:func:`neardup.engine.verify.numbers_kept`'s changed
    numbers, before it sets aside those on labelled lines): one pass over the text, each
    unit covered when a shared shingle starting at or before it reaches past it. ``codes``
    may be empty when ``index`` is given: they are ``vocab[index]``."""
    codes = _in_order_into(codes, index, vocab, spare_codes)
    size = len(codes)
    if size == 0 or len(other) == 0:
        return False
    found = _found_vocab(index, vocab, other, size, _flags_in(spare_flags, size, vocab))
    reach = 0  # one past the last unit the shared shingles so far cover
    u = 0  # the units so far
    seen = False  # a covered unit so far
    run = 0  # units of the current run not covered (after a covered one)
    numerals = True  # and whether they are all numerals
    for i in range(len(cp)):
        if u >= n:
            break
        c = cp[i]
        k = classes[c] if c < 0x10000 else unit_class(c, classes, astral_words)
        if k != _WORD and k != _CJK:
            continue
        if u < size and _shared_at(u, codes[u], found, index, other):
            e = _end(u, codes[u], n, cjk_width, word_width)
            if e > reach:
                reach = e
        if reach > u:  # covered
            if run > 0 and numerals:
                return True
            seen = True
            run = 0
            numerals = True
        elif seen:
            run += 1
            numerals = numerals and c < 0x10000 and numeral[c]
        u += 1
    return False


@jit
def unquoted_placement(
    codes,  # uint32: the document's shingle codes, in text order (or empty: vocab[index])
    n,  # its units
    index,
    vocab,
    quoted,  # which of its units lie on quoted lines
    other,  # the other document's sorted distinct codes
    short_units,
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
    spare_codes,  # as :func:`placement`'s
    spare_flags,
):
    """(head, tail, gap, total, shared) of the document's units that are its own — not
    quoted, inside a shingle that is not chrome — against ``other``, counted in those
    units, as :func:`neardup.engine.verify._unquoted` works it out; total -1 when fewer
    than ``short_units`` such units are left. ``codes`` (or ``index``) must not be empty."""
    codes = _in_order_into(codes, index, vocab, spare_codes)
    size = len(codes)
    flags = _flags_in(spare_flags, size, vocab)
    _chrome_into(codes, kind, counts, limit, slot_ids, firsts, seconds, at, passage, mask, flags)
    chrome = flags[:size]
    found = _found_vocab(index, vocab, other, size, flags)
    rare_reach = 0  # one past the last unit inside a shingle not chrome so far
    shared_reach = 0  # ... inside one that ``other`` has too
    total = 0
    hits = 0
    first = -1
    last = -1
    gap = 0
    for u in range(n):
        if u < size and not chrome[u]:
            code = codes[u]
            e = _end(u, code, n, cjk_width, word_width)
            if e > rare_reach:
                rare_reach = e
            if e > shared_reach and _shared_at(u, code, found, index, other):
                shared_reach = e
        if u >= rare_reach or quoted[u]:
            continue
        if u < shared_reach:
            if first < 0:
                first = total
            elif total - last - 1 > gap:
                gap = total - last - 1
            last = total
            hits += 1
        total += 1
    if total < short_units:
        return 0, 0, 0, -1, 0
    if hits == 0:
        return total, 0, 0, total, 0
    return first, total - 1 - last, gap, total, hits


@jit
def nearest_known(known, n):
    """For each of positions 0..n-1, the index in ``known`` (ascending, not empty) of the
    nearest known position, the earlier on ties: ``engine.compact._nearest``, in one walk."""
    out = np.empty(n, dtype=np.int64)
    size = len(known)
    r = 0  # the first index whose position is not before p
    for p in range(n):
        while r < size and known[r] < p:
            r += 1
        left = r - 1 if r > 0 else 0
        right = r if r < size else size - 1
        out[p] = left if p - known[left] <= known[right] - p else right
    return out


@jit
def sampled_statuses(known, found, n, widths):
    """Which of positions 0..n-1 hold a shingle the other text has, from the sampled
    positions ``known`` where that is known (``found``), the nearest answering for the
    others, a lone miss between two hits standing for one changed unit of ``widths`` of
    shingles: ``engine.compact.statuses``."""
    out = np.zeros(n, dtype=np.bool_)
    size = len(known)
    if size == 0:
        return out
    lone = np.zeros(size, dtype=np.bool_)
    for k in range(1, size - 1):
        lone[k] = not found[k] and found[k - 1] and found[k + 1]
    near = nearest_known(known, n)
    for p in range(n):
        k = near[p]
        out[p] = found[k] or lone[k]
    for k in range(1, size - 1):
        if lone[k]:
            lo = known[k] - (widths[k] - 1) // 2
            for q in range(max(lo, 0), max(min(lo + widths[k], n), 0)):
                out[q] = False
    return out


_NONE = np.iinfo(np.int64).min


@jit
def _mixed(code):
    return (np.uint64(code) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(32)


@jit
def align_shared(out, status, positions, codes, a, mask):
    """Where ``status`` says the stored document shares the later one's text, put in ``out``
    the later document's codes (``a``) read at the offset of the nearest sampled position
    (``positions``, ascending) whose code (``codes``, masked by ``mask``) it finds:
    ``engine.compact._align``. The offset of a code found once is where it is; of a code
    found more than once, the place nearest the median offset of the codes found once
    (the first on ties). The later document's masked codes go into a hash table (chained in
    text order) instead of being sorted."""
    n_a, size_k = len(a), len(codes)
    if size_k == 0 or n_a == 0:
        return
    shared = False
    for p in range(len(status)):
        if status[p]:
            shared = True
            break
    if not shared:
        return
    size = table_size(n_a)
    bits = np.uint64(size - 1)
    masked = a & mask
    slots = np.empty(n_a, dtype=np.uint64)
    for q in range(n_a):
        slots[q] = _mixed(masked[q]) & bits
    head, chain = chained(slots, size)  # each chain in text order
    offsets = np.full(size_k, _NONE, dtype=np.int64)
    count = np.zeros(size_k, dtype=np.int64)
    once = 0
    for j in range(size_k):
        q = head[_mixed(codes[j]) & bits]
        while q >= 0:
            if masked[q] == codes[j]:
                if count[j] == 0:
                    offsets[j] = q - positions[j]
                count[j] += 1
            q = chain[q]
        if count[j] == 1:
            once += 1
    if once == 0:
        return
    found_once = np.empty(once, dtype=np.int64)
    i = 0
    for j in range(size_k):
        if count[j] == 1:
            found_once[i] = offsets[j]
            i += 1
    found_once.sort()
    half = once // 2
    if once % 2:
        guess = found_once[half]
    else:
        guess = np.int64((found_once[half - 1] + found_once[half]) / 2)
    for j in range(size_k):
        if count[j] > 1:  # a repeated shingle: the place nearest the guess
            best, gap = -1, 0
            q = head[_mixed(codes[j]) & bits]
            while q >= 0:
                if masked[q] == codes[j]:
                    d = abs(q - positions[j] - guess)
                    if best < 0 or d < gap:
                        best, gap = q, d
                q = chain[q]
            offsets[j] = best - positions[j]
    anchors = np.empty(size_k, dtype=np.int64)
    shifts = np.empty(size_k, dtype=np.int64)
    n = 0
    for j in range(size_k):
        if count[j] > 0:
            anchors[n] = positions[j]
            shifts[n] = offsets[j]
            n += 1
    near = nearest_known(anchors[:n], len(out))
    for p in range(len(out)):
        if status[p]:
            there = p + shifts[near[p]]
            if 0 <= there < n_a:
                out[p] = a[there]


@jit
def sorted_overlap(a, b):
    """How many values two sorted arrays of distinct values share, by one merge walk."""
    i = j = both = 0
    while i < len(a) and j < len(b):
        if a[i] < b[j]:
            i += 1
        elif a[i] > b[j]:
            j += 1
        else:
            both += 1
            i += 1
            j += 1
    return both
