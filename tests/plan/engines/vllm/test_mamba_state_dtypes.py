"""``--mamba-cache-dtype`` / ``--mamba-ssm-cache-dtype`` (vLLM 0.34, config/cache.py
``MambaDType``; ``MambaStateDtypeCalculator._mamba_state_dtype``: conv states at
mamba_cache_dtype — "auto": the model dtype —, SSM states at mamba_ssm_cache_dtype — "auto":
the architecture's rule, else the conv dtype) and ``--mamba-cache-mode`` (no effect:
``MambaModelConfig.verify_and_update_config`` sets it from prefix caching).

Nemotron-H-56B-Base-8K (the catalog's config): 54 Mamba2 layers, 10 attention layers of 8 KV
heads × 128, bfloat16. One Mamba2 layer's state at TP 1:
  conv: (conv_kernel 4 − 1) × (256 heads × 64 + 2 × 8 groups × 256 state = 20,480) × 2 B
        = 122,880 B
  SSM:  256 heads × 64 head_dim × 256 state = 4,194,304 values: × 4 B (float32) =
        16,777,216 B, × 2 B (bfloat16) = 8,388,608 B
  layer: float32 16,900,096 B; bfloat16 8,511,488 B.
NemotronH's "auto" is float32 (``NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype``,
the config states none), applied only when the option is "auto".
Hybrid block (``_align_hybrid_block_size``, from 0.34's default block 64, an attention page
of 2 × 8 × 128 × 2 = 4,096 B a token): 64 × cdiv(layer state, 64 × 4,096):
  float32: 64 × cdiv(16,900,096, 262,144) = 64 × 65 = 4,160 tokens;
  bfloat16: 64 × cdiv(8,511,488, 262,144) = 64 × 33 = 2,112 tokens.
Blocks of an 8 GiB budget (groups of 10 layers, uniform page = block × 4,096 B):
  float32: 8,589,934,592 // (4,160 × 4,096 × 10) = 50; bfloat16: // (2,112 × 4,096 × 10) = 99.
A request at max_model_len 8,192 (prefix caching on: mode "align", each of the 6 Mamba
groups 2 + 1 prefill-checkpoint blocks): float32 cdiv(8,192, 4,160) + 6 × 3 = 20 blocks,
50 / 20 = 2.5 requests; bfloat16 cdiv(8,192, 2,112) + 18 = 22, 99 / 22 = 4.5.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main

MODEL = "nvidia/Nemotron-H-56B-Base-8K"
ASK = ["--engine", "vllm==0.34", "--kv-cache-memory-bytes", "8GiB", "--json"]


def _plan(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    code = main(["plan", MODEL, *ASK, *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.mark.parametrize(("extra", "block", "blocks", "concurrency"), [
    ((), 4_160, 50, 2.5),  # "auto": NemotronH's float32
    (("--mamba-ssm-cache-dtype", "float32"), 4_160, 50, 2.5),
    (("--mamba-ssm-cache-dtype", "bfloat16"), 2_112, 99, 4.5),
    # --mamba-cache-dtype bfloat16 (the model dtype already) with ssm "auto": NemotronH's
    # float32 still applies.
    (("--mamba-cache-dtype", "bfloat16"), 4_160, 50, 2.5),
])
def test_the_ssm_state_dtype_sizes_the_hybrid_block(
        capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], block: int, blocks: int,
        concurrency: float) -> None:
    data = _plan(capsys, *extra)
    assert (data["block_size"], data["num_blocks"]) == (block, blocks)
    assert data["max_concurrency"] == pytest.approx(concurrency)
    assert data["kv_cache_tokens"] == int(concurrency * 8_192)


def test_a_pasted_line_reaches_the_same_plan(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--engine", "vllm==0.34", "--json", "--", "vllm", "serve", MODEL,
                 "--kv-cache-memory-bytes", "8G", "--mamba-ssm-cache-dtype", "bfloat16",
                 "--mamba-cache-mode", "align"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    # 8G is vLLM's 8 × 2**30 (human_int with G): the bfloat16 row above.
    assert (data["block_size"], data["num_blocks"]) == (2_112, 99)


def test_kda_refuses_a_float16_recurrent_state(capsys: pytest.CaptureFixture[str]) -> None:
    # Kimi-K3 (the catalog's config) has KDA linear-attention layers.
    # mamba_utils.py kda_state_dtype: "KDA recurrent state supports only auto, float32, and
    # bfloat16; got float16" (a ValueError at start-up).
    code = main(["plan", "moonshotai/Kimi-K3", "--engine", "vllm==0.34",
                 "--kv-cache-memory-bytes", "8GiB", "--mamba-ssm-cache-dtype", "float16"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "KDA recurrent state supports only auto, float32, and bfloat16; got float16" in err
