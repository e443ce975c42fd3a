"""The reserves vLLM subtracts from ``total × gpu_memory_utilization``, per release, as its
source computes them (``budget.py`` keeps the line keys; this module says what is in them).

What vLLM 0.32.0 and 0.33.0 do (read in both wheels; the files are identical where not said):

``v1/worker/gpu_worker.py Worker.init_device`` creates the CUDA context, then the distributed
environment (NCCL communicators, custom all-reduce buffers) "BEFORE taking memory snapshot",
and only then takes ``MemorySnapshot`` and ``requested_memory = ceil(total × utilization)``
(``v1/worker/utils.py request_memory``). 0.33 also creates the cuBLAS / cuBLASLt handles
before the snapshot (``torch.mm`` and ``linear`` on a 16 × 16 tensor); 0.32 creates them on
the first matmul of the profile run, after it. Memory in use before the snapshot is not
taken from the KV budget: it must fit in the ``1 − utilization`` left over (``request_memory``
refuses to start when free memory is below the request).

``determine_available_memory`` then runs ``profile_run`` inside ``memory_profiling``
(``utils/mem_utils.py``) and computes
``available = requested − (total_consumed + transient_peak_headroom) − cudagraph_estimate``:

- ``total_consumed`` = free memory at the snapshot − free memory after the profile run: the
  weights, the buffers that stay allocated (the model runner's, the shared workspace), and
  non-torch growth after the snapshot (lazily loaded kernel modules; 0.32: the cuBLAS handles).
  kvledger's ``weights`` line is the weights; ``non_torch`` is the rest (estimated).
- ``transient_peak_headroom`` = torch's peak allocated − allocated after the run: the
  ``activation_peak`` line. ``gpu_model_runner.profile_run`` runs, in order: for a multimodal
  model, the encoder on a dummy batch whose outputs stay in ``encoder_cache`` until the end;
  ``_dummy_run(max_num_batched_tokens, is_profile=True)`` over
  ``min(max_num_seqs, max_num_batched_tokens)`` requests, whose hidden states stay alive; then
  ``_dummy_sampler_run`` on those requests' last hidden states. The forward and the sampler are
  sequential, so the peak is the larger of the two on top of what both see.
- ``cudagraph_estimate``: ``gpu_model_runner.profile_cudagraph_memory`` captures, per graph
  mode, the first two graphs on a temporary pool and counts ``first + (n − 1) × second``; it
  is subtracted because ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` defaults to 1 (``envs.py``,
  both releases; "default since v0.21.0"). A device measurement: kvledger estimates it.

Exact terms (source formulas, this module):

- sampler: ``compute_logits`` returns ``rows × vocab`` logits in the model dtype, which
  ``_dummy_sampler_run`` keeps; ``Sampler.forward`` makes a float32 copy; its second call (with a
  generator, ``TopKTopPSampler.forward_native``) takes ``softmax`` (float32) and
  ``random_sample``'s exponential noise ``q`` (float32) beside them: ``rows × vocab × (model
  dtype bytes + 12)``, a lower bound (the Triton top-k/top-p kernel's scratch is not counted).
  The first call's FlashInfer path holds as much: ``top_k_top_p_sampling_from_logits``
  (flashinfer 0.7.2, ``sampling.py``) makes ``top_k_mask_logits`` and ``softmax`` float32 copies.
- MLA: ``MLAAttention.forward`` with no attention metadata (the profile run) allocates
  ``(W, heads per rank, qk_nope_head_dim + v_head_dim)`` in the model dtype "to simulate the
  worst case" of ``kv_b_proj`` over the chunked-prefill context, with
  ``W = min(max(8 × max_model_len, 4 × max_num_seqs × block_size), 65536)`` rounded up to the
  block size (``determine_chunked_prefill_workspace_size``,
  ``align_mla_chunked_context_workspace_size``): 65,536 × 128 × 256 × 2 B = 4 GiB for
  DeepSeek-V3 at TP 1.
- Triton MLA workspace (0.33 only, ``triton_mla.py _reserve_attn_logits_workspace`` called by
  ``reserve_workspace`` in the profile run): ``max_num_seqs × max decode query length × heads
  per rank × splits × (kv_lora_rank + 1) × 4`` B, ``splits = min(next_pow2(max(1,
  max_model_len // 512)), 2 × SMs)``. It stays allocated (the shared workspace): ``non_torch``.
- CUTLASS MLA workspace (both releases): ``cutlass_mla.py`` allocates
  ``SM100Workspace(128 MiB)`` at module level, so when the backend is imported while the model
  is built (after the snapshot): 128 MiB in ``non_torch``. FlashInfer MLA's workspace (128 MiB,
  256 MiB with LSE; ``flashinfer_mla.py _get_workspace_buffer``) is allocated on the first
  decode call, not in the profile run (its forward returns before it without attention
  metadata): the CUDA-graph profile captures it, so it is inside the graph estimate.
- Triton top-k/top-p buffer (both releases): the dummy sampler's second call (with a
  generator) takes ``TopKTopPSampler.forward_native`` → ``apply_top_k_top_p`` →
  ``apply_top_k_top_p_triton`` (``v1/sample/ops/topk_topp_triton.py``), which allocates a float32
  ``(min(next_pow2(P), SMs), vocab)`` buffer, ``P = min(SMs, rows)``, and keeps it in
  ``_TRITON_BUFFER_CACHE``: it stays allocated after the profile run, so it is in
  ``total_consumed`` — a ``non_torch`` part (132 × 201,088 × 4 B = 101 MiB for gpt-oss on an
  H100). Without the GPU's SM count, the largest count kvledger knows caps it (an upper bound).
- encoder cache (multimodal): the dummy batch's outputs, ``max_num_encoder_input_tokens`` (=
  ``max_num_batched_tokens``, ``SchedulerConfig``) × the text hidden size in the model dtype —
  a lower bound: an item larger than the budget raises it, and the vision tower's own
  transients are not modelled (a warning says so).

Estimates (device-measured in vLLM; the label gives the likely error): the MLP transient
(``2 × intermediate + 4 × hidden`` per token at the model dtype over TP, as before; start-up logs
put the whole activation line within a factor of 2 of vLLM's peak on dense models, and 1.7×
below on a TP-4 Qwen3.5-35B-A3B; ``bench/whole_budget.py --breakdown``), the CUDA
graph pool (0.5 GiB: twelve start-up logs' "Estimated CUDA graph memory" range 0.13–2.44 GiB,
median 0.55 GiB, mean 0.87 GiB — small dense models near the median, large MoE ones above
1.3 GiB; ``bench/data/cuda_graph_logs.csv``), the non-torch growth after the snapshot (0.25 GiB
on one GPU, 0.5 GiB with communicators; ± 0.25 GiB on one GPU, −0.4/+0.25 GiB with
communicators: a TP-4 log printed 0.13 GiB) and 0.32's cuBLAS / cuBLASLt handles
(64 MiB; ± 64 MiB).

The sort path (``topk_topp_sorts``: fewer rows than 0.20 / 0.28's Triton threshold, or 0.10,
which has no kernel and sorts whenever FlashInfer is not installed) holds more than the four
tensors: ``logits.sort`` runs on the float32 copy before the softmax and the noise exist, and
PyTorch's stable sort (``SortStable.cu``) keeps its values, int64 indices, an int64 index array
and CUB's radix-sort scratch (``sort_entry_bytes``: 32 B a row × vocabulary entry, 44 B for
2-127 rows). A gpt-oss-120b start-up on an H100 under vLLM 0.10.1 (1,024 sequences, its own
65.97 GiB of weights; ``bench/data/vllm_startup_logs.csv``) reserved 7.5-7.9 GiB besides the
weights: 0.10's rules count 7.64 GiB (0.19's, without the sort, 3.14).
"""

