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
from kvledger.derive.limits import MAX_POSITIONS

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from typing import Any

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


SENTENCE_KEY = "max_seq_length"


def sentence_max_len(found: tuple[str, dict[str, Any]] | None, model: str,
                     ) -> tuple[str, int] | None:
    """(file name, ``max_seq_length``) of a sentence-transformers config beside config.json,
    or None when there is none or it states no length.

    A fact of the checkpoint, kept apart from the config's own keys: vLLM replaces its derived
    length with it (source/sentence.py says where), SGLang never reads the file. vLLM takes the
    value unchecked and fails later on anything but a number; here it must be a positive
    integer within kvledger's bound.
    """
    if found is None or SENTENCE_KEY not in found[1]:
        return None
    name, data = found
    value = data[SENTENCE_KEY]
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_POSITIONS:
        raise ConfigError(f"{model}: {name} {SENTENCE_KEY} must be a positive integer of at "
                          f"most {MAX_POSITIONS:,}, got {value!r}")
    return name, value
