"""How many layers SGLang 0.5.23 counts for a separate EAGLE / EAGLE3 / STANDALONE draft, and
what that adds to the token pool's cell.

``model_executor/model_runner_components/spec_aux_hidden_state.py
_resolve_eagle_aux_hidden_state`` reads the draft's config (``ModelConfig.from_server_args``
with ``model_path=speculative_draft_model_path``, ``is_draft_model=True``):
``eagle_draft_num_layers`` is its ``num_nextn_predict_layers`` when the config states one,
else ``max(num_hidden_layers, num_attention_layers)`` — ``ModelConfig.num_attention_layers``
being ``num_hidden_layers`` times the architecture's repeat (2 for Longcat-Flash, the loop
count for IQuest's loop coder and Nanbeige), 1 otherwise. ``model_executor/pool_configurator.py``
``DefaultPoolConfigurator.__init__`` then grows the target's cell by
``int(cell × draft layers / target layers)`` — "assumes the draft shares the target's
per-layer KV size" (for a DSA target the latent and the indexer apart; ``cells.py``) — and the
draft worker allocates its own pool at the same token count (``MemoryPoolConfig``, "shared
between target and draft workers"). The draft's weights load after the pool is sized, so they
come out of what ``mem_fraction_static`` leaves outside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# SGLang's --speculative-algorithm values (kvledger's method names) whose draft is a separate
# model read from --speculative-draft-model-path.
SEPARATE_DRAFT_METHODS = ("eagle", "eagle3", "draft_model")


def _count(config: Mapping[str, Any], key: str) -> int | None:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def draft_num_layers(config: Mapping[str, Any]) -> int:
    """``eagle_draft_num_layers`` for a draft config (module docstring); a ValueError when the
    config states no layer count SGLang could read."""
    text = config.get("text_config")
    cfg: Mapping[str, Any] = text if isinstance(text, Mapping) else config
    nextn = _count(cfg, "num_nextn_predict_layers")
    if nextn is not None:
        return nextn
    layers = _count(cfg, "num_hidden_layers")
    if layers is None:
        raise ValueError("the draft's config states no num_hidden_layers (SGLang reads the "
                         "draft's layer count from it)")
    # configs/model_config.py: num_attention_layers is num_hidden_layers, but for the
    # architectures that run their layers more than once; SGLang takes the larger of the two.
    arch = config.get("architectures")
    names = set(arch) if isinstance(arch, list) else set()
    repeat = 1
    if "LongcatFlashForCausalLM" in names:
        repeat = 2
    for name, key in (("IQuestLoopCoderForCausalLM", "loop_num"),
                      ("NanbeigeForCausalLM", "num_loops")):
        if name in names:
            repeat = _count(cfg, key) or 1
    if "WhisperForConditionalGeneration" in names:
        raise ValueError("a Whisper config is not a draft model SGLang sizes this way")
    return max(layers, layers * repeat)