from __future__ import annotations

from collections.abc import Mapping

from kvledger.declare.dtypes import resolve_dtype
from kvledger.plan.budget import (
    ACTIVATION_PEAK,
    CUDA_GRAPHS,
    ESTIMATED,
    EXACT,
    GIB,
    NON_TORCH,
    BudgetLine,
    config_int,
    mlp_transient_bytes,
    required_int,
)
from kvledger.records import record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

MIB = 1 << 20
CUDA_GRAPH_ESTIMATE = GIB // 2
NON_TORCH_ONE_GPU = GIB // 4
NON_TORCH_MULTI_GPU = GIB // 2
CUBLAS_HANDLES = 64 * MIB
CUTLASS_MLA_WORKSPACE = 128 * MIB  # cutlass_mla.py: SM100Workspace(128 * 1024 * 1024)
MLA_WORKSPACE_CAP = 64 * 1024  # determine_chunked_prefill_workspace_size: 64k tokens
TRITON_MIN_WORK_PER_SPLIT = 512  # triton_mla.py _MIN_WORK_PER_SPLIT
TRITON_SPLIT_OCCUPANCY = 2  # triton_mla.py _SPLIT_OCCUPANCY_MULTIPLIER
FLOAT32 = 4  # apply_top_k_top_p_triton asserts float32 logits; its buffer takes their dtype

