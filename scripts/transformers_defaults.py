"""Print what transformers' config classes fill in for cache-affecting keys a config.json omits.

vLLM loads a checkpoint's ``config.json`` through transformers' config class for its
``model_type`` (``AutoConfig``), so a key the file omits takes the class's default, which is
not always the fallback a reader would guess (Qwen3Config: ``head_dim`` 128, not
``hidden_size // num_attention_heads``). ``derive/model_types.py`` records these defaults per
model type; this script is how they were read. Research tool: run it with the interpreter
that has vLLM 0.32's transformers (5.19), never from the package or the tests::

    /work/oracle/vllm-venv/bin/python scripts/transformers_defaults.py llama qwen3 ...

Each class is built from a small probe (6 heads, hidden 108, 3 layers) with everything else
omitted, so a default that follows another key shows up as such: ``= num_attention_heads``
(6) or ``= hidden_size // num_attention_heads`` (18). Keys the class does not define are not
printed: for those the model file's own fallback applies (``getattr(config, key, ...)``).
"""

from __future__ import annotations

import sys
from typing import Any

KEYS = (
    "num_key_value_heads", "head_dim", "sliding_window", "layer_types", "attention_chunk_size",
    "max_position_embeddings", "use_sliding_window", "max_window_layers",
    # MLA / DSA / DeepSeek-V4
    "kv_lora_rank", "qk_rope_head_dim", "q_lora_rank", "num_nextn_predict_layers", "index_topk",
    "index_head_dim", "index_topk_freq", "index_skip_topk_offset", "compress_ratios",
    # gated delta-net, Mamba, KDA
    "full_attention_interval", "linear_conv_kernel_dim", "linear_key_head_dim",
    "linear_value_head_dim", "linear_num_key_heads", "linear_num_value_heads",
    "mamba_ssm_dtype", "mtp_num_hidden_layers", "mamba_num_heads", "mamba_head_dim", "n_groups",
    "ssm_state_size", "conv_kernel", "expand", "state_size", "num_heads", "intermediate_size",
    "mamba_d_state", "mamba_d_conv", "mamba_expand", "mamba_ngroups", "mamba_headdim",
    "n_mamba_heads", "attention_head_dim", "layers_block_type", "mtp_layers_block_type",
    # encoder-decoder
    "d_model", "decoder_attention_heads", "decoder_layers", "max_source_positions",
    "max_target_positions",
)
PROBE = {"num_attention_heads": 6, "hidden_size": 108, "num_hidden_layers": 3}


def describe(value: Any) -> str:
    if value == PROBE["num_attention_heads"]:
        return "= num_attention_heads"
    if value == PROBE["hidden_size"] // PROBE["num_attention_heads"]:
        return "= hidden_size // num_attention_heads"
    return repr(value)


def main(model_types: list[str]) -> None:
    from transformers import CONFIG_MAPPING, __version__

    print(f"transformers {__version__}")
    for model_type in model_types:
        cls = CONFIG_MAPPING[model_type]
        try:
            cfg = cls(**PROBE)
        except Exception as exc:
            print(f"{model_type:20s} {cls.__name__}: cannot build from the probe ({exc})")
            continue
        if hasattr(cfg, "get_text_config"):
            cfg = cfg.get_text_config()
        parts = []
        for key in KEYS:
            if hasattr(cfg, key):
                value = getattr(cfg, key)
                if isinstance(value, list) and len(value) > 8:
                    value = f"<list of {len(value)}>"
                parts.append(f"{key}: {describe(value)}")
        print(f"{model_type:20s} {cls.__name__}")
        for part in parts:
            print(f"    {part}")


if __name__ == "__main__":
    main(sys.argv[1:])
