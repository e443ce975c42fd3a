"""``explain`` on real SGLang logs. The pool's bytes are checked against kvledger's per-layer
facts; SGLang's token count from ``mem_fraction_static`` is the SGLang layout's rule, so
until that layout exists the token check says so (derived null) — and the test reproduces
the logged count by hand from SGLang's rule, cited below, so the figure is still verified.
"""

from __future__ import annotations

import math

from explain.real_logs import GIB, read, shared_config
from kvledger.report.explain import explain_log

# Qwen/QwQ-32B's KV-relevant config values (a Qwen2ForCausalLM, as the log's "Load weight
# end. type=" says): 64 layers, 40 query heads, 8 KV heads, hidden 5120 (head_dim 128),
# bf16, 131,072 positions (the log's context_len). Written out here because the checkpoint's
# config.json is not among the shared configs; every number below is worked from these.
QWQ_32B = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120,
    "intermediate_size": 27648, "num_hidden_layers": 64, "num_attention_heads": 40,
    "num_key_value_heads": 8, "max_position_embeddings": 131072, "torch_dtype": "bfloat16",
    "vocab_size": 152064, "tie_word_embeddings": False, "use_sliding_window": False,
}


def test_qwq32b_pool_bytes_follow_from_the_token_count() -> None:
    e = explain_log(read("sglang-0.4.3-llmsinclouds-qwq32b-tp4.log"), model=QWQ_32B)
    assert e.engine == "sglang"
    pool = e.check("kv_pool_bytes")
    # TP 4 → 2 KV heads per GPU; K per token = 64 layers × 2 × 128 × 2 B = 32,768 B, V the
    # same. SGLang allocates #tokens + page_size (1) rows: 46,612 × 32,768 = 1,527,382,016 B
    # = 1.4225 GiB for K, printed "1.42 GB"; K + V = 3,054,764,032 B.
    assert pool.derived == (46_611 + 1) * 2 * 32_768 == 3_054_764_032
    assert pool.match is True


def test_qwq32b_token_count_by_sglangs_rule_and_null_without_the_layout() -> None:
    e = explain_log(read("sglang-0.4.3-llmsinclouds-qwq32b-tp4.log"), model=QWQ_32B)
    tokens = e.check("kv_cache_tokens")
    assert tokens.logged == 46_611
    if tokens.derived is None:
        assert "SGLang layout is not available" in tokens.why
    else:
        assert tokens.match is True
    # SGLang's rule (model_runner.profile_max_num_token): rest = free memory after the
    # weights − total × (1 − mem_fraction_static), the total being the free memory before
    # them; tokens = rest // (bytes per token of all layers, K and V). With the logged
    # 21.63 GB / 6.09 GB (each ±0.005) and 0.85: rest ∈ [6.085 − 21.635 × 0.15,
    # 6.095 − 21.625 × 0.15] GiB, over 64 × 2 × 128 × 2 × 2 = 65,536 B per token.
    cell = 64 * 2 * 128 * 2 * 2
    low = math.floor((6.085 - 21.635 * 0.15) * GIB / cell)
    high = math.floor((6.095 - 21.625 * 0.15) * GIB / cell)
    assert low <= 46_611 <= high


def test_qwq32b_weights_within_the_estimate() -> None:
    e = explain_log(read("sglang-0.4.3-llmsinclouds-qwq32b-tp4.log"), model=QWQ_32B)
    weights = e.check("weights_bytes")
    # 32.76 B parameters × 2 B / 4 GPUs = 15.26 GiB estimated; SGLang measured 15.54 GB.
    assert weights.match is True and "15.54 GiB" in weights.why


def test_issue21348_sglang_pool_of_qwen3_235b() -> None:
    config = shared_config("Qwen--Qwen3-235B-A22B-FP8.json")
    e = explain_log(read("sglang-issue21348-qwen3-235b-fp8-tp4.log"), model=config)
    pool = e.check("kv_pool_bytes")
    # 94 layers × 1 KV head per GPU (4 heads, TP 4) × 128 × 2 B = 24,064 B of K per token;
    # (367,404 + 1) × 24,064 = 8,841,233,920 B = 8.234 GiB, printed "8.23 GB" for K and V.
    k_bytes = (367_404 + 1) * 94 * 128 * 2
    assert round(k_bytes / GIB, 2) == 8.23
    assert pool.derived == 2 * k_bytes
    assert pool.match is True