# Streaming multiprocessors per preset (Triton MLA's split cap): NVIDIA's datasheets and
# architecture whitepapers (H100 SXM 132, H100 PCIe 114, H200 132, H20 78, GH200 132,
# B200 148, A100 108, A30 56, A10 72, A10G 80, RTX A6000 84, RTX 3090 82, L40S/L40 142, L4 58,
# RTX 4090 128, RTX 6000 Ada 142, RTX 5090 170, RTX PRO 6000 188, T4 40, V100 80).
SM_COUNT: Mapping[str, int] = {
    "H100-80GB": 132, "H100-94GB": 132, "H100-PCIE": 114, "H200": 132, "H200-NVL": 132,
    "H20": 78, "GH200-96GB": 132, "GH200-144GB": 132, "B200": 148,
    "A100-40GB": 108, "A100-80GB": 108, "A30": 56, "A10": 72, "A10G": 80, "RTX-A6000": 84,
    "RTX-3090": 82, "L40S": 142, "L40": 142, "L4": 58, "RTX-4090": 128, "RTX-6000-ADA": 142,
    "RTX-5090": 170, "RTX-PRO-6000": 188, "T4": 40, "V100-16GB": 80, "V100-32GB": 80,
}


@record(frozen=True)
class Part:
    """One term of a reserve line: what it is, its bytes, its basis, where the rule is."""

    what: str
    bytes: int
    basis: str

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "bytes": self.bytes, "basis": self.basis}


@record(frozen=True)
class ReserveInput:
    """What the rules read: the (text) config, the request's numbers, the release's fields."""

    text: Mapping[str, Any]
    model_dtype: str
    tensor_parallel_size: int
    multi_gpu: bool  # communicators exist (TP × PP > 1, or experts over DP ranks)
    max_num_seqs: int
    max_num_batched_tokens: int
    max_model_len: int
    num_speculative_tokens: int = 0
    mla: bool = False  # dense MLA layers (DeepSeek-style), not the sparse indexer kind
    mla_block_size: int = 16  # the block the MLA backend takes (the W alignment)
    mla_backend: str = ""  # the dense MLA backend chosen (mla_backends.py), "" without MLA
    sm_count: int | None = None  # the GPU's SMs (None: not known)
    multimodal: bool = False
    cublas_handles_before_snapshot: bool = False
    triton_mla_workspace_in_profile: bool = False
    indexer_head_dim: int = 0  # the sparse indexer's index_head_dim (0: no indexer modelled)
    indexer_prefill_entries: tuple[int, int] = (40, 16)  # VllmRelease field
    indexer_radix_workspace: int = 1 << 20  # VllmRelease field (0.19: 0)
    topk_topp_triton_min_rows: int = 0  # VllmRelease field: fewer rows take the sort path
    topk_topp_native_sort: bool = False  # VllmRelease field: no Triton kernel, every row sorts
    flashinfer_sampler: bool | None = None  # VllmLaunch field: None, the release's pip wheel
    rocm: bool = False  # an AMD GPU (the release may skip the CUDA-graph estimate there)
    cuda_graph_estimate_on_rocm: bool = True  # VllmRelease field
    cuda_graph_estimate_by_default: bool = True  # VllmRelease field (0.19: False)


