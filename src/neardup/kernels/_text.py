"""Compiled text scans: which lines of a text hold a boilerplate hint, whether a text is as
normalization leaves it, and the figures of a text.

Each works on the code points of a text as keys into a table of the character properties
Python's own ``str`` methods and ``re`` use (worked out from them: ``key`` and ``table``
from :func:`neardup.kernels.tables.keyed`; a BMP character is its own key), and gives
what the regular expressions and ``str`` methods of :mod:`neardup.boilerplate` and
:mod:`neardup.engine.sketches` give — they stay the reference the tests compare with.
"""

from __future__ import annotations

import numpy as np

from ._hash import chained, table_size
from ._jit import jit

__all__ = [
    "figure_spans",
    "figure_spans_all",
    "fold_whitespace",
    "maximal_matches",
    "nfkc_casefold",
    "scan_texts",
]

# character properties (kernels.tables.PROPS): bits of a uint8
SPACE, PRINTABLE, DECIMAL = 1, 2, 4
# line flags of scan_texts (boilerplate._HIT and the others)
HIT, CONFIRM, TWO_GT, DATE_END, PREFIX_HIT, PREFIX_CONFIRM = 1, 2, 8, 16, 32, 64
# literal programs (what must follow a literal): bits
WS_STAR, IN_SET, WS_ONE, REGEX, AT_START = 1, 2, 4, 8, 16
#: the table of literal beginnings _hit tries has 2^GRAM_BITS entries
GRAM_BITS = 16
_NL, _SP, _GT, _DOT, _DAY = 10, 32, 62, 46, 0x65E5  # "\n", " ", ">", ".", "日"
#: A section dateline (``boilerplate._DATELINE``: up to 20 characters, a separator, a date
#: of 4, 1-2 and 1-2 digits with two separators, 日) on a line of a folded text, whose only
#: whitespace is single spaces, one at most at each of its six places: at most 38
#: characters, and at least the date's 6 digits.
_DATE_MOST, _DATE_DIGITS = 38, 6
#: the most characters a breadcrumb has between two ">", and after the last (boilerplate._BREADCRUMB)
_CRUMB = 20


@jit
def _ws(c, table):
    """``[^\\S\\n]``: whitespace that is not a line break (``c`` a key, see
    ``tables.keyed``)."""
    return c != _NL and (table[c] & SPACE) != 0


@jit
def _matches(cp, p, lit_cp, lo, hi, prog, set_cp, set_lo, set_hi, table):
    """Whether the literal lit_cp[lo:hi] starts at ``p`` and what ``prog`` asks of what
    follows it holds (its set: set_cp[set_lo:set_hi]): 1 when it does, 2 when only a
    regular expression can say (REGEX), 0 otherwise."""
    n = len(cp)
    e = p + hi - lo
    if p < 0 or e > n:
        return 0
    for t in range(hi - lo):
        if cp[p + t] != lit_cp[lo + t]:
            return 0
    if prog & REGEX:
        return 2
    if prog & WS_STAR:
        while e < n and _ws(cp[e], table):
            e += 1
    if prog & IN_SET:
        if e >= n:
            return 0
        found = False
        for q in range(set_lo, set_hi):
            if cp[e] == set_cp[q]:
                found = True
        if not found:
            return 0
        e += 1
    if prog & WS_ONE:
        if e >= n or not _ws(cp[e], table):
            return 0
    if prog & AT_START and not _may_start_sentence(cp, p, table):
        return 0
    return 1


@jit
def _may_start_sentence(cp, p, table):
    """Whether a sentence of its line, as ``boilerplate._strip_line`` cuts it after taking
    off a dateline prefix, may begin at ``p`` or before it, at a bracket of ``[【(<`` and
    whitespace (what ``boilerplate._STARTS`` allows before a byline; a row of labels,
    ``boilerplate._LABELS``, begins at its first bracket): what comes before,
    whitespace and one such bracket left out, is the line's start, a sentence end
    (``。!?！？.``) or the last character a dateline prefix (``boilerplate._PREFIXES``)
    ends with (``]】)电讯,，-–—``)."""
    q = p - 1
    while q >= 0 and _ws(cp[q], table):
        q -= 1
    if q >= 0 and (cp[q] == 0x5B or cp[q] == 0x3010 or cp[q] == 0x28 or cp[q] == 0x3C):
        q -= 1  # [【(<
        while q >= 0 and _ws(cp[q], table):
            q -= 1
    if q < 0:
        return True
    c = cp[q]
    return (
        c == _NL
        or c == _DOT
        or _is_end(c)
        or c == 0x5D  # ]
        or c == 0x3011  # 】
        or c == 0x29  # )
        or c == 0x7535  # 电
        or c == 0x8BAF  # 讯
        or c == 0x2C  # ,
        or c == 0xFF0C  # ，
        or c == 0x2D  # -
        or c == 0x2013  # –
        or c == 0x2014  # —
    )


