"""Measure the real bytes held by live cache objects and by tensors an owner keeps as cache.

What counts as a *cache object*: an instance of transformers' ``Cache`` family or of its
per-layer classes (``DynamicLayer``, ``DynamicSlidingWindowLayer``, ``StaticLayer``,
``StaticSlidingWindowLayer``, quantized layers, ``LinearAttentionLayer`` with its
``conv_states`` / ``recurrent_states`` dicts, ``EncoderDecoderCache``), recognised by a class in
its MRO that lives in ``transformers.cache_utils``, plus model-file caches (``MiniMaxCache``,
``MimiConv1dPaddingCache``, …): a ``transformers.*`` class whose name ends in ``Cache``.
Recognition is by module and name, so this file never imports transformers (a model built
without it simply has no transformers caches).

Every tensor reachable inside a cache object is counted — whatever the attribute is called —
because layouts differ across versions (transformers 5.x keeps ``conv_states`` as a dict of
per-state tensors; ``Fp8QuantizedLayer`` keeps a ``(values, scale)`` tuple) and a name list
would silently miss the next one. Attributes that are ``None`` before first use are skipped.

Two byte counts, both deduplicated:

- ``logical``: elements × element size of each distinct view. What the cache *means* to hold.
- ``pinned``: bytes of each distinct underlying storage, counted once however many views share
  it. What the allocator cannot give back. They differ for views: transformers'
  ``DynamicSlidingWindowLayer`` keeps ``cat(old, new)[..., -(window - 1):, :]``, a view that
  pins the whole concatenation (``window`` positions after a one-token decode step, the whole
  prompt after a prefill longer than the window).

Zero-dimensional tensors (``cumulative_length``, the sliding-window size tensor, an FP8
per-tensor scale) are *bookkeeping*: reported separately, never compared with a declaration,
because the seed formula (2 × layers × heads × head_dim × positions) has no term for them.
Parameters are weights, never cache, and are never counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from kvledger.check._torch import torch_module
from kvledger.records import record

# How deep to follow plain (non-cache, non-module) objects from an owner: enough for
# ``owner.state.caches[0]``, shallow enough that a stray reference to a tokenizer or a
# dataloader does not turn one measurement into a crawl of the process.
MAX_PLAIN_DEPTH = 4

_CACHE_UTILS = "transformers.cache_utils"
_CACHE_BASES = frozenset(
    {"Cache", "CacheLayerMixin", "LinearAttentionCacheLayerMixin", "DummyLayer"}
)


@record(frozen=True)
class TensorRecord:
    """One tensor found inside a holding."""

    path: str
    shape: tuple[int, ...]
    dtype: str
    device: str
    offset: int
    logical_bytes: int
    storage_key: tuple[str, int]
    storage_bytes: int

    @property
    def bookkeeping(self) -> bool:
        return len(self.shape) == 0


@record(frozen=True)
class Holding:
    """One cache object (or one owner-kept tensor) found at ``path`` below where the walk
    started. ``kind`` is the class name (``"DynamicCache"``) or ``"tensor"``/``"buffer"``.
    ``is_cache`` is False for plain tensors: they are measured only for a declaring owner and
    are never reported as undeclared (nothing but a declaration says a tensor is a cache)."""

    path: str
    kind: str
    is_cache: bool
    tensors: tuple[TensorRecord, ...]
    identity: int

    @property
    def bytes(self) -> Bytes:
        return tally(self.tensors)


@record(frozen=True)
class Bytes:
    logical: int
    pinned: int
    bookkeeping: int

    def __add__(self, other: Bytes) -> Bytes:  # only for disjoint sets; see ``tally``
        return Bytes(
            self.logical + other.logical,
            self.pinned + other.pinned,
            self.bookkeeping + other.bookkeeping,
        )


def tally(tensors: Iterable[TensorRecord]) -> Bytes:
    """Logical bytes once per distinct view; pinned bytes once per distinct storage."""
    views: dict[tuple[Any, ...], int] = {}
    storages: dict[tuple[str, int], int] = {}
    book: dict[tuple[Any, ...], int] = {}
    for t in tensors:
        view_key = (t.storage_key, t.offset, t.shape, t.dtype)
        if t.bookkeeping:
            book[view_key] = t.logical_bytes
            continue
        views[view_key] = t.logical_bytes
        storages[t.storage_key] = t.storage_bytes
    return Bytes(sum(views.values()), sum(storages.values()), sum(book.values()))


_KNOWN: dict[type, bool] = {}


def is_cache_object(obj: Any) -> bool:
    """A transformers cache or cache layer (never an ``nn.Module``, never a tensor)."""
    kind = type(obj)
    known = _KNOWN.get(kind)
    if known is None:
        known = _is_cache_type(kind)
        _KNOWN[kind] = known
    return known


def _is_cache_type(kind: type) -> bool:
    if (kind.__module__ or "").startswith("torch"):
        return False
    for klass in kind.__mro__:
        module = getattr(klass, "__module__", "") or ""
        if module == _CACHE_UTILS and klass.__name__ in _CACHE_BASES:
            return True
        if module.startswith("transformers.") and klass.__name__.endswith("Cache"):
            return True
    return False


def _is_container_cache(obj: Any) -> bool:
    """A whole cache (``DynamicCache``) rather than one of its layers: reported separately
    when nested (``EncoderDecoderCache.self_attention_cache`` / ``.cross_attention_cache``)."""
    return is_cache_object(obj) and type(obj).__name__.endswith("Cache")


def _storage_key(t: Any) -> tuple[tuple[str, int], int]:
    storage = t.untyped_storage()
    ptr = int(storage.data_ptr())
    return (str(t.device), ptr), int(storage.nbytes())


def tensor_records(t: Any, path: str) -> list[TensorRecord]:
    """Records for one tensor. A tensor subclass without real storage of its own (a quantized
    wrapper) is opened through ``__tensor_flatten__`` and its inner tensors are recorded."""
    torch = torch_module()
    if isinstance(t, torch.nn.Parameter):
        return []
    try:
        key, storage_bytes = _storage_key(t)
    except (RuntimeError, NotImplementedError, TypeError):
        flatten = getattr(t, "__tensor_flatten__", None)
        if not callable(flatten):
            raise
        names, _ctx = flatten()
        out: list[TensorRecord] = []
        for name in names:
            out.extend(tensor_records(getattr(t, name), f"{path}.{name}"))
        return out
    logical = int(t.numel()) * int(t.element_size())
    if key[1] == 0:
        # Meta tensors and empty storages have no address; key them by the tensor object so
        # two distinct meta tensors are not merged into one.
        key = (key[0], -id(t))
    return [
        TensorRecord(
            path=path,
            shape=tuple(int(d) for d in t.shape),
            dtype=str(t.dtype).removeprefix("torch."),
            device=str(t.device),
            offset=int(t.storage_offset()),
            logical_bytes=logical,
            storage_key=key,
            storage_bytes=storage_bytes,
        )
    ]


def _items(obj: Any) -> Iterator[tuple[str, Any]]:
    """Children of a container or an object's attributes, with path suffixes."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield f"[{k!r}]", v
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield f"[{i}]", v
    elif isinstance(obj, (set, frozenset)):
        for i, v in enumerate(obj):
            yield f"{{{i}}}", v
    else:
        attrs = getattr(obj, "__dict__", None)
        if isinstance(attrs, dict):
            for k, v in attrs.items():
                yield f".{k}", v