def _element(inp: ReserveInput) -> int:
    return resolve_dtype(inp.model_dtype).nbytes(1)


def sampler_rows(inp: ReserveInput) -> int:
    """``_dummy_run``'s request count: ``min(max_num_seqs, max_num_batched_tokens)``."""
    return min(inp.max_num_seqs, inp.max_num_batched_tokens)


def topk_topp_sorts(inp: ReserveInput) -> bool:
    """Whether the dummy sampler's top-k/top-p takes PyTorch's sort (``apply_top_k_top_p``
    in ``v1/sample/ops/topk_topp_sampler.py``: 0.20 and 0.28 run the Triton kernel on a GPU only
    for ``logits.shape[0] >= 8`` rows, 0.30 on at any batch; ``VllmRelease.
    topk_topp_triton_min_rows``; 0.10 has no kernel: ``topk_topp_native_sort``)."""
    return inp.topk_topp_native_sort or sampler_rows(inp) < inp.topk_topp_triton_min_rows


# What ``logits.sort(dim=-1)`` holds per row × vocabulary entry of a float32 (rows, vocab)
# tensor while it runs on a GPU (PyTorch ``aten/src/ATen/native/cuda/Sort.cpp sort_cuda_kernel``
# → ``SortStable.cu launch_stable_sort_kernel``, a vocabulary above 4,096 and a contiguous
# input): its float32 values and int64 indices (12 B), then by path —
# 1 row or 128 and more (``segmented_sort_large_segments`` / ``segmented_sort_pairs``): an int64
# index array (8 B) and CUB's radix-sort scratch, whose "3rd keys buffer" and "3rd values
# buffer" (CUB ``dispatch_radix_sort.cuh``: the input may not be overwritten) take 4 + 8 B: 32 B;
# 2-127 rows (``segmented_sort_pairs_by_full_sort``): two int2 arrays (16 B), the float32 keys
# ``radix_sort_pairs`` allocates for its null output (4 B; ``ATen/cuda/cub.cu``
# ``radix_sort_pairs_impl``: ``keys_out == nullptr``) and the scratch of 4 + 8 B: 44 B.
SORT_ENTRY_BYTES = 32
SORT_ENTRY_BYTES_FEW_ROWS = 44
SORT_FULL_SORT_BELOW = 128  # SortStable.cu: nsegments < 128 sorts by the full-sort path


def sort_entry_bytes(rows: int) -> int:
    """Bytes a row × vocabulary entry ``logits.sort`` holds while it runs (above)."""
    return SORT_ENTRY_BYTES_FEW_ROWS if 1 < rows < SORT_FULL_SORT_BELOW else SORT_ENTRY_BYTES


def sampler_bytes(inp: ReserveInput) -> int:
    """The dummy sampler's peak over ``rows × vocab`` entries. Off the sort path, its four
    tensors (module docstring: model dtype + 12 B). On it, ``apply_top_k_top_p`` sorts the
    float32 logits before ``softmax`` and the exponential noise exist: the logits (model
    dtype), their float32 copy (4 B) and what the sort holds while it runs
    (``sort_entry_bytes``); the masks, softmax and scatter after it hold less."""
    vocab = required_int(inp.text, "vocab_size")
    rows = sampler_rows(inp)
    if topk_topp_sorts(inp):
        return rows * vocab * (_element(inp) + FLOAT32 + sort_entry_bytes(rows))
    return rows * vocab * (_element(inp) + 12)


def hidden_states_bytes(inp: ReserveInput) -> int:
    """``_dummy_run``'s hidden states, alive while the sampler runs."""
    hidden = required_int(inp.text, "hidden_size", "d_model", "n_embd")
    return inp.max_num_batched_tokens * hidden * _element(inp)


