"""The longest sequence a config states, read the way vLLM 0.32 reads it.

Configs spell their context length in many ways: ``max_position_embeddings`` (Llama, OPT),
``n_positions`` (GPT-2, GPT-J, StarCoder), ``seq_length`` (ChatGLM), ``max_seq_len`` (MPT),
``model_max_length`` (Command-R), ``max_target_positions`` (Whisper's decoder). vLLM's
``ModelArchConfigConvertorBase.derive_max_model_len_and_key``
(vllm/transformers_utils/model_arch_config_convertor.py) takes the *smallest* of these keys
the text config has, except that ``model_max_length`` wins outright when set (Command-R,
Cohere2). The config class's defaults count (``_get_and_verify_max_len`` reads attributes, so
GPT-J's class default ``n_positions`` 2048 applies when the file states none); the model-type
row's ``defaults`` carry them, under the name the class stores them by.

What this does not copy (the caller still owns it): vLLM then multiplies by a RoPE scaling
factor for RoPE types other than yarn/llama3/longrope/su (``_get_and_verify_max_len``), and
falls back to 2048 when no key is found at all.
"""

from __future__ import annotations

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError

# vLLM's ``possible_keys``, in its order.
MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
OVERRIDE_KEY = "model_max_length"


def stated_max_len(cfg: Config) -> int | None:
    """The config's maximum length by vLLM's rule, or None when it states none."""
    found: dict[str, int] = {}
    for key in MAX_LEN_KEYS:
        value = cfg.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{cfg.model}: {key} must be a positive integer, got {value!r}")
        found[key] = value
    if not found:
        return None
    if OVERRIDE_KEY in found:
        return found[OVERRIDE_KEY]
    return min(found.values())
