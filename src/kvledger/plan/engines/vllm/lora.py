"""The GPU bytes vLLM reserves for LoRA slots (``--enable-lora``), per GPU.

vLLM builds its ``LoRAModelManager`` while it loads the model (v1/worker/
lora_model_runner_mixin.py ``load_lora_model``), so the stacks below sit in GPU memory before
the profiling run and come out of the KV budget like the weights (gpu_worker.py
``determine_available_memory``). The profiling run itself runs with ``max_loras`` dummy
adapters (``maybe_setup_dummy_loras``: zero weights built on the CPU and copied into these
same stacks), so it allocates no further slot.

``_create_lora_modules`` (lora/model_manager.py) wraps every module ``get_supported_lora_modules``
lists (every ``LinearBase`` by its last name, and the class's ``embedding_modules``) with
``max_loras`` slots (``lora_slots``), each stack of ``lora_dtype`` (``LoRAConfig``: "auto" =
the model dtype). Shapes per rank, r = ``max_lora_rank``, L = ``max_loras``
(lora/layers/base_linear.py and column_parallel_linear.py ``create_lora_weights``):

- column-parallel (``MergedQKVParallelLinearWithLoRA`` for qkv_proj, 3 slices;
  ``MergedColumnParallelLinearWithLoRA`` for gate_up_proj, 2 slices): per slice
  lora_a (L, 1, r, in) — r / TP with ``fully_sharded_loras`` — and lora_b (L, 1, slice
  output / TP, r);
- row-parallel (o_proj, down_proj: ``RowParallelLinearWithLoRA``): lora_a (L, 1, r, in / TP)
  and lora_b (L, 1, out, r) — out / TP with ``fully_sharded_loras``;
- ``VocabParallelEmbeddingWithLoRA`` (embed_tokens): lora_a (L, vocab, r) and lora_b
  (L, 1, hidden, r), not split over TP;
- ``LogitsProcessorWithLoRA`` (lm_head): lora_a (L, 1, r, hidden) and lora_b
  (L, 1, vocab, r), not split; vLLM refuses a vocabulary over 258,048 here.

Not counted: the Punica wrapper's index buffers (a few int tensors of ``max_num_batched_tokens``
entries: under 1 MiB at 8,192 tokens) and the LoRA kernels' transient buffers in the profiled
activation peak (kvledger's activation estimate does not model them).

Mixture of experts (``Qwen3MoeForCausalLM``, ``MixtralForCausalLM``: the router and the experts
are wrapped too): the router ``GateLinear`` is a ReplicatedLinear
(``ReplicatedLinearWithLoRA``: lora_a (L, 1, r, hidden), lora_b (L, 1, experts, r)); the
experts ``FusedMoEWithLoRA`` (lora/layers/fused_moe.py ``_create_lora_a_weights`` /
``_create_lora_b_weights``, gated: two w13 slices): w13 lora_a 2 × (L, E, r, hidden), w2 lora_a
(L, E, r, I), w13 lora_b 2 × (L, E, I, r), w2 lora_b (L, E, hidden, r), E the local experts and
I ``intermediate_size_per_partition`` — counted unpadded and without expert parallelism, so the
line is ``estimated``. Other layer kinds are refused. Read in vLLM 0.33.0; 0.32.0 allocates the
same stacks (its fused_moe.py differs only in how an adapter is sliced into them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.errors import PlanError
from kvledger.plan.engines.vllm.launch import VllmLaunch
from kvledger.plan.engines.vllm.linear_shapes import Dims, NotLlamaLike, dims
from kvledger.records import record

_MAX_LORA_VOCAB = 258048  # LogitsProcessorWithLoRA.create_lora_weights


class LoraNotModelled(PlanError):
    """LoRA on a model (or with a setting) kvledger does not size; names why."""


@record(frozen=True)
class LoraBytes:
    per_gpu: int  # bytes on the binding GPU
    basis: str  # "exact" (one stage) or "estimated" (stages split evenly)
    detail: str
    elements_per_rank: int  # every stage's stacks on one TP rank


def _stacks(d: Dims, launch: VllmLaunch) -> dict[str, int]:
    """Elements of each wrapped module's lora_a + lora_b, per rank (module docstring)."""
    slots, r, tp = launch.max_loras, launch.max_lora_rank, d.tp
    sharded = launch.fully_sharded_loras
    a_rank = r // tp if sharded else r
    row_out = d.hidden // tp if sharded else d.hidden
    attention = {
        "qkv_proj": 3 * slots * a_rank * d.hidden + slots * (d.q + 2 * d.kv) * r,
        "o_proj": slots * r * d.o_in + slots * row_out * r,
    }
    mlp = {
        "gate_up_proj": 2 * slots * a_rank * d.hidden + slots * 2 * d.inter * r,
        "down_proj": slots * r * d.inter + slots * row_out * r,
    }
    out = {name: n * d.layers for name, n in attention.items()}
    dense = d.layers - d.moe_layers
    if dense:
        out.update({name: n * dense for name, n in mlp.items()})
    if d.moe_layers:
        e, i = d.experts, d.moe_inter
        # ReplicatedLinearWithLoRA (the router): lora_a (L, 1, r, hidden), lora_b (L, 1, E, r).
        out["gate"] = (slots * r * d.hidden + slots * e * r) * d.moe_layers
        # FusedMoEWithLoRA: w13 lora_a 2 × (L, E, r, hidden), w2 lora_a (L, E, r, I),
        # w13 lora_b 2 × (L, E, I, r), w2 lora_b (L, E, hidden, r) (rank / hidden split by
        # fully_sharded_loras as above).
        out["experts"] = (2 * slots * e * a_rank * d.hidden + slots * e * r * i
                          + 2 * slots * e * i * r + slots * e * row_out * r) * d.moe_layers
    if d.embeddings_lora:
        out["embed_tokens"] = slots * d.vocab * r + slots * d.hidden * r
        out["lm_head"] = slots * r * d.hidden + slots * d.vocab * r
    return out


