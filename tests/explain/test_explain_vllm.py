"""``explain`` on real vLLM logs: every logged KV figure is reproduced from the logged memory
(within the interval that rounds to the printed GiB), or the mismatch is reported with its
cause. The expected numbers are the engine's own (the log) and, where the model is a plain
transformer, worked by hand from the config in the comments.
"""

from __future__ import annotations

import math

import pytest

from explain.real_logs import GIB, read, shared_config
from kvledger.report.explain import explain_log

LLAMA = "meta-llama/Meta-Llama-3.1-8B"  # catalog; Llama-3.1-8B-Instruct has the same KV
# Llama-3.1-8B: 32 layers × 2 (K, V) × 8 KV heads × 128 × 2 B = 131,072 B per token.
LLAMA_LAYER_TOKEN = 2 * 8 * 128 * 2  # 4,096 B per layer per token
# The PR-20707 log (vLLM 0.10) prints no version line and no block size: it is replayed as the
# newest release kvledger knows, whose --block-size auto (0.34: 64) is not 0.10's 16.
BLOCK_16 = {"block_size": 16}


def test_pr20707_llama_blocks_tokens_and_concurrency_follow_from_memory() -> None:
    e = explain_log(read("vllm-0.10-pr20707-llama31-8b.log"), model=LLAMA, overrides=BLOCK_16)
    # One block = 16 tokens × 32 layers × 4,096 B = 2,097,152 B (2 MiB), so blocks =
    # floor(GiB × 512): 112.605 × 512 = 57,653.8 and 112.615 × 512 = 57,658.9 → 57,653–57,658.
    # The log's 57,656 blocks are inside; 57,656 × 16 = 922,496 tokens (logged); one
    # 40,000-token request needs ceil(40,000 / 16) = 2,500 blocks → 57,656 / 2,500 = 23.0624.
    blocks = e.check("num_gpu_blocks")
    assert blocks.match is True and blocks.range == (57_653, 57_658)
    assert blocks.derived == math.floor(112.61 * 512) == 57_656
    tokens = e.check("kv_cache_tokens")
    assert tokens.logged == 922_496 == 57_656 * 16
    assert tokens.match is True and tokens.derived == 922_496
    assert "the log's 922,496 is inside" in tokens.why
    conc = e.check("max_concurrency")
    assert conc.match is True and conc.derived == pytest.approx(57_656 / 2_500)


def test_pr20707_suggestions_are_replanned_numbers() -> None:
    e = explain_log(read("vllm-0.10-pr20707-llama31-8b.log"), model=LLAMA, overrides=BLOCK_16)
    changes = {s.change: s.effect for s in e.suggestions}
    # fp8 halves the bytes per token: blocks = floor(112.61 × 1024) = 115,312 → 1,844,992.
    assert "1,844,992 tokens" in changes["--kv-cache-dtype fp8"]
    # Half the length: 57,656 blocks / 1,250 per 20,000-token request = 46.12.
    assert "46.12 at 20,000" in changes["--max-model-len 20000"]
    # No GPU total in this log and no --gpu: no utilization suggestion is invented.
    assert not any(c.startswith("--gpu-memory-utilization") for c in changes)


def test_pr20707_utilization_suggestion_with_a_gpu() -> None:
    e = explain_log(read("vllm-0.10-pr20707-llama31-8b.log"), model=LLAMA, gpu="H200")
    util = next(s for s in e.suggestions if s.change == "--gpu-memory-utilization 0.95")
    # H200 preset: 143,771 MiB. (int(total × 0.95) − int(total × 0.92)) = 4.21 GiB more.
    extra = int(143_771 * 2**20 * 0.95) - int(143_771 * 2**20 * 0.92)
    assert f"+{extra / GIB:.2f} GiB" in util.effect
    # The budget estimate exists now and says which lines are estimates.
    avail = e.check("available_kv_bytes")
    assert avail.derived is not None and "estimated" in avail.why