@jit
def _gram(a, b, c, bits):
    """A hash of two or three code points (``c`` 0 for two) in [0, 2^bits)."""
    h = (np.uint64(a) << np.uint64(42)) ^ (np.uint64(b) << np.uint64(21)) ^ np.uint64(c)
    h = h * np.uint64(0x9E3779B97F4A7C15)
    return np.int64(h >> np.uint64(64 - bits))


@jit
def _hit(cp, p, c, first, lit_cp, lit_start, lit_prog, set_start, set_cp, table):
    """HIT when a literal of a table starts at ``p`` of the text (``c``: its key there)
    and what must follow it holds; CONFIRM when one starts there and only a regular
    expression can say; 0 when none does. The literals starting with c are ``first[c]``
    to ``first[c + 1]``; literal k is ``lit_cp[lit_start[k]:lit_start[k + 1]]``, what
    must follow it ``lit_prog[k]`` (WS_STAR | IN_SET | WS_ONE, or REGEX) and its set
    ``set_cp[set_start[k]:set_start[k + 1]]`` (``boilerplate._Literals``). Called only
    where :func:`scan_texts` finds that one may start: a call passing arrays costs more
    than the rest of a character's work (numba counts references to each)."""
    out = 0
    for k in range(first[c], first[c + 1]):
        got = _matches(
            cp, p, lit_cp, lit_start[k], lit_start[k + 1], lit_prog[k],
            set_cp, set_start[k], set_start[k + 1], table,
        )  # fmt: skip
        if got == 1:
            return HIT
        if got == 2:
            out = CONFIRM
    return out


@jit
def _may_start(lengths, more, two, three):
    """Whether a literal of a table may start at a character that starts literals of
    ``lengths`` (bits 1, 2, 4: one character, two, three or more): one of one character
    does; else, with a character after it (``more``), the hash of the two (``two``) or
    three (``three``) characters from it is a literal's."""
    return (lengths & 1) != 0 or (
        more and (((lengths & 2) != 0 and two != 0) or ((lengths & 4) != 0 and three != 0))
    )


