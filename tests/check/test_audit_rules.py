"""Who owns a measured byte, and how one owner's declarations share it (see check/audit.py).

Caches are filled by hand with ``DynamicCache.update`` on fp32 zeros so every number is exact:
one layer's K or V of shape (rows, heads, positions, dim) is rows × heads × positions × dim × 4 B.
"""

from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from torch import nn  # noqa: E402

from kvledger import RowDriver  # noqa: E402
from kvledger.check import Verdict  # noqa: E402
from kvledger.check.audit import audit  # noqa: E402

from .tiny import spec  # noqa: E402


def _fill(cache: object, rows: int, positions: int, layers: int = 1, heads: int = 2,
          dim: int = 8) -> None:
    for layer in range(layers):
        kv = torch.zeros(rows, heads, positions, dim)
        cache.update(kv, kv.clone(), layer)  # type: ignore[attr-defined]


def _new_cache() -> object:
    from transformers import DynamicCache

    return DynamicCache()


def one_layer(name: str, positions: int, **kw: object) -> object:
    # bytes/row = 2 × 1 layer × 2 heads × 8 × positions × 4 B = 128 × positions
    return spec(name, layers=1, kv_heads=2, head_dim=8, positions=positions, **kw)  # type: ignore[arg-type]


class Owner(nn.Module):
    def __init__(self, specs: list[object]) -> None:
        super().__init__()
        self._specs = specs
        self.proj = nn.Linear(8, 8)  # weights: never cache
        self.register_buffer("table", torch.zeros(100))  # persistent buffer: a weight

    def model_local_kv_specs(self) -> list[object]:
        return self._specs


def test_nested_owners_each_own_their_caches() -> None:
    outer = Owner([one_layer("outer", 4)])
    outer.inner = Owner([one_layer("inner", 10)])  # declares its own cache
    outer.kv = _new_cache()
    outer.inner.kv = _new_cache()
    _fill(outer.kv, rows=1, positions=4)  # 2 × 1 × 2 × 4 × 8 × 4 B = 512 B
    _fill(outer.inner.kv, rows=1, positions=10)  # 2 × 1 × 2 × 10 × 8 × 4 B = 1,280 B
    result = audit(outer, max_num_seqs=1)
    rows = {r.label: r for r in result.declarations}
    assert rows["<root>:outer"].logical_bytes == 512
    assert rows["inner:inner"].logical_bytes == 1280
    assert all(r.verdict is Verdict.OK for r in rows.values()), result.report()


def test_named_declarations_claim_their_attribute_and_a_ring_buffer() -> None:
    owner = Owner([one_layer("kv", 6), one_layer("ring", 3, rows=RowDriver.FIXED)])
    owner.kv = _new_cache()
    _fill(owner.kv, rows=2, positions=6)  # 2 rows × 128 × 6 = 1,536 B
    # a non-persistent ring buffer, K and V stacked: 2 × 1 × 2 × 3 × 8 × 4 B = 384 B
    # (FIXED 1 row: 128 × 3 = 384 B declared).
    owner.register_buffer("ring", torch.zeros(2, 1, 2, 3, 8), persistent=False)
    result = audit(owner, max_num_seqs=2)
    rows = {r.spec.name: r for r in result.declarations}
    assert (rows["kv"].logical_bytes, rows["kv"].declared_bytes) == (1536, 1536)
    assert (rows["ring"].logical_bytes, rows["ring"].declared_bytes) == (384, 384)
    assert rows["ring"].holdings == ("ring",)
    assert result.ok, result.report()


def test_unnamed_declarations_share_jointly_and_get_one_verdict() -> None:
    # Same geometry kept per request and as a working copy: bytes cannot tell them apart.
    owner = Owner([one_layer("per_request", 4), one_layer("working_copy", 4)])
    owner.cache = _new_cache()
    _fill(owner.cache, rows=1, positions=8)  # 2 × 2 × 8 × 8 × 4 B = 1,024 B
    result = audit(owner, max_num_seqs=1)
    for row in result.declarations:
        assert row.group == ("per_request", "working_copy")
        assert (row.declared_bytes, row.logical_bytes) == (512 + 512, 1024)
        assert row.verdict is Verdict.OK, result.report()
    # Measured more than the joint sum → both are under-declared together.
    _fill(owner.cache, rows=1, positions=1)  # +1 position: 1,152 B > 1,024 B
    result = audit(owner, max_num_seqs=1)
    assert {r.verdict for r in result.declarations} == {Verdict.UNDER_DECLARED}