def lora_bytes(cfg: Mapping[str, Any], launch: VllmLaunch, *, model_dtype: str, tp: int,
               pp: int, expert_parallel: bool = False) -> LoraBytes:
    """The LoRA stacks on one GPU (``LoraNotModelled`` names what is not modelled)."""
    from kvledger.plan.weights import serving_dtype

    try:
        d = dims(cfg, tp, moe=True)
    except NotLlamaLike as exc:
        raise LoraNotModelled(f"--enable-lora: kvledger does not size the LoRA slots of {exc}"
                              ) from None
    if expert_parallel and d.moe_layers:
        raise LoraNotModelled("--enable-lora with expert parallelism: each rank's share of the "
                              "experts' LoRA stacks is not modelled")
    if launch.fully_sharded_loras and launch.max_lora_rank % tp:
        raise LoraNotModelled(f"--fully-sharded-loras: max_lora_rank {launch.max_lora_rank} "
                              f"is not divisible by {tp} tensor-parallel ranks (vLLM's "
                              "divide() asserts it)")
    if d.embeddings_lora and d.vocab > _MAX_LORA_VOCAB:
        raise LoraNotModelled(f"--enable-lora: vLLM refuses a vocabulary of {d.vocab:,} "
                              f"(LogitsProcessorWithLoRA: vocab size must be <= "
                              f"{_MAX_LORA_VOCAB})")
    dtype = serving_dtype(model_dtype) if launch.lora_dtype == "auto" else launch.lora_dtype
    width = 2  # float16 / bfloat16: the only LoRADType values besides auto
    stacks = _stacks(d, launch)
    elements = sum(stacks.values())
    total = elements * width
    per_gpu = -(-total // pp)
    parts = ", ".join(f"{name} {n * width:,} B" for name, n in stacks.items())
    detail = (f"{launch.max_loras} slot(s) × rank {launch.max_lora_rank} at {dtype}"
              f"{', fully sharded' if launch.fully_sharded_loras else ''}: {parts}")
    if not d.embeddings_lora:
        detail += f"; {d.architecture} wraps no embedding or LM head"
    if pp > 1:
        detail += f"; per GPU: total / {pp} PP stages"
    basis = "exact" if pp == 1 else "estimated"
    if d.moe_layers:
        # FusedMoEConfig.intermediate_size_per_partition: a MoE backend may pad it.
        basis = "estimated"
        detail += ("; experts at their unpadded intermediate size, without expert "
                   "parallelism")
    return LoraBytes(per_gpu, basis, detail, elements)
