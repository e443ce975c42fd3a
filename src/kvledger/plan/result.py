"""What ``plan_model`` and ``fit_model`` return, and their JSON (the machine interface).

Every top-level number is *per GPU* — the way vLLM logs it and the way
``--kv-cache-memory-bytes`` is given. With pipeline parallelism, ``ranks`` holds one object per
stage (one GPU of that stage; tensor-parallel ranks of a stage are identical), and the
top-level ``pools`` / ``reserved_bytes`` are those of the stage that reserves the most (the GPU
that binds). Data parallelism multiplies replicas (SGLang's DP attention instead splits one
replica's TP group into pools); ``totals`` says what all GPUs hold together.

``engine_label`` says what the numbers mean (vLLM's allocator, or kvledger's native layout);
keys only one engine has (``vllm_refuses_to_start``; SGLang's ``max_running_requests``) come
from the layout's ``engine_fields``. ``model_local_kv`` lists each model-local declaration
(name, rows driver and count, bytes per row, peak bytes, where it went, stage) when any was
given; ``kvledger.plan.model_local`` says what each ``status`` means.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from kvledger import records
from kvledger.declare.poolkind import Pool
from kvledger.derive.layers import Kind, LayerCache, LayerGroup, ModelFacts, group_layers
from kvledger.plan.budget import Budget
from kvledger.records import field, record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from kvledger.plan.model_local import LocalRow


@record(frozen=True)
class PoolRow:
    """One pool of a plan as the JSON shows it: its entries, their size, and who asked for it.

    ``pool`` is the ``Pool`` kind (PAGE, STATE or FIXED) — what the class scales with, never
    inferred from its name; a kind's value (``"page"``) is accepted and converted.
    """

    name: str
    pool: Pool
    entries: int
    entry_bytes: int
    entries_per_req: int
    reserved_bytes: int
    source: str = "engine"

    def __post_init__(self) -> None:
        if not isinstance(self.pool, Pool):
            object.__setattr__(self, "pool", Pool(self.pool))

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "pool": str(self.pool), "entries": self.entries,
            "entry_bytes": self.entry_bytes, "entries_per_req": self.entries_per_req,
            "reserved_bytes": self.reserved_bytes, "source": self.source,
        }


@record(frozen=True)
class RankResult:
    """One pipeline stage, as one of its GPUs sees it (after reconciliation)."""

    stage: int
    layers_range: tuple[int, int]  # [start, end) over decoder layers
    num_cached_layers: int
    block_size: int
    num_blocks: int
    kv_cache_tokens: int
    max_concurrency: float
    available_bytes: int
    reserved_bytes: int
    pools: tuple[PoolRow, ...]
    warnings: tuple[str, ...] = ()
    vllm_refuses_to_start: bool | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "stage": self.stage,
            "layers_range": list(self.layers_range),
            "num_cached_layers": self.num_cached_layers,
            "block_size": self.block_size,
            "num_blocks": self.num_blocks,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_concurrency": self.max_concurrency,
            "available_bytes": self.available_bytes,
            "reserved_bytes": self.reserved_bytes,
            "pools": [p.to_json() for p in self.pools],
            "warnings": list(self.warnings),
        }
        if self.vllm_refuses_to_start is not None:
            out["vllm_refuses_to_start"] = self.vllm_refuses_to_start
        return out


def _per_entry(layer: LayerCache) -> tuple[int, int] | None:
    """(bytes of one entry, tokens per entry) for a layer that caches one entry per ``ratio``
    tokens (DeepSeek-V4's compressed KV and its indexer) when the entry is not a whole number
    of bytes per token: vLLM 0.33's ``fp8_ds_mla`` entry of 584 B per 128 tokens (448 fp8 +
    7 scales + 1 pad + 64 × 2 rope, ``deepseek_v4.row_bytes``). None for every other layer."""
    entry_bytes = getattr(layer, "entry_bytes", None)
    ratio = getattr(layer, "ratio", None)
    if not callable(entry_bytes) or not isinstance(ratio, int) or ratio <= 1:
        return None
    entry = int(entry_bytes())
    return (entry, ratio) if entry % ratio else None


def _summary_row(layer: LayerCache) -> dict[str, Any]:
    owns = layer.owns_memory
    per_entry = _per_entry(layer) if owns else None
    row: dict[str, Any] = {
        "kind": str(layer.kind),
        "role": str(layer.role),
        # Not a whole number of bytes per token: None, and the entry's own figures (as
        # LayerCache.describe gives them for these kinds); rows_bytes adds them exactly.
        "bytes_per_token": None if per_entry else layer.bytes_per_token() if owns else 0,
        "bytes_per_request": layer.bytes_per_request() if owns else 0,
        "dtype": layer.dtype,
    }
    if per_entry:
        row["entry_bytes"], row["tokens_per_entry"] = per_entry
    for attr in ("window", "chunk", "encoder_len", "state_kind"):
        value = getattr(layer, attr, None)
        if value is not None:
            row[attr] = value
    if not owns:
        row["shares_with"] = layer.shares_with
    return row


def group_summary(
    groups: Sequence[LayerGroup], tp: int = 1,
    classes: dict[tuple[int, str], str] | None = None,
    not_cached: Callable[[LayerCache], str] | None = None,
) -> list[dict[str, Any]]:
    """Run-length groups of consecutive layers with the same facts (per-layer kind summary),
    from layer groups (``ModelFacts.groups``): each group's row (its facts on one of ``tp``
    ranks) is computed once, then the layers are walked in model order.

    Consecutive, not global: an interleaved 5 sliding : 1 full pattern stays visible.
    ``not_cached(layer)`` is the engine's reason for allocating nothing for a layer ("" when
    it does): such a row holds 0 bytes and says why (``not_cached``), so that the rows add up
    to what the engine stores.
    """
    size = sum(len(g.ordinals) for g in groups)
    at: list[tuple[int, int]] = [(0, 0)] * size  # ordinal → (group number, layer index)
    for number, group in enumerate(groups):
        for ordinal, index in zip(group.ordinals, group.indices, strict=True):
            at[ordinal] = (number, index)
    base = [_summary_row(g.layer.split(tp) if tp > 1 else g.layer) for g in groups]
    for number, group in enumerate(groups):
        why = not_cached(group.layer) if not_cached is not None else ""
        if why:
            base[number] = {**base[number], "bytes_per_token": 0, "bytes_per_request": 0,
                            "not_cached": why}
    kinds = [str(g.layer.kind) for g in groups]
    rows: list[dict[str, Any]] = []
    last_row: dict[str, Any] | None = None  # the facts of the last run (without its range)
    for number, index in at:
        row = base[number]
        if classes is not None:
            row = {**row, "class": classes.get((index, kinds[number]))}
        if last_row is not None and (row is last_row or row == last_row):
            rows[-1]["last"] = index
            rows[-1]["count"] += 1
        else:
            rows.append({**row, "first": index, "last": index, "count": 1})
            last_row = row
    return rows


def facts_summary(facts: ModelFacts, tp: int = 1) -> list[dict[str, Any]]:
    """``group_summary`` of a model's layers on one of ``tp`` ranks: computed once per facts
    object and ``tp``, handed out as copies (a caller may change its rows)."""
    rows = facts.cached(("layer summary", tp), lambda: group_summary(facts.groups, tp))
    return [dict(row) for row in rows]


# The kinds whose element type is the KV cache dtype an engine resolves: the attention caches.
# Indexers, compressed caches and recurrent states keep the dtype derive gave them.
_KV_KINDS = frozenset({Kind.FULL, Kind.SLIDING, Kind.CHUNKED, Kind.CROSS, Kind.MLA})


def stored_summary(
    facts: ModelFacts, tp: int, kv_dtype: str,
    not_cached: Callable[[LayerCache], str] | None = None,
    raw_sparse_mla: bool = False,
    mla_row_bytes: int | None = None,
) -> list[dict[str, Any]]:
    """``facts_summary`` as an engine stores the layers: the attention caches in the KV dtype
    the engine resolved (``kv_dtype``, a dtype name), where derive's differs — a float32
    checkpoint that vLLM and SGLang serve in bfloat16 (gpt-oss states no dtype, so derive
    reads transformers' float32, 4,096 B a layer; the engines store 2,048 B), or a checkpoint
    KV scheme the engine does not adopt — and the layers it allocates nothing for at 0 bytes
    (``group_summary``'s ``not_cached``). ``raw_sparse_mla``: the engine's sparse MLA kernel
    stores fp8 as one-byte rows (576 B for 512 + 64), not the packed 656-byte layout derive
    states for a DSA model (``SparseMLA.packed``). ``mla_row_bytes``: the engine stores every
    cached MLA row at this fixed size whatever the model's dims (vLLM's packed
    ``fp8_ds_mla``: 656 B, also for a latent without RoPE)."""
    if (not kv_dtype or kv_dtype == facts.kv_dtype) and not_cached is None \
            and not raw_sparse_mla and mla_row_bytes is None:
        return facts_summary(facts, tp)
    groups = facts.groups
    if kv_dtype and kv_dtype != facts.kv_dtype:
        groups = tuple(
            records.replace(g, layer=records.replace(g.layer, dtype=kv_dtype))
            if g.layer.kind in _KV_KINDS and g.layer.dtype == facts.kv_dtype else g
            for g in groups
        )
    if raw_sparse_mla:
        groups = tuple(
            records.replace(g, layer=records.replace(g.layer, packed=False))
            if getattr(g.layer, "packed", False) else g
            for g in groups
        )
    rows = group_summary(groups, tp, not_cached=not_cached)
    if mla_row_bytes is not None:
        rows = [{**row, "bytes_per_token": mla_row_bytes}
                if row["kind"] == str(Kind.MLA) and row.get("bytes_per_token") else row
                for row in rows]
    return rows


def rows_bytes(rows: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """(bytes per token, bytes per request) the layer rows hold together — the model on one
    tensor-parallel rank (with pipeline parallelism, every stage's layers): rows × their
    count; cross-attention counts per request only (it caches the encoder's positions once),
    as ``ModelFacts.bytes_per_token`` does."""
    # Each row's share as bytes / tokens (a per-entry layer: one entry per tokens_per_entry
    # tokens), summed exactly over a common denominator (integers: fractions and decimal stay
    # off the start-up path); a fraction of a byte per token left is rounded up.
    shares = [(int(r["entry_bytes"]) * int(r.get("count") or 1), int(r["tokens_per_entry"]))
              if r.get("entry_bytes") and r.get("bytes_per_token") is None
              else (int(r.get("bytes_per_token") or 0) * int(r.get("count") or 1), 1)
              for r in rows if r.get("kind") != "cross"]
    denominator = 1
    for _, tokens in shares:
        denominator = denominator * tokens // math.gcd(denominator, tokens)
    numerator = sum(value * (denominator // tokens) for value, tokens in shares)
    per_token = -(-numerator // denominator)
    per_request = sum(int(r.get("bytes_per_request") or 0) * int(r.get("count") or 1)
                      for r in rows)
    return per_token, per_request


def layer_summary(
    layers: Sequence[LayerCache], classes: dict[tuple[int, str], str] | None = None
) -> list[dict[str, Any]]:
    """``group_summary`` of a list of (already split) layers."""
    return group_summary(group_layers(layers), 1, classes)


@record(frozen=True)
class PlanResult:
    """What ``plan_model`` returns; ``to_json()`` is the machine interface of ``kvledger plan``."""

    model: str
    engine: str
    block_size: int
    num_blocks: int
    kv_cache_tokens: int
    max_concurrency: float
    max_model_len: int
    available_bytes: int
    reserved_bytes: int
    pools: tuple[PoolRow, ...]
    layers: tuple[dict[str, Any], ...]
    warnings: tuple[str, ...]
    budget: Budget
    ranks: tuple[RankResult, ...]
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    max_num_seqs: int = 256
    kv_cache_dtype: str = ""
    answers: dict[str, Any] = field(default_factory=dict)
    engine_label: str = ""
    engine_release: str = ""  # the release planned ("0.32.0"); "" for the native layout
    # Why the release planned is not the one asked ("" when it is): an unknown well-formed
    # release (vllm==0.35) is planned as the nearest known one.
    release_note: str = ""
    # The engine would refuse to start (one max_model_len request does not fit).
    refuses_to_start: bool = False
    # JSON keys only this engine has (vllm_refuses_to_start, max_running_requests, ...).
    engine_fields: Mapping[str, Any] = field(default_factory=dict)
    model_local_kv: tuple[LocalRow, ...] = ()
    source: dict[str, Any] | None = None  # where the config came from (ModelSource.describe)
    # KV pools inside one replica (LayoutPlan.attention_dp_size: SGLang's DP attention).
    attention_dp_size: int = 1
    enable_expert_parallel: bool = False
    # The weights on one GPU by part, where the engine divides the experts over other GPUs
    # than TP (kvledger.plan.weights.split_per_rank: vLLM with DP); None otherwise.
    weight_split: Mapping[str, Any] | None = None
    # The launch defaults max_num_seqs / max_num_batched_tokens came from (PlanRequest.
    # batch_defaults as JSON; kvledger.plan.batch_defaults); None for an engine with its own.
    batch_defaults: Mapping[str, Any] | None = None
    # LayoutPlan.stored_bytes_per_token: the engine's pool's bytes a token, where the layer
    # rows do not add up to it (a warning says why); None: the rows' sum.
    stored_bytes_per_token: int | None = None

    @property
    def vllm_refuses_to_start(self) -> bool | None:
        """vLLM's own verdict (None for other engines)."""
        value = self.engine_fields.get("vllm_refuses_to_start")
        return None if value is None else bool(value)

    @property
    def replicas(self) -> int:
        """Engine copies: data parallelism, unless its groups run inside one TP group
        (SGLang's DP attention, where data_parallel_size counts attention groups)."""
        return self.data_parallel_size // self.attention_dp_size

    @property
    def num_gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size * self.replicas

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model,
            **({"source": dict(self.source)} if self.source is not None else {}),
            "engine": self.engine,
            "engine_label": self.engine_label,
            "engine_release": self.engine_release or None,
            **({"release_note": self.release_note} if self.release_note else {}),
            "block_size": self.block_size,
            "num_blocks": self.num_blocks,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_concurrency": self.max_concurrency,
            "max_model_len": self.max_model_len,
            "available_bytes": self.available_bytes,
            "reserved_bytes": self.reserved_bytes,
            "pools": [p.to_json() for p in self.pools],
            "layers": [dict(row) for row in self.layers],
            # What the rows hold together (one TP rank; with PP, the stages together): KV
            # bytes per token, state bytes per request.
            "bytes_per_token": self.stored_bytes_per_token or rows_bytes(self.layers)[0],
            "bytes_per_request": rows_bytes(self.layers)[1],
            "warnings": list(self.warnings),
            "budget": self.budget.to_json(),
            # After the KV cache, not subtracted (plan/startup_memory.py); absent when the
            # engine's release states none.
            **({"headroom": h} if (h := self.budget.headroom_json()) else {}),
            "kv_cache_dtype": self.kv_cache_dtype,
            "max_num_seqs": self.max_num_seqs,
            "tensor_parallel_size": self.tensor_parallel_size,
            "pipeline_parallel_size": self.pipeline_parallel_size,
            "data_parallel_size": self.data_parallel_size,
            "enable_expert_parallel": self.enable_expert_parallel,
        }
        if self.weight_split is not None:
            out["weights_per_gpu"] = dict(self.weight_split)
        out.update(self.engine_fields)
        if self.model_local_kv:
            out["model_local_kv"] = [row.to_json() for row in self.model_local_kv]
        if self.tensor_parallel_size > 1 or self.pipeline_parallel_size > 1 or \
                self.data_parallel_size > 1:
            out["ranks"] = [r.to_json() for r in self.ranks]
            # Every pool holds kv_cache_tokens: replicas × attention groups of them; every GPU
            # of a stage reserves its rank's bytes.
            pools = self.replicas * self.attention_dp_size
            # A request never spans pools: where one pool cannot hold one max_model_len
            # request (vLLM refuses to start), all of them together run none — the summary's
            # verdict, which the JSON states too instead of multiplying a fraction.
            where = "replica" if self.attention_dp_size == 1 else "attention DP group"
            none_runs = self.refuses_to_start or bool(self.vllm_refuses_to_start) or \
                self.max_concurrency < 1
            out["totals"] = {
                "gpus": self.num_gpus,
                "replicas": self.replicas,
                **({"attention_dp_groups": self.attention_dp_size}
                   if self.attention_dp_size > 1 else {}),
                "kv_cache_tokens": self.kv_cache_tokens * pools,
                "max_concurrency": 0.0 if none_runs else self.max_concurrency * pools,
                **({"max_concurrency_note": (
                    f"each {where} holds {self.max_concurrency:,.2f} of one "
                    f"{self.max_model_len:,}-token request and a request never spans two, "
                    "so none runs; more replicas do not change that")} if none_runs else {}),
                # Each replica (vLLM: each DP rank's engine) admits max_num_seqs of its own.
                "max_num_seqs": self.max_num_seqs * self.replicas,
                "reserved_bytes": sum(r.reserved_bytes for r in self.ranks)
                * self.tensor_parallel_size * self.replicas,
            }
        if self.batch_defaults is not None:
            out["batch_defaults"] = dict(self.batch_defaults)
        if self.answers:
            out["answers"] = dict(self.answers)
        return out
