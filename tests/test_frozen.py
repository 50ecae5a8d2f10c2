"""quick_init: the same objects as a frozen dataclass's own __init__ makes, made quicker."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import dataclass, field

import pytest

from neardup.engine import Decision
from neardup.engine.decide import Match
from neardup.engine.verify import Verdict
from neardup.frozen import quick_init
from neardup.records import BadRecord, Document


def _made(quick: bool) -> type:
    def build(cls: type) -> type:
        cls = dataclass(frozen=True, slots=True)(cls)
        return quick_init(cls) if quick else cls

    @build
    class Record:
        name: str
        size: int = 3
        tags: list[str] = field(default_factory=list)
        note: object = field(default=None, compare=False, repr=False)

        def __post_init__(self) -> None:
            if self.size < 0:
                raise ValueError("size")

    return Record


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [(("a",), {}), (("a", 5), {}), (("a",), {"tags": ["x"]}), (("a", 1, ["y"], "n"), {})],
)
def test_the_same_objects_as_the_dataclass_makes(args: tuple, kwargs: dict) -> None:
    plain, quick = _made(False), _made(True)
    a, b = plain(*args, **kwargs), quick(*args, **kwargs)
    assert [getattr(a, f.name) for f in dataclasses.fields(a)] == [
        getattr(b, f.name) for f in dataclasses.fields(b)
    ]
    assert repr(a).replace("Record", "") == repr(b).replace("Record", "")


def test_defaults_factories_post_init_and_frozen_kept() -> None:
    quick = _made(True)
    one, two = quick("a"), quick("a")
    assert one.tags == [] and one.tags is not two.tags  # a fresh list per object
    with pytest.raises(ValueError, match="size"):
        quick("a", -1)  # __post_init__ still runs
    with pytest.raises(TypeError):
        quick()  # a field without a default is still required
    with pytest.raises(TypeError):
        quick("a", 1, [], None, "too many")
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.size = 4  # type: ignore[misc]
    assert dataclasses.replace(one, size=9).size == 9
    assert copy.copy(two) == two
    doc = Document("a1", "text", line=3, id_value=7)  # a module's class: pickled by name
    assert pickle.loads(pickle.dumps(doc)) == doc and pickle.loads(pickle.dumps(doc)).line == 3


def test_refuses_what_it_cannot_make_the_same() -> None:
    @dataclass(frozen=True)
    class NoSlots:
        x: int

    @dataclass(slots=True)
    class NotFrozen:
        x: int

    @dataclass(frozen=True, slots=True)
    class KeywordOnly:
        x: int = field(kw_only=True)

    for cls in (NoSlots, NotFrozen, KeywordOnly):
        with pytest.raises(TypeError):
            quick_init(cls)


@pytest.mark.parametrize("cls", [Document, BadRecord, Decision, Match, Verdict])
def test_the_engines_records_keep_the_dataclass_signature(cls: type) -> None:
    """The parameters a dataclass's own __init__ would take: names, order, defaults."""
    expected = [
        (f.name, inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
        for f in dataclasses.fields(cls)
    ]
    params = list(inspect.signature(cls).parameters.values())
    assert [(p.name, p.default) for p in params] == expected
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params)
    assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