def _join(path: str, suffix: str) -> str:
    if not path:
        return suffix.removeprefix(".")
    return path + suffix


def _cache_holdings(cache: Any, path: str, seen: set[int]) -> list[Holding]:
    """The cache itself, plus one holding per whole cache nested inside it."""
    torch = torch_module()
    own: list[TensorRecord] = []
    nested: list[Holding] = []
    stack: list[tuple[str, Any]] = [(path, cache)]
    while stack:
        here, obj = stack.pop()
        for suffix, child in _items(obj):
            if child is None or isinstance(child, (str, bytes, int, float, bool)):
                continue
            where = _join(here, suffix)
            if isinstance(child, torch.Tensor):
                if id(child) not in seen:
                    seen.add(id(child))
                    own.extend(tensor_records(child, where))
                continue
            if id(child) in seen or isinstance(child, torch.nn.Module):
                continue
            if _is_container_cache(child):
                seen.add(id(child))
                nested.extend(_cache_holdings(child, where, seen))
                continue
            if is_cache_object(child) or isinstance(child, (dict, list, tuple)):
                seen.add(id(child))
                stack.append((where, child))
    own.sort(key=lambda r: r.path)
    return [Holding(path, type(cache).__name__, True, tuple(own), id(cache)), *nested]


def _module_internals() -> frozenset[str]:
    torch = torch_module()
    return frozenset(torch.nn.Module().__dict__)


