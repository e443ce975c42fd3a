"""Issue 25, "one truth per number": ``inspect``, ``plan``'s layer table, its pools and its JSON
state the dtype and bytes the engine stores, MTP layers are counted apart, ``plan`` gives the
total bytes per token and per request, and says why its tokens are not blocks × block size.

Each example failed before this work: gpt-oss's rows said float32 at 4,096 B a layer beside a
bfloat16 plan; DeepSeek-V3's inspect total counted its MTP layer (71,424 B/token) and its plan
rows did too; plan had no total bytes and no word on 254,414 ≠ 17,906 × 16. The expected
numbers are the bundled configs' values worked by hand.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import pytest

from kvledger.cli.main import main
from release_pin import as_release

GPT_OSS = "openai/gpt-oss-120b"
DSV3 = "deepseek-ai/DeepSeek-V3"
QWEN3_NEXT = "Qwen/Qwen3-Next-80B-A3B-Thinking"
TEN_GIB = ("--kv-cache-memory-bytes", "10GiB")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(as_release(argv))
    return code, out.getvalue(), err.getvalue()


def as_json(*argv: str) -> dict[str, Any]:
    code, out, err = run(*argv, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


# gpt-oss-120b: 36 layers alternating sliding (window 128) / full, 8 KV heads × head_dim 64.
# The config states no dtype (transformers would load float32); vLLM --dtype auto serves a
# float32 model in bfloat16 and its cache follows: 2 (K, V) × 8 × 64 × 2 B = 2,048 B a layer,
# 36 × 2,048 = 73,728 B per token.
GPT_OSS_LAYER = 2 * 8 * 64 * 2
GPT_OSS_TOKEN = 36 * GPT_OSS_LAYER


def test_gpt_oss_inspect_states_the_served_dtype_and_bytes() -> None:
    data = as_json("inspect", GPT_OSS)
    assert data["model_dtype"] == "float32"  # what the config implies, still said
    assert data["kv_dtype"] == "bfloat16" and "bfloat16" in data["kv_dtype_source"]
    assert {g["facts"]["dtype"] for g in data["groups"]} == {"bfloat16"}
    assert {g["facts"]["bytes_per_token"] for g in data["groups"]} == {GPT_OSS_LAYER}
    assert data["bytes_per_token"] == GPT_OSS_TOKEN == 73_728
    code, out, _ = run("inspect", GPT_OSS)
    assert code == 0 and "4,096" not in out
    # The layer kinds table: 18 sliding and 18 full layers of 2,048 B each; the in-order
    # table folds the alternation into one row holding all 36 layers' 73,728 B.
    assert "(sliding 128, full) ×18" in out and "73,728" in out


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_gpt_oss_plan_rows_agree_with_its_dtype_and_pages(engine: str) -> None:
    data = as_json("plan", GPT_OSS, *TEN_GIB, "--engine", engine)
    assert data["kv_cache_dtype"] == "bfloat16"
    assert {row["dtype"] for row in data["layers"]} == {"bfloat16"}
    assert {row["bytes_per_token"] for row in data["layers"]} == {GPT_OSS_LAYER}
    assert data["bytes_per_token"] == GPT_OSS_TOKEN
    # A vLLM block is 16 tokens of the widest group: 18 layers × 2,048 B × 16 = 589,824 B;
    # SGLang's pool entry is one token of its 18 full (or 18 sliding) layers: 36,864 B.
    entry = 18 * GPT_OSS_LAYER * (16 if engine == "vllm" else 1)
    assert {p["entry_bytes"] for p in data["pools"]} == {entry}


def test_gpt_oss_plan_says_why_tokens_are_not_blocks_times_block_size() -> None:
    data = as_json("plan", GPT_OSS, *TEN_GIB)
    # 10 GiB // 589,824 B = 18,204 blocks = 291,264 tokens of 16. One 131,072-token request
    # takes 131,072 / 16 = 8,192 full-attention blocks and cdiv(128 - 1 + 16,384, 16) + 1 =
    # 1,033 sliding-window blocks (max_num_batched_tokens 16,384): 9,225. vLLM logs
    # int(18,204 / 9,225 × 131,072) = 258,648 tokens.
    assert data["num_blocks"] == 10 * 2**30 // 589_824 == 18_204
    assert data["kv_cache_tokens"] == int(18_204 / 9_225 * 131_072) == 258_648
    note = data["kv_cache_tokens_note"]
    assert "18,204 × 16 = 291,264" in note and "9,225 blocks" in note
    assert "8,192" in note and "1,033" in note
    code, out, _ = run("plan", GPT_OSS, *TEN_GIB)
    assert code == 0 and "291,264" in out
    # A model whose tokens are blocks × block size has no such line.
    plain = as_json("plan", "meta-llama/Llama-3.1-8B", *TEN_GIB)
    assert plain["kv_cache_tokens"] == plain["num_blocks"] * plain["block_size"]
    assert "kv_cache_tokens_note" not in plain


# DeepSeek-V3: 61 decoder MLA layers, latent 512 + rope 64, bfloat16: (512 + 64) × 2 B =
# 1,152 B a layer; 61 × 1,152 = 70,272 B per token served; its 1 MTP layer adds 1,152
# (71,424) only when speculative decoding drafts with it.
DSV3_LAYER = (512 + 64) * 2
DSV3_SERVED = 61 * DSV3_LAYER


def test_deepseek_v3_inspect_counts_the_mtp_layer_apart() -> None:
    data = as_json("inspect", DSV3)
    assert data["bytes_per_token"] == DSV3_SERVED == 70_272
    assert data["mtp_bytes_per_token"] == DSV3_LAYER
    code, out, _ = run("inspect", DSV3)
    assert code == 0
    assert "70,272" in out and "MTP layers (61) are not in the total" in out
    assert "71,424 B/token then" in out


def test_deepseek_v3_plan_stores_the_mtp_layer_only_when_speculating() -> None:
    data = as_json("plan", DSV3, *TEN_GIB)
    mtp = [row for row in data["layers"] if row["role"] == "mtp"]
    assert len(mtp) == 1 and mtp[0]["bytes_per_token"] == 0 and mtp[0]["not_cached"]
    assert data["bytes_per_token"] == DSV3_SERVED
    # vLLM's block: 61 layers × 1,152 B × 16 tokens = 1,124,352 B.
    assert data["pools"][0]["entry_bytes"] == 61 * DSV3_LAYER * 16
    spec = as_json("plan", DSV3, *TEN_GIB, "--speculative-method", "mtp",
                   "--num-speculative-tokens", "1")
    assert spec["bytes_per_token"] == 62 * DSV3_LAYER == 71_424
    assert spec["pools"][0]["entry_bytes"] == 62 * DSV3_LAYER * 16
    sglang = as_json("plan", DSV3, *TEN_GIB, "--engine", "sglang")
    assert sglang["bytes_per_token"] == DSV3_SERVED
    # ATOM sizes 61 layers' blocks of 16 (1,124,352 B), and the MTP layer only with MTP.
    atom = as_json("plan", DSV3, *TEN_GIB, "--engine", "atom")
    assert atom["bytes_per_token"] == DSV3_SERVED
    assert atom["pools"][0]["entry_bytes"] == 61 * DSV3_LAYER * 16
    atom = as_json("plan", DSV3, *TEN_GIB, "--engine", "atom", "--speculative-method", "mtp",
                   "--num-speculative-tokens", "1")
    assert atom["bytes_per_token"] == 62 * DSV3_LAYER


def test_qwen3_next_totals_per_token_and_per_request() -> None:
    # Qwen3-Next-80B: 48 layers, every 4th full attention (12), 2 KV heads × head_dim 256,
    # bfloat16: 2 × 2 × 256 × 2 B = 2,048 B a layer, 12 × 2,048 = 24,576 B per token. The
    # other 36 are Gated DeltaNet states: conv (16 × 128 × 2 + 32 × 128) × (4 - 1) × 2 B =
    # 49,152 B and recurrent 32 × 128 × 128 × 2 B = 1,048,576 B, 1,097,728 B a layer, 36 ×
    # 1,097,728 = 39,518,208 B per request. Its 1 MTP layer (full attention) is apart.
    served_token, served_request = 12 * 2_048, 36 * (49_152 + 1_048_576)
    inspected = as_json("inspect", QWEN3_NEXT)
    assert inspected["bytes_per_token"] == served_token == 24_576
    assert inspected["bytes_per_request"] == served_request == 39_518_208
    assert inspected["mtp_bytes_per_token"] == 2_048
    planned = as_json("plan", QWEN3_NEXT, *TEN_GIB)
    assert planned["bytes_per_token"] == served_token
    assert planned["bytes_per_request"] == served_request
    code, out, _ = run("plan", QWEN3_NEXT, *TEN_GIB)
    assert code == 0 and "24,576" in out and "39,518,208" in out
