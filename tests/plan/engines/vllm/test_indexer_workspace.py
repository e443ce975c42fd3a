"""The sparse-attention indexer's profile-run reservation (``reserves.py
indexer_workspace_bytes``), per release. Read in the vLLM wheels' source:
``model_executor/layers/sparse_attn_indexer.py`` (the attn_metadata-None branch claims
T x index_head_dim fp8 values, T x 4 B scales and, 0.20 on, a 1 MiB radix top-k workspace from
the shared workspace, each rounded up to 256 B) and ``v1/attention/backends/mla/indexer.py
get_max_prefill_buffer_size`` (T = max_model_len x 40 in 0.19.0 to 0.31.0; 0.32.0 to 0.34.0:
max_model_len x 8 x factor, factor 5 up to 256K tokens, 2 above). Expected figures are worked
by hand below from index_head_dim = 128 (DeepSeek-V3.2's and GLM-5.2's config).
"""

from __future__ import annotations

from typing import Any

import pytest

from kvledger.plan.api import plan_model
from kvledger.plan.budget import BudgetTooSmall
from kvledger.plan.engines.vllm.releases import vllm_release
from kvledger.plan.engines.vllm.reserves import ReserveInput, indexer_workspace_bytes
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS, skip_without_shared


def _workspace(engine: str, max_model_len: int, head_dim: int = 128) -> int:
    release = vllm_release(engine.removeprefix("vllm=="))
    inp = ReserveInput(
        text={}, model_dtype="bfloat16", tensor_parallel_size=8, multi_gpu=True,
        max_num_seqs=256, max_num_batched_tokens=8192, max_model_len=max_model_len,
        indexer_head_dim=head_dim, indexer_prefill_entries=release.indexer_prefill_entries,
        indexer_radix_workspace=release.indexer_radix_workspace)
    return indexer_workspace_bytes(inp)


@pytest.mark.parametrize(("engine", "max_model_len", "expected"), [
    # vLLM 0.32: T = 163,840 x 8 x 5 = 6,553,600; 6,553,600 x 128 = 838,860,800 and
    # 6,553,600 x 4 = 26,214,400 (both multiples of 256) + 1,048,576 = 866,123,776 B
    # (indexer.py's own comment: 40 x 163,840 x 132 = 865,075,200 B, plus the radix 1 MiB).
    ("vllm==0.32", 163_840, 866_123_776),
    # vLLM 0.32 above 256K: factor 2, T = 819,200 x 8 x 2 = 13,107,200;
    # 13,107,200 x 132 = 1,730,150,400 + 1,048,576 = 1,731,198,976 B.
    ("vllm==0.32", 819_200, 1_731_198_976),
    # vLLM 0.31 (and 0.26, the GLM-5.2 log's release): T = 819,200 x 40 = 32,768,000;
    # 32,768,000 x 132 = 4,325,376,000 + 1,048,576 = 4,326,424,576 B (4.03 GiB).
    ("vllm==0.31", 819_200, 4_326_424_576),
    ("vllm==0.26", 819_200, 4_326_424_576),
    # vLLM 0.19: the same T, no radix workspace: 4,325,376,000 B.
    ("vllm==0.19", 819_200, 4_325_376_000),
])
def test_indexer_workspace_per_release(engine: str, max_model_len: int, expected: int) -> None:
    assert _workspace(engine, max_model_len) == expected


def test_no_indexer_no_workspace() -> None:
    assert _workspace("vllm==0.32", 163_840, head_dim=0) == 0


def _non_torch_parts(config: str, engine: str, **extra: Any) -> dict[str, int]:
    request = PlanRequest(engine=engine, gpu="B200", tensor_parallel_size=8, **extra)
    try:
        lines = plan_model(str(CONFIGS / config), request).budget.lines
    except BudgetTooSmall as exc:
        lines = exc.lines
    line = next(ln for ln in lines if ln.key == "non_torch")
    return {part.what.split(":")[0]: part.bytes for part in line.parts}


def test_deepseek_v32_plan_counts_the_indexer_workspace_in_non_torch() -> None:
    # vLLM 0.32, DeepSeek-V3.2 at its own 163,840 tokens: the 866,123,776 B worked above.
    skip_without_shared()
    parts = _non_torch_parts("deepseek-ai--DeepSeek-V3.2.json", "vllm==0.32")
    assert parts["sparse indexer's prefill K buffer, reserved in the profile run and kept in "
                 "the shared workspace"] == 866_123_776


def test_a_dense_mla_model_has_no_indexer_part() -> None:
    # DeepSeek-V3 has no index_topk / indexer layers: nothing is reserved for one.
    skip_without_shared()
    parts = _non_torch_parts("deepseek-ai--DeepSeek-V3.json", "vllm==0.32")
    assert not any("indexer" in what for what in parts)