@jit
def scan_texts(
    cp,  # the keys of every text, one after another (tables.keyed)
    offsets,  # int64[n + 1]: text k is cp[offsets[k]:offsets[k + 1]]
    table,  # uint8 properties of every key
    starts,  # uint8[65536]: the lengths of the hints (bits 1, 2, 4: one character, two, three
    # or more) each character starts, and of the dateline prefixes (the same, shifted by 3)
    pairs,  # uint8[2^14]: at (a << 7) | b, bit 1 (hints) or 2 (prefixes) where a literal
    # may start with ASCII a then b (one of a alone, or a then something else not ASCII)
    grams,  # uint8[2^GRAM_BITS]: bit 1 or 2 at the hash (_gram) of a literal's first two or
    # three characters
    hint,  # the literals of the hints (see _hit)
    prefix,  # the literals of the dateline prefixes
    folded,  # bool[n] (out): whether each text is as whitespace folding leaves it
    where,  # int64[m, 2] (out): (text, line) of each line with flags
    what,  # uint8[m] (out): its flags; m at least the lines of all texts
):
    """Flag each line (split at "\\n") of every text, in one pass over its characters:
    HIT or CONFIRM for a literal of ``hint`` found in it (see :func:`_hit`), PREFIX_HIT or
    PREFIX_CONFIRM for one of ``prefix`` — a position tried only where the hash of its
    next two or three characters is a literal's, two ASCII characters ruled out by one
    lookup (most of an English text's letters start some literal); TWO_GT for a line that
    may hold a breadcrumb (``boilerplate._BREADCRUMB``: two or more ">" at most ``_CRUMB``
    characters apart, and at most that many after the last) as the whole line or as one
    of its sentences: two ">" that near each other, and a sentence end ("。!?！？" or
    ".", which end every sentence but a line's last) or the line's last character other
    than whitespace at most ``_CRUMB`` characters after the second or a later one (nested
    quotes, "> > ...", with a long sentence after them are not flagged); DATE_END for a
    line that may be a section dateline (``boilerplate._DATELINE``) if its text is folded:
    one that ends in 日 or a decimal digit, holds at most ``_DATE_MOST`` characters and at
    least ``_DATE_DIGITS`` decimal digits. And ``folded``: no double space, no empty
    line, no space at either end of a line, and nothing but printable characters and line
    breaks (see ``boilerplate._is_folded``). Returns how many lines were written to ``where`` and
    ``what`` (those with a flag)."""
    h_first, h_lit, h_lit_start, h_prog, h_set_start, h_set = hint
    p_first, p_lit, p_lit_start, p_prog, p_set_start, p_set = prefix
    size = 0
    for k in range(len(offsets) - 1):
        text = cp[offsets[k] : offsets[k + 1]]
        n = len(text)
        ok = n == 0 or not (
            text[0] == _SP or text[0] == _NL or text[n - 1] == _SP or text[n - 1] == _NL
        )
        line = 0
        start = 0
        gt_at = -1  # the line's last ">"
        near = -1  # its last ">" at most _CRUMB characters after the one before it
        seen = -1  # its last character other than whitespace
        crumb = False
        hf = 0  # the line's flags from ``hint``
        pf = 0  # and from ``prefix``
        for p in range(n + 1):
            c = text[p] if p < n else _NL
            if c == _NL:
                if p < n and ok:
                    nxt = text[p + 1] if p + 1 < n else 0
                    if nxt == _NL or nxt == _SP or (p > 0 and text[p - 1] == _SP):
                        ok = False
                f = hf
                if crumb or (near >= 0 and seen - near <= _CRUMB):
                    f |= TWO_GT
                if 0 < p - start <= _DATE_MOST:
                    last = text[p - 1]
                    if last == _DAY or (table[last] & DECIMAL) != 0:
                        digits = 0
                        for q in range(start, p):
                            if (table[text[q]] & DECIMAL) != 0:
                                digits += 1
                        if digits >= _DATE_DIGITS:
                            f |= DATE_END
                if pf & HIT:
                    f |= PREFIX_HIT
                if pf & CONFIRM:
                    f |= PREFIX_CONFIRM
                if f:
                    where[size, 0] = k
                    where[size, 1] = line
                    what[size] = f
                    size += 1
                line += 1
                start = p + 1
                gt_at = near = seen = -1
                crumb = False
                hf = pf = 0
                continue
            props = table[c]
            if ok:
                if c == _SP:
                    if p > 0 and text[p - 1] == _SP:
                        ok = False
                elif (props & PRINTABLE) == 0:
                    ok = False
            if (props & SPACE) == 0:
                seen = p
            if c == _GT:
                if gt_at >= 0 and p - gt_at - 1 <= _CRUMB:
                    near = p
                gt_at = p
            elif near >= 0 and p - near <= _CRUMB and (c == _DOT or _is_end(c)):
                crumb = True
            if c >= 0x10000:  # no literal starts beyond the BMP
                continue
            lengths = starts[c]
            if lengths == 0:
                continue
            c2 = text[p + 1] if p + 1 < n else _NL
            may = pairs[(c << 7) | c2] if c < 128 and p + 1 < n and c2 < 128 else 3
            if may == 0:
                continue
            two = three = 0
            if p + 1 < n and (lengths & 0b010010) != 0:
                two = grams[_gram(c, c2, 0, GRAM_BITS)]
            if p + 2 < n and (lengths & 0b100100) != 0:
                three = grams[_gram(c, c2, text[p + 2], GRAM_BITS)]
            more = p + 1 < n
            if (hf & HIT) == 0 and (may & 1) and _may_start(lengths & 7, more, two & 1, three & 1):
                hf |= _hit(
                    text, p, c, h_first, h_lit, h_lit_start, h_prog, h_set_start, h_set, table
                )
            if (pf & HIT) == 0 and (may & 2) and _may_start(lengths >> 3, more, two & 2, three & 2):
                pf |= _hit(
                    text, p, c, p_first, p_lit, p_lit_start, p_prog, p_set_start, p_set, table
                )
        folded[k] = ok
    return size


