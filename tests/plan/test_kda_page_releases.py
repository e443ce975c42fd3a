"""Kimi KDA state pages: vLLM 0.33 sizes them as 0.32 does.

Read in both releases: ``MambaStateShapeCalculator.kda_state_shape`` / ``MambaStateDtype
Calculator.kda_state_dtype`` (model_executor/layers/mamba/mamba_utils.py) and
``KimiK3DeltaAttention.get_kv_cache_spec`` (models/kimi_k3/nvidia/kda.py) are unchanged.
What moved is RecoverSSM (``--use-replayssm`` with speculative decoding on
KimiLinearForCausalLM / KimiK3ForConditionalGeneration, ``VllmConfig.
validate_mamba_cached_kernel``): 0.32 appends its verify records to every KDA state
(``append_kda_recoverssm_record``: (heads, 1 + k, head_dim) fp32 and (heads, 1 + k,
2 x head_dim) in the model dtype), 0.33 allocates them outside the KV cache
(``KDARecoverSSMRecords.allocate``, max_num_seqs rows) and leaves the page alone. kvledger
plans neither: ``--use-replayssm`` is a flag it does not model (cli/serve/vllm_flags.py), so
no release field follows.

Both oracles agree (``../shared/oracles/vllm-0.32/cases.jsonl`` and
``tests/oracles/vllm-0.33/cases.jsonl``, Kimi-K3, 8 GiB, block 16, 32k: 53 blocks of
159,252,480 B, KDA page 6,635,520 B).
"""

from __future__ import annotations

import json

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS


@pytest.mark.parametrize("engine", ["vllm", "vllm==0.32"])
def test_kimi_k3_kda_page(engine: str) -> None:
    path = CONFIGS / "moonshotai--Kimi-K3.json"
    if not path.is_file():
        pytest.skip("Kimi-K3's config is in ../shared/configs")
    request = PlanRequest(engine=engine, kv_cache_memory_bytes=8 << 30, max_model_len=32768,
                          block_size=16)
    plan = plan_vllm(derive_model(json.loads(path.read_text())), request, 8 << 30)
    # linear_attn_config: 96 heads of 128, short_conv_kernel_size 4. Conv state: 3 rows x
    # (96 x 128 x 3 = 36,864) bf16 = 221,184 B; recurrent: 96 x 128 x 128 fp32 = 6,291,456 B;
    # 6,512,640 B, padded to the attention page of the hybrid block: 6,635,520 B.
    pages = {g.page_size_bytes for g in plan.groups if g.spec == "MambaSpec"}
    assert pages == {6_635_520}
    assert (plan.num_blocks, plan.bytes_per_block) == (53, 159_252_480)