def find_holdings(
    root: Any, *, stop: Iterable[Any] = (), own_tensors: bool = True
) -> list[Holding]:
    """Every cache object reachable from ``root`` (its attributes, containers, submodules and
    plain objects up to ``MAX_PLAIN_DEPTH``), not descending into any object in ``stop`` (other
    declaring owners). With ``own_tensors``, ``root``'s own plain tensors and non-persistent
    buffers are holdings too (``register_buffer(..., persistent=False)`` rings); persistent
    buffers are state-dict weights and parameters are weights: neither is ever cache.
    """
    torch = torch_module()
    internals = _module_internals()
    stop_ids = {id(s) for s in stop} - {id(root)}
    seen: set[int] = set()
    out: list[Holding] = []

    def visit(obj: Any, path: str, plain_depth: int, direct: bool) -> None:
        if id(obj) in seen or id(obj) in stop_ids:
            return
        if isinstance(obj, torch.Tensor):
            if direct and own_tensors and not isinstance(obj, torch.nn.Parameter):
                seen.add(id(obj))
                records = tuple(tensor_records(obj, path))
                out.append(Holding(path, "tensor", False, records, id(obj)))
            return
        seen.add(id(obj))
        if is_cache_object(obj):
            out.extend(_cache_holdings(obj, path, seen))
            return
        if isinstance(obj, torch.nn.Module):
            is_root = obj is root
            if is_root and own_tensors:
                skip = obj._non_persistent_buffers_set
                for name, buf in obj._buffers.items():
                    if buf is not None and name in skip and id(buf) not in seen:
                        seen.add(id(buf))
                        records = tuple(tensor_records(buf, _join(path, "." + name)))
                        out.append(Holding(_join(path, "." + name), "buffer", False, records,
                                           id(buf)))
            for name, child in obj._modules.items():
                if child is not None:
                    visit(child, _join(path, "." + name), 0, False)
            for name, value in obj.__dict__.items():
                if name not in internals:
                    visit(value, _join(path, "." + name), 0, is_root)
            return
        if isinstance(obj, (str, bytes, int, float, bool, type)) or obj is None:
            return
        module = type(obj).__module__ or ""
        if module.startswith(("torch", "transformers", "builtins")) and not isinstance(
            obj, (dict, list, tuple, set, frozenset)
        ):
            return
        if plain_depth >= MAX_PLAIN_DEPTH:
            return
        for suffix, child in _items(obj):
            child_direct = obj is root or (direct and _is_plain_container(obj))
            visit(child, _join(path, suffix), plain_depth + 1, child_direct)

    visit(root, "", 0, False)
    return out


def _is_plain_container(obj: Any) -> bool:
    return isinstance(obj, (dict, list, tuple, set, frozenset))


def measure(obj: Any) -> Bytes:
    """Bytes held by every cache reachable from ``obj`` (a model, a cache, a list of caches),
    deduplicated across all of them. Plain tensors are not counted: without a declaration
    nothing says a tensor is a cache."""
    records = [
        r for h in find_holdings(obj, own_tensors=False) if h.is_cache for r in h.tensors
    ]
    return tally(records)
