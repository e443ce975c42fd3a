"""Protocol A: collect_model_local_kv_specs walks any tree with named_modules()."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from kvledger import (
    HasModelLocalKV,
    ModelLocalKVScope,
    ModelLocalKVSpec,
    RowDriver,
    collect_model_local_kv_specs,
)


def mk(name: str) -> ModelLocalKVSpec:
    return ModelLocalKVSpec(name, 1, 1, 8, "float16", 4, "test", ModelLocalKVScope.REQUEST,
                            RowDriver.MAX_NUM_SEQS)


class Node:
    """A plain (torch-free) module tree: children by attribute, named_modules like torch."""

    def __init__(self, **children: Any) -> None:
        self.children = children

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Any]]:
        yield prefix, self
        for key, child in self.children.items():
            path = f"{prefix}.{key}" if prefix else key
            if isinstance(child, Node):
                yield from child.named_modules(path)
            else:
                yield path, child


class Declarer(Node):
    def __init__(self, *specs: ModelLocalKVSpec, **children: Any) -> None:
        super().__init__(**children)
        self.specs = list(specs)

    def model_local_kv_specs(self) -> list[ModelLocalKVSpec]:
        return self.specs


class Forwarding:
    """A runner wrapper that forwards attribute access to the model (no unwrap())."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_owner_deep_in_tree_reported_with_dotted_path() -> None:
    deep = Declarer(mk("talker_cache"))
    model = Node(thinker=Node(), talker=Node(decoder=Node(layers=deep)))
    assert collect_model_local_kv_specs(model) == [("talker.decoder.layers", deep.specs[0])]


def test_undeclared_model_is_empty() -> None:
    assert collect_model_local_kv_specs(Node(a=Node(), b=Node(c=Node()))) == []


def test_declaring_nothing_is_valid() -> None:
    assert collect_model_local_kv_specs(Node(a=Declarer())) == []


def test_root_declarer_included() -> None:
    root = Declarer(mk("root_cache"), child=Declarer(mk("child_cache")))
    got = collect_model_local_kv_specs(root)
    assert [(p, s.name) for p, s in got] == [("", "root_cache"), ("child", "child_cache")]


def test_root_behind_forwarding_wrapper_counted_once() -> None:
    root = Declarer(mk("root_cache"))
    wrapped = Forwarding(root)
    assert isinstance(wrapped, HasModelLocalKV)  # the wrapper *looks* like a declarer
    got = collect_model_local_kv_specs(wrapped)
    assert [s.name for _, s in got] == ["root_cache"]


def test_unwrap_chain_followed() -> None:
    inner = Declarer(mk("x"))

    class Runner:
        def __init__(self, m: Any) -> None:
            self.m = m

        def unwrap(self) -> Any:
            return self.m

    got = collect_model_local_kv_specs(Runner(Runner(inner)))
    assert [(p, s.name) for p, s in got] == [("", "x")]


def test_self_referential_unwrap_terminates() -> None:
    class Loop(Declarer):
        def unwrap(self) -> Any:
            return self

    class A(Declarer):
        other: Any = None

        def unwrap(self) -> Any:
            return self.other

    a, b = A(mk("a")), A(mk("b"))
    a.other, b.other = b, a  # a → b → a: a cycle
    assert [s.name for _, s in collect_model_local_kv_specs(Loop(mk("loop")))] == ["loop"]
    assert [s.name for _, s in collect_model_local_kv_specs(a)] == ["b"]


def test_unwrap_that_raises_keeps_wrapper() -> None:
    class Bad(Declarer):
        def unwrap(self) -> Any:
            raise RuntimeError("not ready")

    assert [s.name for _, s in collect_model_local_kv_specs(Bad(mk("w")))] == ["w"]


def test_same_owner_reachable_twice_counted_once() -> None:
    shared = Declarer(mk("shared"))
    model = Node(a=shared, b=Node(c=shared))
    got = collect_model_local_kv_specs(model)
    assert got == [("a", shared.specs[0])]


def test_raising_declarer_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(Node):
        def model_local_kv_specs(self) -> list[ModelLocalKVSpec]:
            raise RuntimeError("geometry not loaded")

    good = Declarer(mk("good"))
    model = Node(broken=Broken(), good=good)
    with caplog.at_level(logging.WARNING, logger="kvledger.declare"):
        got = collect_model_local_kv_specs(model)
    assert got == [("good", good.specs[0])]
    assert any("broken" in r.getMessage() for r in caplog.records)
    assert any(r.exc_info and "geometry not loaded" in str(r.exc_info[1]) for r in caplog.records)


def test_declarer_returning_junk_is_skipped(caplog: pytest.LogCaptureFixture) -> None:
    class Junk(Node):
        def model_local_kv_specs(self) -> list[object]:
            return ["not a spec"]

    with caplog.at_level(logging.WARNING, logger="kvledger.declare"):
        assert collect_model_local_kv_specs(Node(j=Junk())) == []
    assert caplog.records


def test_plain_object_without_named_modules() -> None:
    d = Declarer(mk("solo"))
    d.named_modules = None  # type: ignore[assignment,method-assign]
    assert [s.name for _, s in collect_model_local_kv_specs(d)] == ["solo"]


def test_works_on_torch_module() -> None:
    torch = pytest.importorskip("torch")

    class Cache(torch.nn.Module):
        def model_local_kv_specs(self) -> list[ModelLocalKVSpec]:
            return [mk("ring")]

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = torch.nn.Sequential(torch.nn.Linear(2, 2), Cache())
            self.alias = self.block[1]  # same owner registered twice

    got = collect_model_local_kv_specs(Model())
    assert [(p, s.name) for p, s in got] == [("block.1", "ring")]
