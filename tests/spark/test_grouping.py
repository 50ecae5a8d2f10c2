"""Which group of the Spark verification verifies each pair (:func:`pair_groups`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.spark import verify
from neardup.spark.verify import SKETCH_BYTES, _components, pair_groups


def naive_components(a: list[int], b: list[int], n: int) -> list[int]:
    """Union-find, each component named by its smallest node."""
    up = list(range(n))

    def find(x: int) -> int:
        while up[x] != x:
            x = up[x]
        return x

    for x, y in zip(a, b, strict=True):
        rx, ry = find(x), find(y)
        if rx != ry:
            up[max(rx, ry)] = min(rx, ry)
    return [find(x) for x in range(n)]


edges = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=60),
    )
)


@settings(max_examples=200, deadline=None)
@given(edges)
def test_components_are_union_finds(graph: tuple[int, list[tuple[int, int]]]) -> None:
    n, pairs = graph
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    assert _components(a, b, n).tolist() == naive_components(a.tolist(), b.tolist(), n)


def test_a_long_chain_is_one_component() -> None:
    n = 5000
    a = np.arange(n - 1, dtype=np.int64)[::-1].copy()
    assert set(_components(a, a + 1, n).tolist()) == {0}


pairs = st.lists(
    st.tuples(st.integers(0, 60), st.integers(1, 30), st.integers(1, 400), st.integers(1, 400)),
    min_size=1,
    max_size=80,
)


@settings(max_examples=200, deadline=None)
@given(pairs, st.integers(1, 4), st.sampled_from([1_000, 5_000, 1 << 26]))
def test_groups_keep_stories_together_within_a_share(
    rows: list[tuple[int, int, int, int]], groups: int, group_bytes: int
) -> None:
    """Every later document has a group below ``n``, a multiple of ``groups``; the later
    documents of a component no heavier than a group's share are in one group, those of a
    heavier one in ``j % n``."""
    i = np.array([r[0] for r in rows], dtype=np.int64)
    j = i + np.array([r[1] for r in rows], dtype=np.int64)
    # a document has one length, whichever pair names it
    length = {int(d): 1 + (int(d) * 37) % 400 for d in np.concatenate([i, j])}
    ni = np.array([length[int(d)] for d in i], dtype=np.int64)
    nj = np.array([length[int(d)] for d in j], dtype=np.int64)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(verify, "GROUP_BYTES", group_bytes)
        later, group, n = pair_groups(i, j, ni, nj, groups)
    assert later.tolist() == sorted(set(j.tolist()))
    assert n % groups == 0 and n >= groups
    assert ((group >= 0) & (group < n)).all()
    nodes = sorted(length)
    weight = {d: 4 * length[d] + SKETCH_BYTES for d in nodes}
    total = sum(weight.values())
    assert n == groups or total > group_bytes * (n - groups)  # no more groups than needed
    at = {d: k for k, d in enumerate(nodes)}
    root = naive_components([at[int(x)] for x in i], [at[int(x)] for x in j], len(nodes))
    heavy: dict[int, int] = {}
    for d in nodes:
        heavy[root[at[d]]] = heavy.get(root[at[d]], 0) + weight[d]
    share = total / n
    seen: dict[int, int] = {}
    for d, g in zip(later.tolist(), group.tolist(), strict=True):
        r = root[at[d]]
        if heavy[r] <= share:
            assert seen.setdefault(r, g) == g
        else:
            assert g == d % n