def mlp_bytes(inp: ReserveInput) -> int:
    """The MLP transient (estimated): ``budget.mlp_transient_bytes`` at the dtype vLLM runs."""
    return mlp_transient_bytes(inp.text, inp.max_num_batched_tokens, _element(inp),
                               inp.tensor_parallel_size)


def mla_workspace_tokens(inp: ReserveInput) -> int:
    """``W``: the chunked-prefill workspace rows (module docstring), aligned to the block."""
    want = min(max(8 * inp.max_model_len, 4 * inp.max_num_seqs * inp.mla_block_size),
               MLA_WORKSPACE_CAP)
    align = inp.mla_block_size
    return -(-max(want, align) // align) * align


def mla_profile_bytes(inp: ReserveInput) -> int:
    """The profile run's ``kv_b_proj`` worst-case tensor (module docstring); 0 without MLA."""
    if not inp.mla:
        return 0
    heads = config_int(inp.text, "num_attention_heads") // inp.tensor_parallel_size
    width = config_int(inp.text, "qk_nope_head_dim") + config_int(inp.text, "v_head_dim")
    return mla_workspace_tokens(inp) * heads * width * _element(inp)


def _next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length() if n > 1 else 1


def triton_mla_splits(inp: ReserveInput) -> int:
    """``_compute_num_kv_splits(max_model_len, SMs)``; without an SM count, the length's own
    power of two (the cap then is not applied: an upper bound)."""
    ideal = _next_pow2(max(1, inp.max_model_len // TRITON_MIN_WORK_PER_SPLIT))
    if inp.sm_count is None:
        return ideal
    return min(ideal, inp.sm_count * TRITON_SPLIT_OCCUPANCY)


def triton_mla_workspace_bytes(inp: ReserveInput) -> int:
    """0.33's reserved split-KV logits workspace (module docstring); 0 when the release does not
    claim it in the profile, or another backend is chosen."""
    if not (inp.mla and inp.mla_backend == "TRITON_MLA" and inp.triton_mla_workspace_in_profile):
        return 0
    rows = inp.max_num_seqs * (1 + inp.num_speculative_tokens)
    heads = config_int(inp.text, "num_attention_heads") // inp.tensor_parallel_size
    lora = config_int(inp.text, "kv_lora_rank")
    return rows * heads * triton_mla_splits(inp) * (lora + 1) * 4


INDEXER_LONG_CONTEXT = 256 * 1024  # config/vllm.py: the workspace factor 5 up to 256K, else 2
INDEXER_SCALE_BYTES = 4  # sparse_attn_indexer.py _gather_workspace_shapes: (T, 4) uint8
WORKSPACE_ALIGN = 256  # v1/worker/workspace.py get_simultaneous: round_up(bytes, 256) each


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


def indexer_workspace_tokens(inp: ReserveInput) -> int:
    """T, the indexer's prefill K buffer in tokens (``get_max_prefill_buffer_size``)."""
    short, long = inp.indexer_prefill_entries
    return inp.max_model_len * (short if inp.max_model_len <= INDEXER_LONG_CONTEXT else long)


def indexer_workspace_bytes(inp: ReserveInput) -> int:
    """What the sparse indexer's profile run claims from the shared workspace, which stays
    allocated (so it is consumed memory, not a transient): T × index_head_dim fp8 values +
    T × 4 B scales, each rounded up to 256 B, + the radix top-k workspace."""
    if not inp.indexer_head_dim:
        return 0
    tokens = indexer_workspace_tokens(inp)
    return (_round_up(tokens * inp.indexer_head_dim, WORKSPACE_ALIGN)
            + _round_up(tokens * INDEXER_SCALE_BYTES, WORKSPACE_ALIGN)
            + inp.indexer_radix_workspace)


def topk_topp_buffer_rows(inp: ReserveInput) -> int:
    """``apply_top_k_top_p_triton``'s buffer rows: ``min(next_pow2(P), SMs)``,
    ``P = min(SMs, rows)``; an unknown GPU takes the largest SM count kvledger knows."""
    sms = inp.sm_count if inp.sm_count is not None else max(SM_COUNT.values())
    return min(_next_pow2(min(sms, sampler_rows(inp))), sms)


def topk_topp_buffer_bytes(inp: ReserveInput) -> int:
    """The Triton top-k/top-p buffer the dummy sampler leaves allocated (module docstring);
    0 on the sort path (``topk_topp_sorts``: no kernel, no cached buffer)."""
    if topk_topp_sorts(inp):
        return 0
    return topk_topp_buffer_rows(inp) * required_int(inp.text, "vocab_size") * FLOAT32


def encoder_cache_bytes(inp: ReserveInput) -> int:
    """The encoder dummy batch's outputs (module docstring); 0 for a text-only model."""
    if not inp.multimodal:
        return 0
    return hidden_states_bytes(inp)


def activation_line(inp: ReserveInput) -> tuple[BudgetLine, tuple[Part, ...]]:
    """``activation_peak``: encoder outputs + max(forward, sampler + hidden states)."""
    mlp, mla = mlp_bytes(inp), mla_profile_bytes(inp)
    sampler, hidden = sampler_bytes(inp), hidden_states_bytes(inp)
    encoder = encoder_cache_bytes(inp)
    forward = max(mlp, mla)
    peak = encoder + max(forward, sampler + hidden)
    rows = sampler_rows(inp)
    if topk_topp_sorts(inp):
        why = ("the release has no Triton top-k/top-p kernel and FlashInfer is not installed"
               + (" (its pip wheel leaves it an extra; vLLM's Docker image ships it, and "
                  "FlashInfer's sampler does not sort)" if inp.flashinfer_sampler is None
                  else "")
               if inp.topk_topp_native_sort
               else "fewer rows than the release's Triton top-k/top-p threshold")
        what = (f"sampler dummy run: {rows:,} rows × vocab × (model dtype + 4 + "
                f"{sort_entry_bytes(rows)}) B: the logits, their float32 copy and what "
                f"logits.sort holds while it runs ({why}: topk_topp_sampler.apply_top_k_top_p; "
                "PyTorch SortStable.cu, CUB's radix-sort scratch)")
    else:
        what = f"sampler dummy run: {rows:,} rows × vocab × (model dtype + 12) B, a lower bound"
    parts = [
        Part(f"{what} (gpu_model_runner._dummy_sampler_run)", sampler, EXACT),
        Part(f"dummy run's hidden states: {inp.max_num_batched_tokens:,} tokens × hidden",
             hidden, EXACT),
        Part("MLP transient of the forward, estimated from the MLP width (vLLM measures it; "
             "likely within a factor of 2)", mlp, ESTIMATED),
    ]
    if mla:
        parts.append(Part(f"MLA profile tensor: {mla_workspace_tokens(inp):,} × heads per rank × "
                          "(qk_nope + v) (mla_attention.py)", mla, EXACT))
    if encoder:
        parts.append(Part("encoder cache dummy outputs: max_num_batched_tokens × hidden, a "
                          "lower bound (gpu_model_runner.profile_run); the encoder's own "
                          "transients on the dummy image/audio batch are not modelled: pass "
                          "the logged figure with --activation-peak-bytes", encoder, ESTIMATED))
    which = "the forward" if forward >= sampler + hidden else "the sampler dummy run"
    # Estimated even when the sampler's exact terms are the larger: they are a lower bound.
    line = BudgetLine(ACTIVATION_PEAK, f"− activation peak ({which}; vLLM's profile run)",
                      peak, ESTIMATED)
    return line, tuple(parts)


def cuda_graph_line(inp: ReserveInput) -> tuple[BudgetLine, tuple[Part, ...]]:
    """The CUDA-graph estimate ``determine_available_memory`` subtracts; 0 on ROCm where the
    release skips ``profile_cudagraph_memory`` there (0.20: ``not current_platform.is_rocm()``,
    "graph pool handles and mem_get_info behave differently"; 0.28 on: ``is_cuda_alike()``,
    ROCm included; ``VllmRelease.cuda_graph_estimate_on_rocm``)."""
    if not inp.cuda_graph_estimate_by_default:
        part = Part("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 0 in this release "
                    "(envs.py): determine_available_memory measures profile_cudagraph_memory's "
                    "estimate but does not subtract it", 0, EXACT)
        return BudgetLine(CUDA_GRAPHS, "− CUDA graphs (not taken from the budget by this "
                          "release's default)", 0, EXACT), (part,)
    if inp.rocm and not inp.cuda_graph_estimate_on_rocm:
        part = Part("profile_cudagraph_memory is skipped on ROCm in this release "
                    "(gpu_worker.determine_available_memory): no estimate subtracted", 0, EXACT)
        return BudgetLine(CUDA_GRAPHS, "− CUDA graphs (not estimated on ROCm by this release)",
                          0, EXACT), (part,)
    part = Part("profile_cudagraph_memory's estimate, subtracted "
                "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1): a device measurement; 0.5 GiB "
                "estimated, logged 0.13–2.44 GiB (large MoE models above 2 GiB)",
                CUDA_GRAPH_ESTIMATE, ESTIMATED)
    line = BudgetLine(CUDA_GRAPHS, "− CUDA graphs (vLLM's pre-capture estimate; estimated)",
                      CUDA_GRAPH_ESTIMATE, ESTIMATED)
    return line, (part,)


def non_torch_line(inp: ReserveInput) -> tuple[BudgetLine, tuple[Part, ...]]:
    """``non_torch``: growth after the snapshot, estimated, plus the exact workspace terms."""
    growth = NON_TORCH_MULTI_GPU if inp.multi_gpu else NON_TORCH_ONE_GPU
    parts = [Part("memory taken after the start-up snapshot besides the weights (kernel modules "
                  "loaded on first use, runner buffers); the CUDA context and NCCL set-up come "
                  "before the snapshot and are not subtracted; estimated ± 0.25 GiB",
                  growth, ESTIMATED)]
    if not inp.cublas_handles_before_snapshot:
        parts.append(Part("cuBLAS / cuBLASLt handles, created in the profile run (after the "
                          "snapshot); estimated ± 64 MiB", CUBLAS_HANDLES, ESTIMATED))
    buffer = topk_topp_buffer_bytes(inp)
    if buffer:
        known = inp.sm_count is not None
        parts.append(Part(f"Triton top-k/top-p buffer kept by the dummy sampler: "
                          f"{topk_topp_buffer_rows(inp)} rows × vocab × 4 B "
                          "(topk_topp_triton.py apply_top_k_top_p_triton)" + ("" if known else
                          "; the GPU's SM count is not known, so the largest known caps the "
                          "rows (an upper bound)"), buffer, EXACT if known else ESTIMATED))
    workspace = triton_mla_workspace_bytes(inp)
    if workspace:
        known = inp.sm_count is not None
        parts.append(Part(f"Triton MLA split-KV workspace: {triton_mla_splits(inp)} splits "
                          "(triton_mla.py reserve_workspace)" + ("" if known else
                          "; the GPU's SM count is not known, so the split cap is not "
                          "applied (an upper bound)"), workspace, EXACT if known else ESTIMATED))
    indexer = indexer_workspace_bytes(inp)
    if indexer:
        parts.append(Part(f"sparse indexer's prefill K buffer, reserved in the profile run and "
                          f"kept in the shared workspace: {indexer_workspace_tokens(inp):,} "
                          f"tokens × ({inp.indexer_head_dim} + 4) B "
                          "(sparse_attn_indexer.py, indexer.py get_max_prefill_buffer_size); "
                          "the workspace is shared, so a larger claim by the attention backend "
                          "would raise it", indexer, EXACT))
    if inp.mla and inp.mla_backend == "CUTLASS_MLA":
        parts.append(Part("CUTLASS MLA's SM100 workspace, allocated when its module is imported "
                          "(after the snapshot; cutlass_mla.py g_sm100_workspace)",
                          CUTLASS_MLA_WORKSPACE, EXACT))
    total = sum(p.bytes for p in parts)
    line = BudgetLine(NON_TORCH, "− non-torch and buffers after the start-up snapshot "
                      "(CUDA context, NCCL set-up not subtracted)", total, ESTIMATED)
    return line, tuple(parts)
