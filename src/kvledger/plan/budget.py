"""The KV budget per GPU, line by line, each line labelled ``given``, ``exact`` or ``estimated``.

Two ways in:

- ``given_budget(n)`` — vLLM's ``--kv-cache-memory-bytes``: the budget is ``n``; nothing else
  is subtracted (vLLM skips its memory profiling when this is set).
- ``gpu_budget(...)`` — the way vLLM computes it after profiling:
  ``int(total × gpu_memory_utilization) − weights − activation peak − CUDA graphs − non-torch``.

The ``utilization`` line's basis says where the fraction came from, not only the product:
``given`` when the user passed it; when the engine's own default was used (vLLM 0.32.0:
``CacheConfig.gpu_memory_utilization`` = 0.92, ``vllm/config/cache.py``) the label names the
default and the basis is the GPU total's own (``exact`` for a device-reported preset): the
engine applies exactly that default, so the product is as certain as the total it multiplies.
Rejected: ``given`` for a default (the user gave nothing) and ``estimated`` (nothing about the
default is estimated; ``estimated`` is kept for numbers kvledger cannot know). A total that is
itself ``estimated`` (a datasheet preset) makes the product ``estimated`` whoever gave the
fraction.

The reserves are options. An engine may bring its own rules for them (``estimates``): vLLM's
are its release's profile run as the source computes it (``plan/engines/vllm/reserves.py``:
the sampler dummy run's tensors, the MLA profile tensor, the encoder-cache outputs, the Triton
MLA workspace, what comes after the start-up snapshot), each line listing its terms
(``parts``, with their own basis) in the JSON. The generic defaults below (every other layout
using this formula) are estimates, and are labelled so:

- activation peak: the largest transient of one forward pass over ``max_num_batched_tokens``
  tokens — the MLP's gate+up output (``2 × intermediate`` per token; MoE: per active expert)
  plus a few hidden-sized buffers, at the model dtype, split over tensor-parallel ranks — plus
  fp32 logits for ``min(max_num_seqs, max_num_batched_tokens)`` sampled rows over the
  vocabulary. vLLM measures this by running a dummy batch; we cannot, so we estimate it.
- CUDA graphs: 1 GiB. vLLM logs "Graph capturing finished … took X GiB"; typical values for
  dense models are 0.2–1.5 GiB. Pass the logged figure when you have it.
- non-torch memory (CUDA context, NCCL buffers, allocator fragmentation): 0.5 GiB on one GPU,
  1 GiB when tensor/pipeline parallel communicators exist (or a MoE model's experts span
  data-parallel ranks).

A budget that comes out at or below zero raises ``BudgetTooSmall`` with every line.

Each line has a stable machine ``key`` besides its prose ``label`` (labels may be reworded;
keys may not; a line may add ``parts`` in its JSON): ``gpu_total``, ``utilization``,
``weights``, ``activation_peak``, ``cuda_graphs``, ``non_torch``, ``model_local_kv`` (seed A
caches, ``basis: declared``), ``kv_budget`` (the KV bytes per GPU the layout plans; always
present) and, when the KV budget is given and model-local caches sit beside it,
``per_gpu_total``. An engine's launch options add (``with_launch_lines``): ``lora`` (the LoRA
slots the engine reserves, subtracted) and ``cpu_offload`` (weights moved to the CPU: the
``weights`` line is already that much smaller, so this line says by how much and is not
subtracted again). Not among the lines (they add up to ``kv_budget``, the last), never
subtracted: ``headroom`` (``Budget.after_kv``, the plan's ``headroom`` key, basis
``estimated``), what is left once the KV cache is allocated against what the engine still
allocates then (plan/startup_memory.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from kvledger.declare.dtypes import resolve_dtype
from kvledger.errors import PlanError
from kvledger.plan.request import MAX_BYTES, PlanRequest, finite_fraction
from kvledger.records import record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:  # kept out of the CLI's start-up path when the budget is given
    from typing import Any

    from kvledger.plan.gpus import GpuPreset
    from kvledger.plan.weights import Weights

GIB = 1 << 30

GIVEN = "given"
EXACT = "exact"
ESTIMATED = "estimated"
DECLARED = "declared"  # a model's own model-local declarations (seed A)

# Stable machine keys of the budget lines (module docstring).
GPU_TOTAL = "gpu_total"
UTILIZATION = "utilization"
WEIGHTS = "weights"
ACTIVATION_PEAK = "activation_peak"
CUDA_GRAPHS = "cuda_graphs"
NON_TORCH = "non_torch"
MODEL_LOCAL_KV = "model_local_kv"
KV_BUDGET = "kv_budget"
PER_GPU_TOTAL = "per_gpu_total"
LORA = "lora"
EPLB = "eplb"  # vLLM's expert-parallel load balancing (engines/vllm/eplb.py)
CPU_OFFLOAD = "cpu_offload"
# After the KV cache is allocated (``Budget.after_kv``; never subtracted from the KV budget):
# what is left outside the engine's memory for what it still allocates then (CUDA-graph
# capture, runtime peaks), its ``parts`` the room and the need (plan/startup_memory.py).
HEADROOM = "headroom"

DEFAULT_CUDA_GRAPH_BYTES = 1 * GIB
DEFAULT_NON_TORCH_BYTES = GIB // 2
DEFAULT_NON_TORCH_BYTES_MULTI_GPU = 1 * GIB


@record(frozen=True)
class BudgetLine:
    """One line of the budget: its machine key, what it is, its bytes, and its basis."""

    key: str  # stable (module docstring)
    label: str  # prose for people
    bytes: int
    basis: str  # GIVEN, EXACT, ESTIMATED or DECLARED
    # The terms an engine's rules summed into this line (each with ``to_json()``: what,
    # bytes, basis); () for a line that is one number. The JSON gains a "parts" list.
    parts: tuple[Any, ...] = ()

    def as_tuple(self) -> tuple[str, int, str]:
        return (self.label, self.bytes, self.basis)


@record(frozen=True)
class Reserves:
    """Non-KV memory besides the weights. ``None`` = use the documented estimate."""

    activation_peak_bytes: int | None = None
    cuda_graph_bytes: int | None = None
    non_torch_bytes: int | None = None

    def __post_init__(self) -> None:
        for name in ("activation_peak_bytes", "cuda_graph_bytes", "non_torch_bytes"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an integer number of bytes, got {value!r}")
            if value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")


@record(frozen=True)
class Budget:
    """The KV bytes one GPU can give, and how that number was reached."""

    available_bytes: int
    lines: tuple[BudgetLine, ...]
    total_bytes: int | None = None  # the GPU's memory (None when the budget was given)
    gpu_memory_utilization: float | None = None
    non_kv_bytes: int = 0  # weights + reserves (for the fix hint)
    gpu: str | None = None
    # Start-up verdicts beside the lines (plan/startup_memory.py: "may refuse to start", the
    # headroom after the KV cache), each with its basis; the plan's warnings.
    notes: tuple[str, ...] = ()
    # Lines about what happens after the KV cache is allocated (``headroom``): never
    # subtracted from ``kv_budget``; the plan's JSON has it as its own key.
    after_kv: tuple[BudgetLine, ...] = ()

    def as_lines(self) -> list[tuple[str, int, str]]:
        return [line.as_tuple() for line in self.lines]

    def line(self, key: str) -> BudgetLine | None:
        """The line with machine key ``key`` (None if this budget has none)."""
        return next((ln for ln in self.lines if ln.key == key), None)

    def to_json(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for ln in self.lines:
            row: dict[str, Any] = {"key": ln.key, "label": ln.label, "bytes": ln.bytes,
                                   "basis": ln.basis}
            if ln.parts:
                row["parts"] = [part.to_json() for part in ln.parts]
            out.append(row)
        return out

    def headroom_json(self) -> dict[str, Any] | None:
        """The ``headroom`` line (``after_kv``) as a JSON object, or None: a key of the plan
        beside ``budget``, whose rows stay the ones that add up to ``kv_budget``."""
        line = next((ln for ln in self.after_kv if ln.key == HEADROOM), None)
        if line is None:
            return None
        return {"key": line.key, "label": line.label, "bytes": line.bytes, "basis": line.basis,
                "parts": [part.to_json() for part in line.parts]}


class BudgetTooSmall(PlanError):
    """Weights and reserves leave no KV memory on one GPU. Carries every line."""

    # The way out in vLLM's words (its flags; the CLI turns the names into flags). An engine
    # with other flags passes its own (SGLang: --mem-fraction-static).
    REMEDY = ("use a larger GPU, more tensor/pipeline parallelism, a higher "
              "gpu_memory_utilization, or give the budget with kv_cache_memory_bytes")

    def __init__(self, lines: tuple[BudgetLine, ...], available_bytes: int, *,
                 remedy: str | None = None):
        self.lines = lines
        self.available_bytes = available_bytes
        detail = "; ".join(f"{ln.label} {ln.bytes / GIB:.2f} GiB ({ln.basis})" for ln in lines)
        super().__init__(
            f"no memory left for the KV cache: {available_bytes / GIB:.2f} GiB per GPU "
            f"({detail}); {remedy or self.REMEDY}"
        )


def given_budget(kv_cache_memory_bytes: int) -> Budget:
    if isinstance(kv_cache_memory_bytes, bool) or not isinstance(kv_cache_memory_bytes, int):
        raise TypeError(f"kv_cache_memory_bytes must be an int, got {kv_cache_memory_bytes!r}")
    if kv_cache_memory_bytes <= 0:
        raise ValueError(f"kv_cache_memory_bytes must be > 0, got {kv_cache_memory_bytes}")
    if kv_cache_memory_bytes > MAX_BYTES:
        raise ValueError(f"kv_cache_memory_bytes must be <= {MAX_BYTES:,} (2**60)")
    line = BudgetLine(KV_BUDGET, "KV cache memory (kv_cache_memory_bytes)",
                      kv_cache_memory_bytes, GIVEN)
    return Budget(kv_cache_memory_bytes, (line,))


def config_int(cfg: Mapping[str, Any], *keys: str, default: int = 0) -> int:
    """The first of ``keys`` that ``cfg`` states as an int (a bool is not one), else
    ``default``."""
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return default


def estimate_activation_peak(
    cfg: Mapping[str, Any], request: PlanRequest, model_dtype: str
) -> int:
    """The documented estimate (module docstring); bytes per GPU."""
    vocab = required_int(cfg, "vocab_size")
    element = resolve_dtype(model_dtype).nbytes(1)
    tokens = request.max_num_batched_tokens
    mlp = mlp_transient_bytes(cfg, tokens, element, request.tensor_parallel_size)
    logits = min(request.max_num_seqs, tokens) * vocab * 4
    return mlp + logits


def required_int(cfg: Mapping[str, Any], *keys: str) -> int:
    """``config_int`` for a key a reserve cannot do without: a config stating none of ``keys``
    is refused naming them, instead of a reserve of 0 bytes that looks like an answer."""
    value = config_int(cfg, *keys)
    if value <= 0:
        raise PlanError(f"the activation reserve needs the config's {' or '.join(keys)}, which "
                        "it does not state; pass --activation-peak-bytes")
    return value


def mlp_transient_bytes(cfg: Mapping[str, Any], tokens: int, element: int, tp: int) -> int:
    """The MLP's transient over ``tokens`` (estimated, module docstring): gate+up per token —
    per active expert on a MoE model, the dense width where dense layers come first — plus a
    few hidden-sized buffers, at ``element`` bytes, split over ``tp`` ranks."""
    hidden = required_int(cfg, "hidden_size", "d_model", "n_embd")
    inter = config_int(cfg, "intermediate_size", "n_inner", "ffn_dim", default=4 * hidden)
    if config_int(cfg, "n_routed_experts", "num_local_experts", "num_experts"):
        per_expert = config_int(cfg, "moe_intermediate_size", default=inter)
        active = config_int(cfg, "num_experts_per_tok", "moe_topk", default=1)
        dense = inter if config_int(cfg, "first_k_dense_replace") else 0
        inter = max(dense, per_expert * active)
    return tokens * (2 * inter + 4 * hidden) * element // tp


def gpu_budget(
    gpu: GpuPreset,
    *,
    gpu_memory_utilization: float,
    weights: Weights,
    request: PlanRequest,
    cfg: Mapping[str, Any],
    model_dtype: str,
    reserves: Reserves | None = None,
    total_bytes: int | None = None,
    utilization_default: str | None = None,
    estimates: Mapping[str, BudgetLine] | None = None,
) -> Budget:
    """``int(total × utilization) − weights − reserves`` for one GPU of ``request``'s layout.

    ``utilization_default``: None when the user gave ``gpu_memory_utilization``; else whose
    default it is (e.g. "vLLM 0.32's default"), for the line's label and basis (module
    docstring).

    ``estimates``: an engine's own lines for the reserves the user gave none of, by key
    (``activation_peak``, ``cuda_graphs``, ``non_torch``; vLLM: engines/vllm/reserves.py);
    a key it lacks takes the documented estimate above.
    """
    util = finite_fraction("gpu_memory_utilization", gpu_memory_utilization)
    reserves = reserves or Reserves()
    total = gpu.total_bytes if total_bytes is None else total_bytes
    total_basis = gpu.basis if total_bytes is None else GIVEN
    usable = int(total * util)
    if utilization_default is None:
        util_label = f"× gpu_memory_utilization {util:g}"
        util_basis = ESTIMATED if total_basis == ESTIMATED else GIVEN
    else:
        util_label = f"× gpu_memory_utilization {util:g} ({utilization_default}; not given)"
        util_basis = total_basis
    # A MoE model's experts over DP ranks (weights.split) need the DP group's communicators.
    multi = request.tensor_parallel_size * request.pipeline_parallel_size > 1 or \
        weights.split is not None
    own = estimates or {}

    def reserve(key: str, label: str, given: int | None, default: int) -> BudgetLine:
        if given is not None:
            return BudgetLine(key, label, given, GIVEN)
        return own.get(key) or BudgetLine(key, label, default, ESTIMATED)

    lines = [
        BudgetLine(GPU_TOTAL, f"GPU memory ({gpu.name}; {gpu.source})", total, total_basis),
        BudgetLine(UTILIZATION, util_label, usable, util_basis),
        BudgetLine(WEIGHTS, f"− model weights per GPU ({weights.detail})",
                   weights.per_rank_bytes, weights.per_rank_basis),
        reserve(ACTIVATION_PEAK, "− activation peak", reserves.activation_peak_bytes,
                estimate_activation_peak(cfg, request, model_dtype)
                if reserves.activation_peak_bytes is None and ACTIVATION_PEAK not in own
                else 0),
        reserve(CUDA_GRAPHS, "− CUDA graphs", reserves.cuda_graph_bytes,
                DEFAULT_CUDA_GRAPH_BYTES),
        reserve(NON_TORCH, "− non-torch memory (CUDA context, NCCL)", reserves.non_torch_bytes,
                DEFAULT_NON_TORCH_BYTES_MULTI_GPU if multi else DEFAULT_NON_TORCH_BYTES),
    ]
    non_kv = sum(ln.bytes for ln in lines[2:])
    available = usable - non_kv
    basis = ESTIMATED if any(ln.basis == ESTIMATED for ln in lines) else EXACT
    lines.append(BudgetLine(KV_BUDGET, "= KV cache budget per GPU", available, basis))
    frozen = tuple(lines)
    if available <= 0:
        raise BudgetTooSmall(frozen, available)
    return Budget(available, frozen, total, util, non_kv, gpu.name)


def with_launch_lines(budget: Budget, *, lora: BudgetLine | None = None,
                      cpu_offload: BudgetLine | None = None,
                      eplb: BudgetLine | None = None) -> Budget:
    """``budget`` with an engine's launch lines after its weights line (module docstring):
    ``lora`` and ``eplb`` are subtracted from the KV budget, ``cpu_offload`` only says what
    the weights line already left out. ``BudgetTooSmall`` when nothing is left."""
    lines = list(budget.lines)
    at = next((i + 1 for i, ln in enumerate(lines) if ln.key == WEIGHTS), None)
    final = budget.line(KV_BUDGET)
    if at is None or final is None:
        raise ValueError("launch lines need a GPU budget (a weights line)")
    added = [ln for ln in (cpu_offload, lora, eplb) if ln is not None]
    lines[at:at] = added
    subtracted = [ln for ln in (lora, eplb) if ln is not None]
    taken = sum(ln.bytes for ln in subtracted)
    available = budget.available_bytes - taken
    basis = ESTIMATED if final.basis == ESTIMATED or any(
        ln.basis == ESTIMATED for ln in subtracted) else final.basis
    lines[-1] = BudgetLine(KV_BUDGET, final.label, available, basis)
    frozen = tuple(lines)
    if available <= 0:
        raise BudgetTooSmall(frozen, available)
    from kvledger import records

    return records.replace(budget, available_bytes=available, lines=frozen,
                           non_kv_bytes=budget.non_kv_bytes + taken)