def test_club3090_612_hybrid_model_tokens_inside_the_rounding_interval() -> None:
    e = explain_log(read("vllm-0.24.0-club3090-612.log"), model="Qwen/Qwen3.6-35B-A3B")
    tokens = e.check("kv_cache_tokens")
    # The engine logged 567,978 from "5.98 GiB"; 5.975 GiB gives one block fewer, so the
    # interval is [566,079, 567,978] and the logged count sits at its top.
    assert tokens.match is True
    assert tokens.range is not None and tokens.range[0] < 567_978 == tokens.range[1]
    conc = e.check("max_concurrency")
    assert conc.match is True and round(conc.derived, 2) == 4.33
    # Already fp8: no fp8 suggestion. Prefix caching changes a hybrid model's blocks.
    changes = [s.change for s in e.suggestions]
    assert "--kv-cache-dtype fp8" not in changes
    assert "--no-enable-prefix-caching" in changes


def test_club3090_652_same_setup_more_memory() -> None:
    e = explain_log(read("vllm-0.24.0-club3090-652.log"), model="Qwen/Qwen3.6-35B-A3B")
    assert e.engine_version == "0.24.0"
    assert e.check("kv_cache_tokens").match is True  # 569,878 from 6.01 GiB
    assert e.check("max_concurrency").match is True  # 4.35


def test_club3090_612_with_the_nvfp4_checkpoint_config() -> None:
    config = shared_config("nvidia--Qwen3.6-35B-A3B-NVFP4.json")
    e = explain_log(read("vllm-0.24.0-club3090-612.log"), model=config)
    assert e.check("kv_cache_tokens").match is True


def test_issue19996_eagle_draft_layer_is_the_named_cause() -> None:
    e = explain_log(read("vllm-0.9.1-issue19996-llama31-8b-eagle.log"), model=LLAMA)
    tokens = e.check("kv_cache_tokens")
    # Without the draft: blocks = floor(51.63 × 512) = 26,434 → 422,944 tokens.
    assert tokens.derived == math.floor(51.63 * 512) * 16 == 422_944
    assert tokens.match is False
    assert "exactly 1 more layer" in tokens.why and "EAGLE" in tokens.why
    # By hand with the EAGLE draft's one extra layer (33 × 4,096 B per token): one block is
    # 16 × 33 × 4,096 = 2,162,688 B and the rounding interval gives the logged count.
    per_block = 16 * 33 * LLAMA_LAYER_TOKEN
    low = math.floor(51.625 * GIB / per_block) * 16
    high = math.floor(51.635 * GIB / per_block) * 16
    assert low <= 410_128 <= high


def test_issue19996_budget_estimate_on_an_h100() -> None:
    e = explain_log(read("vllm-0.9.1-issue19996-llama31-8b-eagle.log"), model=LLAMA,
                    gpu="H100-80GB")
    avail = e.check("available_kv_bytes")
    # 0.9.1 captures CUDA graphs after sizing the cache: the estimate subtracts none.
    assert "CUDA graphs 0.00" in avail.why
    # Replayed as 0.10.2, the nearest profile: its sampler sorts (0.9 has no Triton
    # top-k/top-p kernel either), so the activation peak holds 1,024 rows × 128,256 ×
    # (2 + 4 + 32) B and the estimate meets the logged 51.63 GiB (as 0.19's rules it was
    # 2.9 GiB above it).
    assert e.engine_release == "vLLM 0.10.2"
    assert avail.match is True and abs(avail.derived - avail.logged) < GIB // 4


def test_issue21348_tensor_parallel_mismatch_names_its_candidates() -> None:
    config = shared_config("Qwen--Qwen3-235B-A22B-FP8.json")
    e = explain_log(read("vllm-issue21348-qwen3-235b-fp8-tp4.log"), model=config)
    tokens = e.check("kv_cache_tokens")
    # Qwen3-235B-A22B: 94 layers, 4 KV heads → 1 per GPU at TP 4: 94 × 2 × 128 × 2 B =
    # 48,128 B per token, 770,048 B per block; floor(8.11 GiB / 770,048) = 11,308 blocks →
    # 180,928 tokens. The log's 178,880 = 11,180 blocks: 128 blocks fewer.
    assert tokens.derived == math.floor(8.11 * GIB / 770_048) * 16 == 180_928
    assert tokens.match is False
    assert "-2,048" in tokens.why
    assert "workers" in tokens.why


