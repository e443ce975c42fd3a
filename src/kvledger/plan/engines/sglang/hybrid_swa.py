"""Which architectures SGLang 0.5.23 gives a hybrid sliding-window pool, and its layer split.

SGLang decides this by architecture name, not by what a config's layers are:
``is_hybrid_swa_model`` (``configs/model_config.py``) lists the architectures, and
``get_hybrid_layer_ids`` (same file) says which layers go to the SWA pool — every layer but
each fourth for Llama-4, ``layer_types`` for gpt-oss / Gemma-4 / Laguna / Muse-Glimmer,
``hybrid_layer_pattern`` (1 = SWA) for MiMo-V2. Every other architecture sizes its sliding
layers as full layers (Gemma-2/3, Mistral, Phi-3.5-MoE...).

kvledger's facts say which layers slide; here SGLang's own split is computed from the config
and the two must agree, else the model is refused (a split SGLang makes differently from the
facts would size the wrong layers).

The window is what the loaded model class reports (``get_attention_sliding_window_size``):
``sliding_window - 1`` for gpt-oss, Gemma-4 and Muse-Glimmer (their classes turn HF's
inclusive window into SGLang's exclusive one); the config's ``sliding_window`` for the others
(``resolve_sliding_window_size``'s fallback). Llama-4's SWA layers are its chunked ones, the
window its ``attention_chunk_size``.

KV sharing (Gemma-4 E2B/E4B: the last ``num_kv_shared_layers`` layers read an earlier layer's
KV): SGLang still gives those layers their pool slots — ``resolve_layer_indices``
(``model_runner_components/layer_setup.py``) takes the layer ids from the config's
``layer_types`` over all ``num_hidden_layers``, and ``models/gemma4_causal.py`` only skips the
*write* (``save_kv_cache=not self.is_kv_shared_layer``). Oracle case cov-gemma4: 7 full + 28
SWA layers for 35, of which 20 share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SWA_SINK_ARCHS = frozenset({"GptOssForCausalLM"})  # model_config.py SWA_SINK_ARCHS (ours)
LAYER_TYPES_ARCHS = frozenset({
    "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "LagunaForCausalLM",
    "MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration",
})
PATTERN_ARCHS = frozenset({"MiMoV2FlashForCausalLM"})  # MIMO_V2_MODEL_ARCHS (ours)
CHUNKED_ARCHS = frozenset({"Llama4ForConditionalGeneration"})
HYBRID_SWA_ARCHS = SWA_SINK_ARCHS | LAYER_TYPES_ARCHS | PATTERN_ARCHS | CHUNKED_ARCHS

# get_attention_sliding_window_size returns sliding_window - 1 (models/gpt_oss.py,
# models/gemma4_causal.py, models/muse_glimmer.py).
WINDOW_MINUS_ONE_ARCHS = frozenset({
    "GptOssForCausalLM", "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration",
    "MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration",
})
# Layers that read another layer's KV and still hold a pool slot (see the module docstring).
# Gemma-3n is no hybrid-SWA architecture: DefaultPoolConfigurator sizes one MHA pool over
# ModelLayerInfo's num_effective_layers (all num_hidden_layers), and models/gemma3n_causal.py
# only points a shared layer's RadixAttention at an earlier layer_id and skips its write
# (save_kv_cache=not self.is_kv_shared_layer). Oracle case cov-gemma3n: 30 layers, 10 shared.
SLOTTED_SHARED_KV_ARCHS = frozenset({
    "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration",
    "Gemma3nForCausalLM", "Gemma3nForConditionalGeneration",
})


def is_hybrid_swa(arch: str, text: Mapping[str, Any]) -> bool:
    """``is_hybrid_swa_model`` for the architectures above (Laguna only with a window)."""
    if arch not in HYBRID_SWA_ARCHS:
        return False
    return not (arch == "LagunaForCausalLM" and not text.get("sliding_window"))


def sglang_swa_layers(arch: str, text: Mapping[str, Any], num_layers: int) -> tuple[int, ...]:
    """``get_hybrid_layer_ids``' SWA layer ids (empty when the config lacks the key SGLang
    reads, which then disagrees with any sliding layer in the facts: refused)."""
    if arch in CHUNKED_ARCHS:
        return tuple(i for i in range(num_layers) if (i + 1) % 4 != 0)
    if arch in PATTERN_ARCHS:
        pattern = text.get("hybrid_layer_pattern")
        if not isinstance(pattern, Sequence):
            return ()
        return tuple(i for i in range(num_layers) if pattern[i] == 1)
    types = text.get("layer_types")
    if not isinstance(types, Sequence):
        return ()
    return tuple(i for i, kind in enumerate(types) if kind == "sliding_attention")


def reported_window(arch: str, window: int) -> int:
    """The window the loaded model class reports to SGLang's pool sizing."""
    return window - 1 if arch in WINDOW_MINUS_ONE_ARCHS else window