@jit
def fold_whitespace(cp, table, out):
    """``normalize.fold_whitespace`` of a text's code points ``cp`` (not keyed: a character
    beyond the BMP is never whitespace; or an ASCII text's bytes, ``out`` then bytes too),
    written to ``out`` (as long as ``cp``); returns how many were written. A control
    character (``normalize._CONTROLS``) is a space; a run of whitespace inside a line is one
    space, none at either end of a line; empty lines go."""
    n = 0
    line_start = True  # nothing of the current line written yet
    space = False  # whitespace since the line's last character written
    for c in cp:
        if c > _SP and c < 0x7F:  # printable ASCII: the most common case
            pass
        elif c == _NL:
            line_start = True
            space = False
            continue
        elif c <= 0x9F or (c < 0x10000 and (table[c] & SPACE) != 0):
            space = True  # whitespace, or a control character (every one is below 0xA0)
            continue
        if line_start:
            if n > 0:
                out[n] = _NL
                n += 1
            line_start = False
        elif space:
            out[n] = _SP
            n += 1
        space = False
        out[n] = c
        n += 1
    return n


#: a character the table of nfkc_casefold does not hold, and the mark of one it makes
#: more than one character of (the rest of the entry numbers them in ``more_at``)
_NONE = 0xFFFFFFFF
_MORE = 0x80000000


@jit
def nfkc_casefold(cp, table, more_at, more, far, out):
    """``normalize.nfkc(text).casefold()`` of a text's code points ``cp``, character by
    character (``normalize._fold_table``): a BMP character ``c`` becomes ``table[c]``,
    or the characters ``more[more_at[k]:more_at[k + 1]]`` where ``table[c]`` is ``_MORE +
    k``; a character beyond the BMP stays as it is if it lies in one of the ranges ``far``
    (rows of first and last code point). Written to ``out``; returns how many, -1 at the
    first character the table does not hold (the caller then takes the reference path),
    -2 if ``out`` is too short."""
    n = 0
    room = len(out)
    for c in cp:
        if c < 0x10000:
            v = table[c]
            if v < _MORE:
                if n == room:
                    return -2
                out[n] = v
                n += 1
                continue
            if v == _NONE:
                return -1
            k = v - _MORE
            lo = more_at[k]
            hi = more_at[k + 1]
            if n + hi - lo > room:
                return -2
            for j in range(lo, hi):
                out[n] = more[j]
                n += 1
            continue
        held = False
        for r in range(len(far)):
            if far[r, 0] <= c and c <= far[r, 1]:
                held = True
                break
        if not held:
            return -1
        if n == room:
            return -2
        out[n] = c
        n += 1
    return n


@jit
def _is_end(c):
    """A character of boilerplate._ENDS: 。!?！？"""
    return c == 0x3002 or c == 0x21 or c == 0x3F or c == 0xFF01 or c == 0xFF1F


@jit
def figure_spans(cp, table, out):
    """The figures of a text (its keys ``cp``) as ``sketches._NUMBER`` finds them (``\\d+(?:[.,:/-]\\d+)*``),
    two or more characters long and not a year or date (``sketches._YEAR_OR_DATE``): their
    (start, end) written to ``out`` (an (n, 2) array), how many returned."""
    n = len(cp)
    found = 0
    p = 0
    while p < n:
        if not _digit(cp[p], table):
            p += 1
            continue
        start = p
        while p < n and _digit(cp[p], table):
            p += 1
        # (?:[.,:/-]\d+)*: a separator counts only when a digit follows it
        while p + 1 < n and _separator(cp[p]) and _digit(cp[p + 1], table):
            p += 1
            while p < n and _digit(cp[p], table):
                p += 1
        if p - start >= 2 and not _year_or_date(cp, start, p, table):
            out[found, 0] = start
            out[found, 1] = p
            found += 1
    return found