def test_minimax_refusal_figures() -> None:
    config = shared_config("MiniMaxAI--MiniMax-M2.7.json")
    e = explain_log(read("vllm-0.29.1-sparkvllm396-minimax-m27-refused.log"), model=config,
                    overrides={"tensor_parallel_size": 2})
    # By hand: MiniMax-M2.7, 62 layers, 8 KV heads → 4 per GPU at TP 2 (the issue's prose
    # says TP=2; the log lines do not, hence the override), head_dim 128, bf16:
    # 62 × 2 × 4 × 128 × 2 = 126,976 B per token; 196,608 tokens × 126,976 B =
    # 24,964,497,408 B = 23.25 GiB exactly.
    assert int(23.25 * GIB) == 196_608 * 62 * 2 * 4 * 128 * 2
    # The longest request: blocks of 16 × 126,976 = 2,031,616 B; 22.495–22.505 GiB hold
    # 11,889–11,894 blocks → 190,224–190,304 tokens; the log's 190,272 is inside.
    assert (math.floor(22.495 * GIB / 2_031_616) * 16 <= 190_272
            <= math.floor(22.505 * GIB / 2_031_616) * 16)
    needed = e.check("needed_kv_bytes")
    assert needed.logged == int(23.25 * GIB)
    # kvledger does not yet accept minimax_m2's attn_type_list: it says so instead of
    # guessing; once it does, its number must match the log.
    if needed.derived is None:
        assert "attn_type_list" in needed.why
    else:
        assert needed.match is True


# -- the utilization a log does not state: the default of the log's vLLM release ------------
# (report/vllm_defaults.py: 0.9 through v0.19, 0.19.0's config/cache.py; 0.92 from v0.20, as
# the release profiles record it, and in 0.32's config/cache.py.)
ISSUE19996 = "vllm-0.9.1-issue19996-llama31-8b-eagle.log"
H100_TOTAL = 81_559 * 2**20  # the H100-80GB preset


def _budget_why(log: str) -> str:
    e = explain_log(log, model=LLAMA, gpu="H100-80GB")
    return e.check("available_kv_bytes").why


def test_unstated_utilization_is_the_logged_releases_default() -> None:
    # vLLM 0.9.1 (the log's collect_env line): 0.9, and the check says it was not stated.
    why = _budget_why(read(ISSUE19996))
    assert f"int({H100_TOTAL / GIB:.2f} GiB × 0.9) = {int(H100_TOTAL * 0.9) / GIB:.2f}" in why
    assert "0.9 is vLLM 0.9.1's default" in why
    # The same log from a 0.26 release: 0.92.
    newer = read(ISSUE19996).replace("0.9.1.dev705+g01220ce89", "0.26.0")
    why = _budget_why(newer)
    assert f"int({H100_TOTAL / GIB:.2f} GiB × 0.92) = {int(H100_TOTAL * 0.92) / GIB:.2f}" in why
    assert "0.92 is vLLM 0.26.0's default" in why


def test_unstated_utilization_without_a_version_says_what_it_assumed() -> None:
    lines = [ln for ln in read(ISSUE19996).splitlines() if "vLLM Version" not in ln]
    why = _budget_why("\n".join(lines) + "\n")
    assert "× 0.92)" in why
    assert "assumed 0.92" in why and "prints no vLLM version" in why


def test_unstated_utilization_of_a_profiled_release_is_its_profiles_default() -> None:
    # vLLM 0.19.0's config/cache.py: Field(default=0.9, ...) (the 0.19 profile); 0.20: 0.92.
    # These were "assumed 0.92" while kvledger knew 0.9 only through v0.16.
    for version, util in (("0.19.0", 0.9), ("0.20.1", 0.92)):
        log = read(ISSUE19996).replace("0.9.1.dev705+g01220ce89", version)
        why = _budget_why(log)
        assert f"int({H100_TOTAL / GIB:.2f} GiB × {util:g}) = " \
               f"{int(H100_TOTAL * util) / GIB:.2f}" in why
        assert f"{util:g} is vLLM {version}'s default" in why and "assumed" not in why
