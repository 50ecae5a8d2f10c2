"""Compiled sketching: the units, hashed shingles, 32-bit codes, MinHash signature and
vocabulary of many prepared texts in one pass over their code points.

Bit for bit what :mod:`neardup.shingling`, :mod:`neardup.sketch.minhash` and
:func:`neardup.engine.sketches.distinct_with_index` compute with numpy (the reference the
tests compare with): the same polynomial hash modulo 2^64 (rolled along the units instead
of prefix sums), the same SplitMix64 finalizer, the same bins and densification.
"""

from __future__ import annotations

import numpy as np

from ._jit import jit

__all__ = ["sketch_chunk", "unit_class"]

_B2 = np.uint64(0x9E3779B97F4A7C15)  # shingling._B2
_STEP = np.uint64(0x9E3779B97F4A7C15)  # minhash._STEP
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)
_S30, _S27, _S31, _S32 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(32)
_EVEN = np.uint32(0xFFFFFFFE)
_WORD, _CJK = 1, 2
_ASTRAL_CJK_LO, _ASTRAL_CJK_HI = 0x20000, 0x3134F


@jit
def unit_class(c, table, astral_words):
    """A code point's class as the shingles see it: 1 (_WORD) a letter or digit, 2 (_CJK) a
    CJK character, else not a unit. ``table`` is the class table of the BMP,
    ``astral_words`` the sorted code points beyond it that are letters or digits (not CJK)."""
    if c < 0x10000:
        return table[c]
    if _ASTRAL_CJK_LO <= c <= _ASTRAL_CJK_HI:
        return _CJK
    j = np.searchsorted(astral_words, c)
    return _WORD if j < len(astral_words) and astral_words[j] == c else 0


@jit
def _mix(z: np.uint64) -> np.uint64:
    z = z ^ (z >> _S30)
    z = z * _M1
    z = z ^ (z >> _S27)
    z = z * _M2
    return z ^ (z >> _S31)


@jit
def _power(k):
    """_B2^k modulo 2^64."""
    p = np.uint64(1)
    for _ in range(k):
        p = p * _B2
    return p


@jit
def _radix_argsort(keys, order, spare, keys_a, keys_b, count):
    """Put into ``order`` the positions 0..n-1 of the uint32 ``keys`` in ascending order of
    key (stable): least significant byte first, skipping a byte every key shares."""
    n = len(keys)
    for i in range(n):
        order[i] = i
        keys_a[i] = keys[i]
    src_o, dst_o, src_k, dst_k = order, spare, keys_a, keys_b
    swapped = False
    for shift in range(0, 32, 8):
        sh = np.uint32(shift)
        count[:] = 0
        for i in range(n):
            count[np.int64((src_k[i] >> sh) & np.uint32(255)) + 1] += 1
        if count[1:].max() == n:
            continue
        for b in range(256):
            count[b + 1] += count[b]
        for i in range(n):
            b = np.int64((src_k[i] >> sh) & np.uint32(255))
            to = count[b]
            count[b] = to + 1
            dst_o[to] = src_o[i]
            dst_k[to] = src_k[i]
        src_o, dst_o = dst_o, src_o
        src_k, dst_k = dst_k, src_k
        swapped = not swapped
    if swapped:
        order[:] = spare[:]


#: The bucket sort's bound on its insertion sort: at most this many pairs of keys sharing a
#: bucket, a key (more: many equal codes, or codes made to share their top bits).
_CROWD = 4


@jit
def _bucket_argsort(keys, order, ordered, count):
    """Put into ``order`` the positions of the uint32 ``keys`` in ascending order of key, and
    into ``ordered`` the keys in that order (ties in any order): each key into a bucket by
    its top bits, about one key a bucket (the codes are hashes), then an insertion sort of
    what shares a bucket. Returns False, ``order`` unfinished, where the buckets are crowded
    (see :data:`_CROWD`), for :func:`_radix_argsort` to sort them instead. ``count`` has room
    for twice the keys and three more."""
    n = len(keys)
    bits = 1
    while (1 << bits) < n:
        bits += 1
    shift = np.uint32(32 - bits)
    size = 1 << bits
    for b in range(size + 1):
        count[b] = 0
    for i in range(n):
        count[np.int64(keys[i] >> shift) + 1] += 1
    pairs = 0
    for b in range(size):
        c = count[b + 1]
        pairs += c * (c - 1)
        count[b + 1] += count[b]
    if pairs > 2 * _CROWD * n:
        return False
    for i in range(n):
        k = keys[i]
        b = np.int64(k >> shift)
        to = count[b]
        count[b] = to + 1
        order[to] = i
        ordered[to] = k
    for i in range(1, n):  # each key moves only past keys of its own bucket
        k = ordered[i]
        if ordered[i - 1] <= k:
            continue
        o = order[i]
        j = i - 1
        while j >= 0 and ordered[j] > k:
            ordered[j + 1] = ordered[j]
            order[j + 1] = order[j]
            j -= 1
        ordered[j + 1] = k
        order[j + 1] = o
    return True


