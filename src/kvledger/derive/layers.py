"""Engine-neutral facts about what one layer of a model must cache.

These are *facts*, not policy: head counts, dims, windows, state shapes and element types as
the model defines them, before any engine decides how to store them. Layouts under
``kvledger.plan`` turn them into pool classes or engine specs.

Each cache kind owns its arithmetic (``bytes_per_token`` for caches that grow with the
sequence, ``bytes_per_request`` for caches bounded per request), so a model total is one sum
and no ``if kind == ...`` chain is needed anywhere else. ``split(tp)`` returns the facts one
tensor-parallel rank holds; each kind states its own rule (vLLM's, cited where it is subtle).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from enum import StrEnum
from operator import itemgetter

from kvledger.declare.dtypes import KVDType, resolve_dtype
from kvledger.derive.errors import ConfigError
from kvledger.records import field, fields, record, replace

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any, ClassVar, Self, TypeVar

    T = TypeVar("T")


class Kind(StrEnum):
    """What a layer caches."""

    FULL = "full"  # every past position, K and V
    SLIDING = "sliding"  # the last `window` positions
    CHUNKED = "chunked"  # positions of the current `window`-sized chunk (Llama-4 local)
    MLA = "mla"  # one compressed latent (+ rope) per position (DeepSeek MLA)
    INDEXER = "indexer"  # sparse-attention indexer keys (DeepSeek DSA / GLM)
    COMPRESSED = "compressed"  # compressed KV, one entry per `ratio` positions (DeepSeek-V4)
    CROSS = "cross"  # cross-attention over a fixed number of encoder positions
    STATE = "state"  # recurrent state, fixed size per request (Mamba, GDN, KDA, ...)
    NONE = "none"  # the layer caches nothing (no-op attention, shared KV)


class Role(StrEnum):
    """Which part of the model a layer belongs to."""

    DECODER = "decoder"
    MTP = "mtp"  # multi-token-prediction / next-n layers shipped with the model
    DRAFT = "draft"  # a separate speculative draft model (EAGLE3)
    ENCODER = "encoder"


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def split_heads(heads: int, tp: int) -> int:
    """KV heads on one rank: split when divisible, replicated (1 per rank) when heads < tp.

    vLLM (``ModelConfig.get_num_kv_heads``): ``max(1, total_num_kv_heads // tp)``.
    """
    if tp < 1:
        raise ValueError(f"tensor parallel size must be >= 1, got {tp}")
    if heads >= tp and heads % tp:
        raise ValueError(f"{heads} KV heads cannot be split over tensor parallel size {tp}")
    return max(1, heads // tp)


@record(frozen=True, kw_only=True)
class LayerCache:
    """Base fact: one layer's cache. Subclasses add geometry and own the arithmetic."""

    kind: ClassVar[Kind] = Kind.NONE
    index: int
    role: Role = Role.DECODER
    dtype: str = "bfloat16"
    # The layer reads another layer's cache (Gemma-4 shared KV, ...): it adds no bytes.
    shares_with: int | None = None
    note: str = ""
    # Integer fields that must be >= 1 (every integer field must be >= 0).
    POSITIVE: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        """Reject impossible geometry (a negative or zero head count from a broken config)
        here, once, instead of letting it become a plausible-looking zero-byte plan."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, int) and not isinstance(value, bool) and value < 0:
                raise ConfigError(
                    f"layer {self.index}: {type(self).__name__}.{f.name} must be >= 0, "
                    f"got {value}"
                )
        for name in self.POSITIVE:
            if getattr(self, name) < 1:
                raise ConfigError(
                    f"layer {self.index}: {type(self).__name__}.{name} must be >= 1, "
                    f"got {getattr(self, name)}"
                )

    @property
    def kv_dtype(self) -> KVDType:
        return resolve_dtype(self.dtype)

    @property
    def owns_memory(self) -> bool:
        return self.shares_with is None

    def bytes_per_token(self) -> int:
        """Bytes added per cached position (0 for fixed-size kinds)."""
        return 0

    def bytes_per_request(self) -> int:
        """Bytes of fixed per-request state (0 for position-indexed kinds)."""
        return 0

    def split(self, tp: int) -> Self:
        """The facts one tensor-parallel rank holds. Default: replicated."""
        return self

    def with_dtype(self, dtype: str) -> Self:
        return replace(self, dtype=resolve_dtype(dtype).name)

    def at(self, index: int, role: Role | None = None) -> Self:
        """These facts for the layer at ``index`` (and ``role``): a family derives one layer
        of each kind and places it at every index of that kind.

        A copy, not a new construction: ``__post_init__`` checked these facts once, and an
        index or a role changes none of what it checks. Why not ``replace``: it validates
        every field again, for every layer of a 100-layer model, on each derivation.
        """
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ConfigError(f"layer index must be an integer >= 0, got {index!r}")
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__)
        copy.__dict__["index"] = index
        if role is not None:
            copy.__dict__["role"] = Role(role)
        return copy

    def describe(self) -> dict[str, Any]:
        """A flat, JSON-ready description (for ``kvledger inspect --json``)."""
        out: dict[str, Any] = {"index": self.index, "kind": str(self.kind), "role": str(self.role)}
        for f in fields(self):
            if f.name in ("index", "role", "note"):
                continue
            value = getattr(self, f.name)
            if value is None or value == () or value == "":
                continue
            out[f.name] = value if not isinstance(value, StrEnum) else str(value)
        if self.note:
            out["note"] = self.note
        out["bytes_per_token"] = self.bytes_per_token() if self.owns_memory else 0
        out["bytes_per_request"] = self.bytes_per_request() if self.owns_memory else 0
        return out


@record(frozen=True, kw_only=True)
class NoCache(LayerCache):
    """A layer that caches nothing (no-op attention block, MLP-only block)."""

    kind: ClassVar[Kind] = Kind.NONE


@record(frozen=True, kw_only=True)
class Attention(LayerCache):
    """Standard K/V attention. K and V may differ in heads and head dim."""

    kind: ClassVar[Kind] = Kind.FULL
    POSITIVE: ClassVar[tuple[str, ...]] = ("k_heads", "k_dim")
    k_heads: int
    k_dim: int
    v_heads: int
    v_dim: int
    sinks: bool = False  # learned attention sinks (gpt-oss): no extra cache, noted for people

    def bytes_per_token(self) -> int:
        return self.kv_dtype.nbytes(self.k_heads * self.k_dim) + self.kv_dtype.nbytes(
            self.v_heads * self.v_dim
        )

    def split(self, tp: int) -> Self:
        k_heads, v_heads = split_heads(self.k_heads, tp), split_heads(self.v_heads, tp)
        if (k_heads, v_heads) == (self.k_heads, self.v_heads):
            return self  # frozen: the same facts need no copy
        return replace(self, k_heads=k_heads, v_heads=v_heads)


@record(frozen=True, kw_only=True)
class FullAttention(Attention):
    """Attends to every past position (the model's ordinary K/V attention)."""

    kind: ClassVar[Kind] = Kind.FULL


@record(frozen=True, kw_only=True)
class SlidingAttention(Attention):
    """Attends to the last ``window`` positions (window as the config states it)."""

    kind: ClassVar[Kind] = Kind.SLIDING
    POSITIVE: ClassVar[tuple[str, ...]] = ("k_heads", "k_dim", "window")
    window: int


@record(frozen=True, kw_only=True)
class ChunkedAttention(Attention):
    """Attends within fixed chunks of ``chunk`` positions (Llama-4 local layers)."""

    kind: ClassVar[Kind] = Kind.CHUNKED
    POSITIVE: ClassVar[tuple[str, ...]] = ("k_heads", "k_dim", "chunk")
    chunk: int


@record(frozen=True, kw_only=True)
class CrossAttention(Attention):
    """Cross-attention K/V over ``encoder_len`` encoder positions, written once per request."""

    kind: ClassVar[Kind] = Kind.CROSS
    POSITIVE: ClassVar[tuple[str, ...]] = ("k_heads", "k_dim", "encoder_len")
    encoder_len: int

    def bytes_per_request(self) -> int:
        return self.bytes_per_token() * self.encoder_len

    def bytes_per_token(self) -> int:
        # Per *encoder* position; the cache does not grow with decoded tokens.
        return super().bytes_per_token()


@record(frozen=True, kw_only=True)
class MLA(LayerCache):
    """Multi-head latent attention: one latent of ``latent_dim`` plus ``rope_dim`` per token.

    Replicated on every tensor-parallel rank (the latent is shared by all heads).
    """

    kind: ClassVar[Kind] = Kind.MLA
    POSITIVE: ClassVar[tuple[str, ...]] = ("latent_dim",)
    latent_dim: int
    rope_dim: int

    def bytes_per_token(self) -> int:
        return self.kv_dtype.nbytes(self.latent_dim + self.rope_dim)


@record(frozen=True, kw_only=True)
class Indexer(LayerCache):
    """Sparse-attention indexer keys: one ``head_dim`` key per token, quantized with one scale
    of ``scale_bytes`` per ``quant_block`` values (DeepSeek-V3.2 DSA: fp8 + fp32 scale / 128).
    Replicated on every tensor-parallel rank.
    """

    kind: ClassVar[Kind] = Kind.INDEXER
    POSITIVE: ClassVar[tuple[str, ...]] = ("head_dim",)
    head_dim: int
    quant_block: int = 0
    scale_bytes: int = 0

    def bytes_per_token(self) -> int:
        if not self.quant_block:
            return self.kv_dtype.nbytes(self.head_dim)
        scales = ceil_div(self.head_dim, self.quant_block) * self.scale_bytes
        return self.kv_dtype.nbytes(self.head_dim) + scales


@record(frozen=True)
class StateTensor:
    """One fixed-size per-request tensor of a recurrent layer."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def __post_init__(self) -> None:
        if any(isinstance(d, bool) or not isinstance(d, int) or d < self.least(axis)
               for axis, d in enumerate(self.shape)):
            raise ConfigError(f"state tensor {self.name}: impossible shape {self.shape}")

    def least(self, axis: int) -> int:
        """The smallest size dimension ``axis`` may have (a subclass may allow an empty one)."""
        return 1

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return resolve_dtype(self.dtype).nbytes(self.numel)


@record(frozen=True, kw_only=True)
class RecurrentState(LayerCache):
    """A recurrent (linear-attention / SSM) layer: fixed-size state per request.

    Subclasses name the state kind and define ``tensors(tp)`` — the per-rank state tensors —
    from the model's own geometry, following the engine-neutral math of the architecture and
    vLLM's tensor-parallel split rules where they differ.
    """

    kind: ClassVar[Kind] = Kind.STATE
    state_kind: ClassVar[str] = "state"
    POSITIVE: ClassVar[tuple[str, ...]] = ("tp",)
    tp: int = 1

    def tensors(self) -> Sequence[StateTensor]:
        raise NotImplementedError

    def bytes_per_request(self) -> int:
        return sum(t.nbytes for t in self.tensors())

    def split(self, tp: int) -> Self:
        return self if tp == self.tp else replace(self, tp=tp)

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["state_kind"] = self.state_kind
        out["tensors"] = [
            {"name": t.name, "shape": list(t.shape), "dtype": t.dtype} for t in self.tensors()
        ]
        return out


@record(frozen=True)
class LayerGroup:
    """Layers whose facts are equal but for their index: planned once, counted ``len(indices)``
    times (most models have one to four such groups, however many layers they have)."""

    layer: LayerCache  # the first of them (its index is indices[0])
    indices: tuple[int, ...]  # every member's ``index``, in the order of ``ModelFacts.layers``
    ordinals: tuple[int, ...]  # every member's position in ``ModelFacts.layers``


# Per record class: the values of every field but ``index``, read from the instance dict.
_FACTS_BUT_INDEX: dict[type, Any] = {}


def group_layers(layers: Sequence[LayerCache]) -> tuple[LayerGroup, ...]:
    """``layers`` as groups of equal facts (all fields but ``index``), in order of first
    appearance. Two layers of different classes are never in one group."""
    members: dict[tuple[Any, ...], list[int]] = {}
    for ordinal, layer in enumerate(layers):
        cls = type(layer)
        getter = _FACTS_BUT_INDEX.get(cls)
        if getter is None:
            getter = itemgetter(*[f.name for f in fields(cls) if f.name != "index"])
            _FACTS_BUT_INDEX[cls] = getter
        try:
            members.setdefault((cls, getter(layer.__dict__)), []).append(ordinal)
        except TypeError:  # a field value that cannot be hashed: the layer is a group alone
            members[(cls, ordinal)] = [ordinal]
    return tuple(
        LayerGroup(layers[ords[0]], tuple(layers[o].index for o in ords), tuple(ords))
        for ords in members.values()
    )


@record(frozen=True)
class ModelFacts:
    """Everything derive knows about a model's caches."""

    model: str  # what the user named (catalog id, path, or "<dict>")
    model_type: str
    architectures: tuple[str, ...]
    layers: tuple[LayerCache, ...]
    model_dtype: str  # the weights' / activations' dtype from the config
    kv_dtype: str  # resolved KV element type (explicit > quant config > config dtype)
    kv_dtype_source: str  # "option", "quantization_config", "hf_quant_config", "config"
    max_position_embeddings: int | None
    config: dict[str, Any] = field(repr=False, default_factory=dict)
    notes: tuple[str, ...] = ()
    # The checkpoint's hf_quant_config.json (ModelOpt), when one sat beside config.json: an
    # engine may read its KV scheme (vLLM does for ModelOpt checkpoints).
    hf_quant_config: dict[str, Any] | None = field(repr=False, default=None)
    # Extra facts a layout may need (e.g. vLLM's hybrid alignment inputs); family-defined.
    extras: dict[str, Any] = field(default_factory=dict)
    # A size the config states two ways that disagree, derived as vLLM's model code does.
    warnings: tuple[str, ...] = ()
    # The language model's config as its config class holds it: the (text) config's own keys,
    # and the class defaults (derive/model_types.py) for the ones it omits. What a weights or
    # activation estimate must read, so that it sees the sizes derive saw (llava-1.5's
    # text_config states no sizes; LlamaConfig fills them in).
    text_config: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)
    # (file, max_seq_length) of a sentence-transformers config beside config.json
    # (derive/max_len.py ``sentence_max_len``): vLLM starts at that length, SGLang ignores it.
    sentence_max_len: tuple[str, int] | None = None

    def language_config(self) -> dict[str, Any]:
        """``text_config``; for facts built without it (by hand, in tests), the wrapper's text
        config as the file states it."""
        if self.text_config:
            return self.text_config
        from kvledger.derive.config import Config

        return Config(self.config, model=self.model).text().raw

    @property
    def groups(self) -> tuple[LayerGroup, ...]:
        """``layers`` as groups of identical layers (``group_layers``), computed once per
        facts object: a layout plans each group once, whatever the number of layers."""
        return self.cached("groups", lambda: group_layers(self.layers))

    def cached(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, once per facts object and ``key``: a view of these facts that a
        layout would otherwise rebuild for every request (the facts are frozen, so it never
        goes stale). Derive a model once and plan it many times to use it.

        The memo sits beside the fields — equality, hashing and ``replace`` see fields only —
        and is written past the frozen ``__setattr__``, as ``functools.cached_property`` does.
        """
        memo: dict[Hashable, Any] | None = self.__dict__.get("_memo")
        if memo is None:
            memo = self.__dict__["_memo"] = {}
        if key not in memo:
            memo[key] = compute()
        found: T = memo[key]
        return found

    def by_role(self, role: Role) -> tuple[LayerCache, ...]:
        return tuple(layer for layer in self.layers if layer.role == role)

    def bytes_per_token(self, role: Role | None = None) -> int:
        layers = self.layers if role is None else self.by_role(role)
        return sum(layer.bytes_per_token() for layer in layers if layer.owns_memory
                   and layer.kind is not Kind.CROSS)

    def bytes_per_request(self, role: Role | None = None) -> int:
        layers = self.layers if role is None else self.by_role(role)
        return sum(layer.bytes_per_request() for layer in layers if layer.owns_memory)
