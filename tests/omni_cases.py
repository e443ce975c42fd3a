"""A tiny Qwen2.5-Omni-shaped checkpoint and a three-stage vLLM-Omni deploy file for it,
written here so the omni tests run without ../shared (tests/plan/test_omni_plan.py,
tests/cli/test_cli_omni.py). Only the sizes that matter are stated."""

from __future__ import annotations

from typing import Any

TINY: dict[str, Any] = {
    "model_type": "qwen2_5_omni", "architectures": ["Qwen2_5OmniModel"],
    "torch_dtype": "bfloat16",
    # thinker: 4 layers × 2 (K, V) × 2 KV heads × head_dim 1024 / 8 = 128 × 2 B = 4,096 B a
    # token: 65,536 B a 16-token block.
    "thinker_config": {"model_type": "qwen2_5_omni_thinker", "text_config": {
        "model_type": "qwen2_5_omni_text", "hidden_size": 1024, "num_hidden_layers": 4,
        "num_attention_heads": 8, "num_key_value_heads": 2, "max_position_embeddings": 4096,
        "vocab_size": 1000, "intermediate_size": 2048}},
    # talker: 3 layers × 2 × 4 KV heads × the stated head_dim 128 (not 896 // 12 = 74) × 2 B
    # = 6,144 B a token: 98,304 B a block.
    "talker_config": {"model_type": "qwen2_5_omni_talker", "hidden_size": 896,
                      "num_hidden_layers": 3, "num_attention_heads": 12,
                      "num_key_value_heads": 4, "head_dim": 128,
                      "max_position_embeddings": 4096, "vocab_size": 1000,
                      "intermediate_size": 2048},
}
TINY_YAML = """\
stages:
  - stage_id: 0
    gpu_memory_utilization: 0.5
    max_num_seqs: 4
    devices: "0"
  - stage_id: 1
    gpu_memory_utilization: 0.3
    max_num_seqs: 2
    enforce_eager: true
    devices: "1"
  - stage_id: 2
    gpu_memory_utilization: 0.1
    max_num_seqs: 2
    enforce_eager: true
    devices: "1"
"""
