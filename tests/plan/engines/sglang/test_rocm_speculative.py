"""SGLang 0.5.23 speculative decoding on ROCm (``plan/engines/sglang/backends.py``): the
backend is ``get_default_attn_backend``'s ``is_hip`` arm, which does not look at the draft (its
topk checks guard only the Hopper fa3 and SM100 trtllm_mha arms), and the page is that
backend's; ``speculative_hook.py`` ``_handle_eagle_family`` refuses an EAGLE tree (topk > 1)
with pages > 1 off flashinfer / fa3 / triton. Before, every line here was refused
("speculative decoding on ROCm ... is not read").

No oracle answer: the SGLang oracle runs SGLang's CPU platform, where ``get_platform().is_hip``
is false (``../shared/oracles/sglang-tool/README.md``), so it cannot take the ROCm arm.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.plan.api import plan_model
from kvledger.plan.engines.sglang.model import SglangLayoutError
from kvledger.plan.engines.sglang.options import SglangOptions
from kvledger.plan.request import PlanRequest

GIB = 1 << 30
ENGINE = "sglang==0.5.23"


def plan(model: str, *, steps: int, draft_tokens: int | None = None,
         page: int | None = None, tp: int = 8) -> tuple[Any, dict[str, Any]]:
    request = PlanRequest(
        engine=ENGINE, gpu="MI300X", tensor_parallel_size=tp, kv_cache_memory_bytes=10 * GIB,
        block_size=page, num_speculative_tokens=steps, speculative_method="mtp",
        sglang=SglangOptions(speculative_num_draft_tokens=draft_tokens))
    result = plan_model(model, request)
    return result, result.engine_fields


def test_deepseek_v3_mtp_on_mi300x_takes_aiter_and_page_one() -> None:
    # DeepSeek-V3, TP 8: get_num_kv_heads(8) = 128 // 8 = 16 → aiter (is_hip MLA arm); aiter
    # forces no page → _page_size_default's 1. KV auto → the model dtype, bfloat16.
    # Cell: 61 layers × (512 + 64) × 2 B = 70,272 B, plus the one MTP layer
    # int(70,272 × 1 / 61) = 1,152 → 71,424 B. 10 GiB // 71,424 = 150,333 tokens.
    result, fields = plan("deepseek-ai/DeepSeek-V3", steps=1)
    resolved = fields["sglang_resolved"]
    assert resolved["attention_backend"] == "aiter"
    assert resolved["draft_layers"] == 1
    assert (result.block_size, fields["cell_bytes_per_token"]) == (1, 71_424)
    assert result.kv_cache_tokens == 150_333


def test_an_eagle_tree_with_pages_is_refused_on_aiter_and_planned_on_triton() -> None:
    # 3 steps and 8 draft tokens (not steps + 1): a topk > 1 tree. With page 16 aiter is not
    # one of flashinfer / fa3 / triton: SGLang's ValueError.
    with pytest.raises(SglangLayoutError, match="speculative_eagle_topk > 1 with page_size > 1"):
        plan("deepseek-ai/DeepSeek-V3", steps=3, draft_tokens=8, page=16)
    # Page 1: no check. 150,333 tokens as above (the draft's KV does not depend on the tree).
    result, _ = plan("deepseek-ai/DeepSeek-V3", steps=3, draft_tokens=8)
    assert result.kv_cache_tokens == 150_333
    # TP 4: 128 // 4 = 32 KV heads a rank → triton, which runs the paged tree: the same cell,
    # 150,333 tokens → whole 16-token pages: 9,395 × 16 = 150,320.
    result, fields = plan("deepseek-ai/DeepSeek-V3", steps=3, draft_tokens=8, page=16, tp=4)
    assert fields["sglang_resolved"]["attention_backend"] == "triton"
    assert (result.block_size, result.kv_cache_tokens) == (16, 150_320)


def test_dp_attention_eagle_line_on_mi300x_plans(capsys: pytest.CaptureFixture[str]) -> None:
    # A line of the cookbook's shape, written here: DP attention over 8 groups keeps
    # get_num_kv_heads(tp_size = 8) = 16 → aiter, page 1; the same 71,424 B cell.
    line = ("python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --dp 8 "
            "--enable-dp-attention --speculative-algorithm EAGLE --speculative-num-steps 2 "
            "--speculative-eagle-topk 1 --speculative-num-draft-tokens 3 --port 8000")
    code = main(["plan", "--json", "--gpu", "MI300X", "--kv-cache-memory-bytes", "10GiB",
                 "--", line])
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    assert (data["block_size"], data["kv_cache_tokens"]) == (1, 150_333)
    resolved = data["sglang_resolved"]
    assert (resolved["attention_backend"], resolved["attn_dp_size"]) == ("aiter", 8)
