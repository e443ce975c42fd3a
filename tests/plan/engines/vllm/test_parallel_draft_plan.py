"""vLLM 0.34 plans a DFlash / DSpark draft's KV layers and weights (plan/engines/vllm/
parallel_draft.py), from ``--draft-config`` (a draft config written here, numbers chosen for
hand arithmetic; none is copied from a checkpoint).

Target: Qwen/Qwen3-8B from the catalog, 36 layers x 8 KV heads x 128 x 2 (K, V) x 2 B (bf16)
= 36 x 4,096 = 147,456 B a token. vLLM 0.34 blocks are 64 tokens (CacheConfig.DEFAULT_BLOCK_SIZE).

DFlash draft (qwen3_dflash.py DFlashQwen3ForCausalLM): 2 layers x 8 KV heads x 128, full
attention, non-causal (no is_causal / causal / layer_types) — they join the target's KV groups
(attn_utils.get_kv_cache_spec; is_draft never affects grouping):
  per token  (36 + 2) x 4,096 = 155,648 B;   a 64-token block 9,961,472 B
  on --kv-cache-memory-bytes 10 GiB = 10,737,418,240 B: floor(/ 9,961,472) = 1,077 blocks,
  1,077 x 64 = 68,928 tokens (target alone: 9,437,184 B a block, 1,137 blocks).
Draft weights (hidden 1024, 8 heads, intermediate 2048, target_hidden_size 4096, two target
layers fed), TP 1, bf16:
  per layer: qkv 1024 x (8 + 2x8) x 128 = 3,145,728; o 8 x 128 x 1024 = 1,048,576; q/k norms
  256; MLP 3 x 1024 x 2048 = 6,291,456; two norms 2,048 -> 10,488,064; x 2 = 20,976,128
  fc 4096 x 2 x 1024 = 8,388,608; hidden_norm + norm + mask_embedding 3,072
  = 29,367,808 parameters x 2 B = 58,735,616 B (embed_tokens / lm_head: the target's).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main

TARGET = "Qwen/Qwen3-8B"
BUDGET = str(10 << 30)


def draft(**over: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 1024,
        "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8,
        "head_dim": 128, "intermediate_size": 2048, "vocab_size": 151936,
        "target_hidden_size": 4096, "max_position_embeddings": 40960, "rope_theta": 1000000,
        "rms_norm_eps": 1e-6, "block_size": 16,
        "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 17]},
    }
    config.update(over)
    return config


def write(tmp_path: Path, config: dict[str, Any]) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


def plan(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = main(["plan", TARGET, "--engine", "vllm==0.34", "--json", *args])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else {}), err


def test_dflash_draft_layers_join_the_target_pool(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, result, err = plan(capsys, "--kv-cache-memory-bytes", BUDGET,
                             "--speculative-method", "dflash", "--num-speculative-tokens", "15",
                             "--draft-config", write(tmp_path, draft()))
    assert code == 0, err
    assert result["block_size"] == 64
    assert result["num_blocks"] == 1077
    assert result["kv_cache_tokens"] == 68928
    drafted = [row for row in result["layers"] if row.get("role") == "draft"]
    assert [(row["first"], row["last"], row["bytes_per_token"]) for row in drafted] == [
        (36, 37, 4096)]


def test_dflash_draft_weights_join_the_weights_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, draft())
    code, with_draft, err = plan(capsys, "--gpu", "H200", "--speculative-method", "dflash",
                                 "--num-speculative-tokens", "15", "--draft-config", path)
    assert code == 0, err
    code, alone, err = plan(capsys, "--gpu", "H200")
    assert code == 0, err

    def weights(result: dict[str, Any]) -> int:
        return int(next(line["bytes"] for line in result["budget"] if line["key"] == "weights"))

    assert weights(with_draft) - weights(alone) == 58_735_616


def test_dspark_adds_the_markov_head(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Qwen3 DSpark (qwen3_dspark.py): the DFlash backbone above + markov_w1 151,936 x 32 +
    # markov_w2 151,936 x 32 = 9,723,904 parameters (replicated) -> 19,447,808 B more:
    # 58,735,616 + 19,447,808 = 78,183,424 B. KV as DFlash's: 1,077 blocks on 10 GiB.
    config = draft(architectures=["DSparkDraftModel"], markov_rank=32)
    path = write(tmp_path, config)
    code, result, err = plan(capsys, "--kv-cache-memory-bytes", BUDGET,
                             "--speculative-method", "dspark", "--num-speculative-tokens", "7",
                             "--draft-config", path)
    assert code == 0, err
    assert result["num_blocks"] == 1077
    code, with_draft, err = plan(capsys, "--gpu", "H200", "--speculative-method", "dspark",
                                 "--num-speculative-tokens", "7", "--draft-config", path)
    assert code == 0, err
    code, alone, err = plan(capsys, "--gpu", "H200")
    lines = [{line["key"]: line["bytes"] for line in r["budget"]} for r in (with_draft, alone)]
    assert lines[0]["weights"] - lines[1]["weights"] == 78_183_424


def test_dflash_without_a_draft_config_names_the_option(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = plan(capsys, "--kv-cache-memory-bytes", BUDGET, "--speculative-method",
                        "dflash", "--num-speculative-tokens", "15")
    assert code == 2 and "--draft-config" in err and "\n" not in err.strip()


def test_unread_draft_architecture_is_refused_by_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, draft(architectures=["Gemma4DSparkModel"], markov_rank=8))
    code, _, err = plan(capsys, "--kv-cache-memory-bytes", BUDGET, "--speculative-method",
                        "dspark", "--num-speculative-tokens", "7", "--draft-config", path)
    assert code == 2 and "Gemma4DSparkModel" in err and "drop --speculative-method" in err


def test_release_without_the_rule_refuses(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", TARGET, "--engine", "vllm==0.33", "--kv-cache-memory-bytes", BUDGET,
                 "--speculative-method", "dflash", "--num-speculative-tokens", "15",
                 "--draft-config", write(tmp_path, draft())])
    err = capsys.readouterr().err
    assert code == 2 and "vllm==0.34" in err


def test_other_engines_refuse_dflash(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", TARGET, "--engine", "sglang", "--kv-cache-memory-bytes", BUDGET,
                 "--speculative-method", "dflash", "--num-speculative-tokens", "15"])
    err = capsys.readouterr().err
    assert code == 2 and "--engine vllm only" in err


def test_a_draft_config_without_head_dim_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # hidden 1024 / 8 heads = 128 here, but vLLM reads the draft as Qwen3Config, whose head_dim
    # defaults to 128 whatever hidden / heads is (transformers' Qwen3Config; EAGLEConfig copies
    # the built class's attributes): kvledger asks for it instead of guessing either.
    config = draft()
    del config["head_dim"]
    config["hidden_size"] = 2048  # 2048 / 8 = 256, not the class default 128
    path = write(tmp_path, config)
    code, _, err = plan(capsys, "--kv-cache-memory-bytes", BUDGET, "--speculative-method",
                        "dflash", "--num-speculative-tokens", "15", "--draft-config", path)
    assert code == 2 and "states no head_dim" in err and "128" in err