@jit
def figure_spans_all(cp, offsets, table, out, docs):
    """:func:`figure_spans` of each text cp[offsets[k]:offsets[k + 1]] (spans counted from
    the start of ``cp``); ``docs[j]`` the text of span j. Returns how many spans."""
    found = 0
    for k in range(len(offsets) - 1):
        lo = offsets[k]
        got = figure_spans(cp[lo : offsets[k + 1]], table, out[found:])
        for j in range(found, found + got):
            out[j, 0] += lo
            out[j, 1] += lo
            docs[j] = k
        found += got
    return found


@jit
def _digit(c, table):
    return (table[c] & DECIMAL) != 0


@jit
def _separator(c):
    return c == 0x2E or c == 0x2C or c == 0x3A or c == 0x2F or c == 0x2D  # . , : / -


@jit
def _year_or_date(cp, start, end, table):
    """Whether cp[start:end] is all of ``(?:19|20)\\d\\d(?:[-/.]\\d{1,2}){0,2}``."""
    if end - start < 4:
        return False
    a, b = cp[start], cp[start + 1]
    if not ((a == 0x31 and b == 0x39) or (a == 0x32 and b == 0x30)):  # 19, 20 (ASCII)
        return False
    if not (_digit(cp[start + 2], table) and _digit(cp[start + 3], table)):
        return False
    p = start + 4
    for _ in range(2):
        if p == end:
            return True
        c = cp[p]
        if not (c == 0x2D or c == 0x2F or c == 0x2E):  # - / .
            return False
        p += 1
        digits = 0
        while p < end and digits < 2 and _digit(cp[p], table):
            p += 1
            digits += 1
        if digits == 0:
            return False
    return p == end


@jit
def _gram_hash(cp, at, m):
    """FNV-1a of the ``m`` code points of ``cp`` from ``at`` (equal grams, equal hashes)."""
    h = np.uint64(14695981039346656037)
    for d in range(m):
        h = (h ^ np.uint64(cp[at + d])) * np.uint64(1099511628211)
    return h


@jit
def _same_gram(a, i, b, j, m):
    """Whether the ``m`` code points of ``a`` from ``i`` are those of ``b`` from ``j``."""
    d = 0
    while d < m and a[i + d] == b[j + d]:
        d += 1
    return d == m


@jit
def maximal_matches(a, b, m, most):
    """The maximal matches of at least ``m`` code points of ``a`` and ``b`` (uint32 arrays,
    each at least ``m`` long): where each starts, ``i`` in a and ``j`` in b, each pair once,
    and its length; seeded by the ``m``-grams of b that occur at most ``most`` times in it
    — what ``passages._starts`` and ``passages._match_length`` find with numpy and Python
    (in another order). The grams of b go into a hash table (chained, twice as many heads
    as grams), and each gram of a walks its chain, comparing the code points of each gram of
    the same hash."""
    na, nb = len(a) - m + 1, len(b) - m + 1
    size = table_size(nb)
    mask = np.uint64(size - 1)
    hb = np.empty(nb, dtype=np.uint64)
    for j in range(nb):
        hb[j] = _gram_hash(b, j, m)
    head, chain = chained((hb >> np.uint64(20)) & mask, size)
    ha = np.empty(na, dtype=np.uint64)
    follow = np.zeros(na, dtype=np.bool_)
    total = 0
    for i in range(na):
        h = _gram_hash(a, i, m)
        ha[i] = h
        reps = 0
        j = head[(h >> np.uint64(20)) & mask]
        while j >= 0:
            if hb[j] == h and _same_gram(a, i, b, j, m):
                reps += 1
            j = chain[j]
        if 0 < reps <= most:
            follow[i] = True
            total += reps
    out_i = np.empty(total, dtype=np.int64)
    out_j = np.empty(total, dtype=np.int64)
    length = np.empty(total, dtype=np.int64)
    n = 0
    la, lb = len(a), len(b)
    for i in range(na):
        if not follow[i]:
            continue
        h = ha[i]
        j = head[(h >> np.uint64(20)) & mask]
        while j >= 0:
            if hb[j] == h and _same_gram(a, i, b, j, m):
                if i == 0 or j == 0 or a[i - 1] != b[j - 1]:  # the start of a maximal match
                    k = m
                    while i + k < la and j + k < lb and a[i + k] == b[j + k]:
                        k += 1
                    out_i[n] = i
                    out_j[n] = j
                    length[n] = k
                    n += 1
            j = chain[j]
    return out_i[:n], out_j[:n], length[:n]
