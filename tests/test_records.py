"""``kvledger.records``: the dataclass surface the planning classes rely on, without dataclasses.

Each test states the dataclasses behaviour it keeps (the records replaced frozen dataclasses,
and every caller still counts on it: specs are grouped by equality and hash, facts are
frozen, ``replace`` re-validates).
"""

from __future__ import annotations

import copy
import pickle
from typing import ClassVar

import pytest

from kvledger.records import FrozenInstanceError, field, fields, is_record, record, replace


@record(frozen=True, kw_only=True)
class Base:
    kind: ClassVar[str] = "base"  # a ClassVar is not a field
    index: int
    dtype: str = "bfloat16"
    notes: list[str] = field(default_factory=list, compare=False)

    def __post_init__(self) -> None:
        if self.index < 0:
            raise ValueError(f"index must be >= 0, got {self.index}")


@record(frozen=True, kw_only=True)
class Child(Base):
    heads: int
    dtype: str = "float16"  # a redefined field keeps its place, with the new default


@record(frozen=True)
class Pair:
    left: int
    right: int = 0


@record()
class Mutable:
    value: int


def test_fields_in_order_bases_first_classvars_left_out() -> None:
    assert [f.name for f in fields(Base)] == ["index", "dtype", "notes"]
    assert [f.name for f in fields(Child(index=0, heads=8))] == [
        "index", "dtype", "notes", "heads"]
    assert Child.kind == "base"
    assert is_record(Child) and is_record(Pair(1)) and not is_record(object())


def test_defaults_factories_and_redefined_defaults() -> None:
    a, b = Base(index=1), Base(index=2)
    assert (a.dtype, a.notes) == ("bfloat16", [])
    assert a.notes is not b.notes  # a factory is called per object
    assert Child(index=0, heads=8).dtype == "float16"


def test_construction_errors_name_the_field() -> None:
    with pytest.raises(TypeError, match="'heads'"):
        Child(index=0)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'head'"):
        Child(index=0, heads=1, head=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="positional"):
        Base(1)  # type: ignore[misc]  # kw_only
    with pytest.raises(TypeError, match="multiple values"):
        Pair(1, left=2)  # type: ignore[misc]


def test_positional_construction_in_field_order() -> None:
    assert (Pair(1, 2).left, Pair(1, 2).right, Pair(3).right) == (1, 2, 0)


def test_post_init_runs_on_construction_and_on_replace() -> None:
    with pytest.raises(ValueError, match="index must be >= 0"):
        Base(index=-1)
    with pytest.raises(ValueError, match="index must be >= 0"):
        replace(Base(index=1), index=-1)


def test_equality_and_hash_over_compared_fields_of_one_class() -> None:
    assert Base(index=1, notes=["a"]) == Base(index=1, notes=["b"])  # notes: compare=False
    assert Base(index=1) != Base(index=2)
    assert Base(index=1, dtype="float16") != Child(index=1, heads=0)  # another class
    assert Pair(1, 2) != (1, 2)  # not a tuple
    assert hash(Pair(1, 2)) == hash(Pair(1, 2))
    assert len({Pair(1, 2), Pair(1, 2), Pair(2, 1)}) == 2
    with pytest.raises(TypeError):
        hash(Mutable(1))  # mutable with eq: unhashable, as dataclasses


def test_frozen_refuses_assignment_mutable_allows_it() -> None:
    frozen = Pair(1)
    with pytest.raises(FrozenInstanceError):
        frozen.left = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del frozen.left  # type: ignore[misc]
    changing = Mutable(1)
    changing.value = 2
    assert changing.value == 2


def test_replace_keeps_unchanged_fields_and_rejects_unknown_ones() -> None:
    child = Child(index=1, heads=8, notes=["x"])
    moved = replace(child, index=4)
    assert (moved.index, moved.heads, moved.dtype, moved.notes) == (4, 8, "float16", ["x"])
    assert type(moved) is Child and child.index == 1
    with pytest.raises(TypeError, match="'head'"):
        replace(child, head=2)
    with pytest.raises(TypeError, match="record"):
        replace(object())


def test_repr_pickle_and_copy() -> None:
    child = Child(index=1, heads=8)
    assert repr(child) == ("Child(index=1, dtype='float16', notes=[], heads=8)")
    assert pickle.loads(pickle.dumps(child)) == child
    assert copy.deepcopy(child) == child


def test_one_value_type_mechanism() -> None:
    # Every value class is a record: no module of the package imports dataclasses.
    import ast
    from pathlib import Path

    import kvledger

    found = []
    for path in sorted(Path(kvledger.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if "dataclasses" in names:
                found.append(path.name)
    assert not found, found
