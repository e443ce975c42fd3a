"""The longest sequence a config states, read the way vLLM 0.32 reads it.

Why not ``max_position_embeddings`` alone: configs name their length differently — DBRX
``max_seq_len``, GPT-2 ``n_positions``, ChatGLM ``seq_length``, Whisper
``max_target_positions`` — and vLLM takes the *smallest* of every such key the (text) config
carries, with Cohere's ``model_max_length`` overriding them all
(``ModelArchConfigConvertorBase.derive_max_model_len_and_key``,
vllm/transformers_utils/model_arch_config_convertor.py). Reading only one key would make a
DBRX plan ask for ``--max-model-len`` that vLLM never needs.
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError

# vLLM's ``possible_keys``, in its order (the order only matters for which key is named).
MAX_LEN_KEYS = (
    "max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
    "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len",
)
OVERRIDE_KEY = "model_max_length"


def max_len(cfg: Config) -> int | None:
    """vLLM's derived max model length for ``cfg`` (``None``: the config states none)."""
    found: dict[str, int] = {}
    for key in MAX_LEN_KEYS:
        value = cfg.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{cfg.model}: {key} must be a positive integer, got {value!r}")
        found[key] = value
    if OVERRIDE_KEY in found:
        return found[OVERRIDE_KEY]
    return min(found.values()) if found else None