@jit
def sketch_chunk(
    cp,  # uint32 code points of every text, one after another
    offsets,  # int64, len n + 1: text k is cp[offsets[k]:offsets[k + 1]]
    table,  # uint8 class of every BMP code point (shingling._classes())
    astral_words,  # sorted uint32 astral code points that are letters or digits (not CJK)
    cjk_width,
    word_width,
    num_perm,
    units_out,  # int64[n]: units of each text
    counts_out,  # int64[n + 1]: shingles of text k are codes_out[counts_out[k]:counts_out[k+1]]
    codes_out,  # uint32[len(cp) + n]: the 32-bit shingle codes, in text order
    index_out,  # int32[len(cp) + n]: where each code is in its text's vocabulary
    vocab_counts,  # int64[n + 1]: like counts_out, for vocab_out
    vocab_out,  # uint32[len(cp) + n]: each text's sorted distinct codes
    sig_out,  # uint64[n, num_perm]: the MinHash signatures
):
    n = len(offsets) - 1
    longest = 0
    for k in range(n):
        longest = max(longest, offsets[k + 1] - offsets[k])
    units = np.empty(longest + 1, dtype=np.uint64)
    cjk = np.empty(longest + 1, dtype=np.bool_)
    order = np.empty(longest + 1, dtype=np.int64)
    spare = np.empty(longest + 1, dtype=np.int64)
    keys_a = np.empty(longest + 1, dtype=np.uint32)
    keys_b = np.empty(longest + 1, dtype=np.uint32)
    bytes_count = np.zeros(257, dtype=np.int64)
    buckets = np.empty(2 * longest + 3, dtype=np.int64)
    mask = np.uint64(num_perm - 1)
    cw, ww = np.uint64(cjk_width), np.uint64(word_width)
    top_c = _power(cjk_width - 1)
    top_w = _power(word_width - 1)
    at = 0  # next free slot of codes_out
    vat = 0  # next free slot of vocab_out
    counts_out[0] = 0
    vocab_counts[0] = 0
    for k in range(n):
        # the units: letters, digits and CJK characters
        m = 0
        for p in range(offsets[k], offsets[k + 1]):
            c = cp[p]
            # unit_class, written out: called here, sketching took 5-8 % longer
            if c < 0x10000:
                cls = table[c]
            elif _ASTRAL_CJK_LO <= c <= _ASTRAL_CJK_HI:
                cls = _CJK
            else:
                j = np.searchsorted(astral_words, c)
                cls = _WORD if j < len(astral_words) and astral_words[j] == c else 0
            if cls == _WORD or cls == _CJK:
                units[m] = np.uint64(c)
                cjk[m] = cls == _CJK
                m += 1
        units_out[k] = m
        sig = sig_out[k]
        sig[:] = _EMPTY
        start = at
        if m > 0:
            # the hashes of the units of both widths from unit i on, rolled along: a unit
            # leaves (times _B2^(width-1)) and the next comes in (Horner's rule, one step)
            hc = np.uint64(0)
            hw = np.uint64(0)
            for t in range(min(m, cjk_width)):
                hc = hc * _B2 + units[t]
            for t in range(min(m, word_width)):
                hw = hw * _B2 + units[t]
            # a unit starts a shingle of its width when that many units are left
            for i in range(m):
                if i > 0:
                    if i + cjk_width <= m:
                        hc = (hc - units[i - 1] * top_c) * _B2 + units[i - 1 + cjk_width]
                    if i + word_width <= m:
                        hw = (hw - units[i - 1] * top_w) * _B2 + units[i - 1 + word_width]
                w = cw if cjk[i] else ww
                if np.uint64(i) + w > np.uint64(m):
                    continue
                h = _mix((hc if cjk[i] else hw) + w)
                b = h & mask
                if h < sig[b]:
                    sig[b] = h
                codes_out[at] = (np.uint32(h >> _S32) & _EVEN) | np.uint32(w == cw)
                at += 1
            if at == start:  # too few units for any shingle: one shingle of all of them
                w = np.uint64(m)
                h = np.uint64(0)
                for t in range(m):
                    h = h * _B2 + units[t]
                h = _mix(h + w)
                sig[h & mask] = h
                codes_out[at] = (np.uint32(h >> _S32) & _EVEN) | np.uint32(w == cw)
                at += 1
            # densify: an empty bin borrows from the next full bin to its right, rotating,
            # the distance mixed in (full bins are never written, so every borrowed value
            # is a bin's own)
            first = -1
            for b in range(num_perm):
                if sig[b] != _EMPTY:
                    first = b
                    break
            if first >= 0:
                nxt = first + num_perm  # past the last full bin: the first one, rotating
                for b in range(num_perm - 1, -1, -1):
                    if sig[b] != _EMPTY:
                        nxt = b
                    else:
                        src = nxt if nxt < num_perm else nxt - num_perm
                        sig[b] = _mix(sig[src] + np.uint64(nxt - b) * _STEP)
        counts_out[k + 1] = at
        # the vocabulary: sorted distinct codes, and where each code is in it
        count = at - start
        if count > 0:
            codes = codes_out[start:at]
            if not _bucket_argsort(codes, order[:count], keys_a[:count], buckets):
                _radix_argsort(
                    codes, order[:count], spare[:count], keys_a[:count], keys_b[:count], bytes_count
                )
                for i in range(count):
                    keys_a[i] = codes[order[i]]
            rank = -1
            prev = np.uint32(0)
            for i in range(count):
                c = keys_a[i]
                if rank < 0 or c != prev:
                    rank += 1
                    vocab_out[vat] = c
                    vat += 1
                    prev = c
                index_out[start + order[i]] = rank
        vocab_counts[k + 1] = vat