def test_extra_cache_beside_a_named_declaration_is_undeclared() -> None:
    owner = Owner([one_layer("kv", 4)])
    owner.kv = _new_cache()
    owner.scratch = _new_cache()
    _fill(owner.kv, rows=1, positions=4)  # 512 B, declared
    _fill(owner.scratch, rows=1, positions=2)  # 2 × 2 × 2 × 8 × 4 B = 256 B, not declared
    result = audit(owner, max_num_seqs=1)
    assert result.declarations[0].verdict is Verdict.OK
    (u,) = result.undeclared
    assert (u.path, u.logical_bytes) == ("scratch", 256)
    assert "claimed by name elsewhere" in u.reason


def test_cache_held_outside_any_owner_is_undeclared() -> None:
    model = nn.Sequential(nn.Linear(8, 8), Owner([]))
    model[0].past = _new_cache()  # type: ignore[assignment]
    _fill(model[0].past, rows=1, positions=3)  # 2 × 2 × 3 × 8 × 4 B = 384 B
    result = audit(model, max_num_seqs=1)
    (u,) = result.undeclared
    assert (u.path, u.kind, u.logical_bytes) == ("0.past", "DynamicCache", 384)
    assert u.reason == "no declaring owner holds it"
    assert not result.ok


def test_cache_in_a_plain_holder_object_is_reachable() -> None:
    class State:
        def __init__(self) -> None:
            self.caches = [_new_cache()]

    owner = Owner([one_layer("kv", 5)])
    owner.state = State()
    _fill(owner.state.caches[0], rows=1, positions=5)  # 640 B
    result = audit(owner, max_num_seqs=1)
    assert result.declarations[0].holdings == ("state.caches[0]",)
    assert result.declarations[0].verdict is Verdict.OK, result.report()


def test_declarer_that_raises_is_skipped_and_its_cache_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(nn.Module):
        def model_local_kv_specs(self) -> list[object]:
            raise RuntimeError("geometry not loaded")

    model = nn.Sequential(Broken())
    model[0].kv = _new_cache()  # type: ignore[assignment]
    _fill(model[0].kv, rows=1, positions=1)
    with caplog.at_level(logging.WARNING):
        result = audit(model, max_num_seqs=1)
    assert not result.declarations
    assert [u.path for u in result.undeclared] == ["0.kv"]
    assert "raised" in caplog.text


def test_sampling_during_run_sees_a_cache_dropped_before_return() -> None:
    class Talker(Owner):
        def forward(self, x: object) -> object:
            return self.proj(x)  # type: ignore[operator]

        def speak(self) -> None:
            self.kv = _new_cache()
            _fill(self.kv, rows=1, positions=4)  # 512 B while the call runs
            self(torch.zeros(1, 8))
            self.kv = None  # dropped before returning

    talker = Talker([one_layer("kv", 4, scope="invocation")])
    assert audit(talker, max_num_seqs=1, run=talker.speak).declarations[0].verdict is Verdict.OK
    blind = audit(talker, max_num_seqs=1, run=talker.speak, sample_during_run=False)
    assert blind.declarations[0].verdict is Verdict.DEAD
    assert not talker._forward_hooks  # hooks removed after the run


def test_run_that_raises_propagates_and_removes_hooks() -> None:
    owner = Owner([one_layer("kv", 4)])

    def boom() -> None:
        raise ValueError("run failed")

    with pytest.raises(ValueError, match="run failed"):
        audit(owner, max_num_seqs=1, run=boom)
    assert not owner._forward_hooks


@pytest.mark.parametrize("bad", [0, -1, True, 1.0])
def test_max_num_seqs_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        audit(Owner([]), max_num_seqs=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-0.1, 1.0, float("nan")])
def test_tolerance_must_be_a_fraction(bad: float) -> None:
    with pytest.raises(ValueError):
        audit(Owner([]), max_num_seqs=1, tolerance=bad)


def test_a_deep_owner_is_sampled_while_its_own_modules_run() -> None:
    class Deep(Owner):
        def __init__(self, specs: list[object]) -> None:
            super().__init__(specs)
            self.body = nn.Sequential(nn.Sequential(nn.Sequential(nn.Linear(8, 8))))
            self.probe = nn.Linear(8, 8)

        def forward(self, x: object) -> object:
            self.kv = _new_cache()
            _fill(self.kv, rows=1, positions=4)  # 512 B only while the forward runs
            self.probe(x)
            self.kv = None
            return x

    # The owner sits 3 levels down, out of reach of the root's SAMPLE_DEPTH; its own
    # child ``probe`` is hooked because sampling also starts at every owner.
    root = nn.Sequential(nn.Sequential(nn.Sequential(Deep([one_layer("kv", 4)]))))
    deep = root[0][0][0]
    result = audit(root, max_num_seqs=1, run=lambda: deep(torch.zeros(1, 8)))
    assert result.declarations[0].verdict is Verdict.OK, result.report()
    assert result.declarations[0].owner_path == "0.0.0"
