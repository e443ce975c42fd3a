"""Which part of a config SGLang 0.5.23 reads as the language model, and its context length.

SGLang reads both off the *transformers config object*, not off config.json's text, so three
things a plain dict lookup misses decide the answer:

* **the text config** — ``get_hf_text_config`` (``utils/hf_transformers/common.py``) takes
  ``thinker_config`` first (and its ``text_config``: Qwen2.5-Omni, Qwen3-ASR), then
  ``llm_config``, ``language_config``, ``text_config``; without one, the config itself.
* **attribute aliases** — GPT-2, GPTBigCode and GPT-J map ``max_position_embeddings`` onto
  ``n_positions`` (their ``attribute_map`` in transformers 5.19), so SGLang's
  ``getattr(config, "max_position_embeddings")`` returns ``n_positions``.
* **class defaults** — a key config.json omits takes the config class's default (the row
  ``defaults`` of ``derive/model_types.py``, read from the same transformers 5.19).

Why not kvledger's ``max_position_embeddings`` fact: that is vLLM's rule (the *smallest* of
many keys); SGLang takes the *first* of its five keys, times a rope ``factor``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.derive.model_types import MODEL_TYPES, resolve

# utils/hf_transformers/common.py: CONTEXT_LENGTH_KEYS, in this order.
CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                "max_position_embeddings")
# transformers 5.19 attribute_map entries that rename one of CONTEXT_KEYS (the others in the
# supported model types map a key onto an earlier key of the same list, which changes nothing).
ATTRIBUTE_ALIASES: Mapping[str, Mapping[str, str]] = {
    "gpt2": {"max_position_embeddings": "n_positions"},
    "gpt_bigcode": {"max_position_embeddings": "n_positions"},
    "gptj": {"max_position_embeddings": "n_positions"},
}
# get_hf_text_config's priority (thinker_config > llm_config > language_config > text_config).
_TEXT_KEYS = ("thinker_config", "llm_config", "language_config", "text_config")


def text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's config as SGLang's ``get_hf_text_config`` picks it."""
    for key in _TEXT_KEYS:
        sub = config.get(key)
        if isinstance(sub, Mapping):
            if key == "thinker_config" and isinstance(sub.get("text_config"), Mapping):
                return sub["text_config"]  # type: ignore[no-any-return]
            return sub
    return config


def _defaults(model_type: Any) -> Mapping[str, Any]:
    if isinstance(model_type, str) and model_type in MODEL_TYPES:
        return resolve(model_type).defaults
    return {}


def context_length(text: Mapping[str, Any]) -> int:
    """SGLang's ``get_context_length`` on the text config: the first of its keys (through the
    config class's aliases and defaults), times a rope ``factor`` unless the scaling names
    ``original_max_position_embeddings`` or is ``llama3``; else 2048."""
    rope = text.get("rope_scaling")
    factor: float = 1
    if isinstance(rope, Mapping) and rope:
        factor = rope.get("factor", 1) or 1
        if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
            factor = 1
    model_type = text.get("model_type")
    aliases = ATTRIBUTE_ALIASES.get(model_type, {}) if isinstance(model_type, str) else {}
    defaults = _defaults(model_type)
    for key in CONTEXT_KEYS:
        name = aliases.get(key, key)
        value = text.get(name)
        if value is None:
            value = defaults.get(name)
        if value is not None:
            return int(factor * value)
    return 2048
