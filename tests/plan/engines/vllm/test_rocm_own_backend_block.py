"""vLLM 0.34's own attention backend on a ROCm GPU sets the block at ``--block-size auto``.

platforms/rocm.py ``_get_backend_priorities``: for standard attention ROCM_ATTN comes first
(without a KV connector), and ``RocmAttentionBackend.get_preferred_block_size`` (new in 0.34)
returns 16 — the native paged-attention kernel's block — instead of the default 64. It is
taken unless ``validate_configuration`` finds a reason: attention sinks (gpt-oss), multimodal
prefix attention (gemma3's image tokens, unless text-only), a head size or KV dtype it has no
kernel for. The backends after it (ROCM_AITER_FA, ROCM_AITER_UNIFIED_ATTN, TRITON_ATTN) keep
0.34's default 64. vLLM 0.33 has no such override: its default 16 everywhere. The CPU oracle
cannot run ROCm backends: the numbers are worked by hand.

Llama-3.1-8B: 32 layers × 2 × 8 KV heads × 128 × 2 B = 131,072 B a token. At 8 GiB: blocks
of 16 are 2 MiB → 4,096 blocks; blocks of 64 are 8 MiB → 1,024.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main


def plan(capsys: pytest.CaptureFixture[str], model: str, release: str, gpu: str,
         *extra: str) -> dict[str, Any]:
    code = main(["plan", model, "--engine", release, "--gpu", gpu, "--kv-cache-memory-bytes",
                 "8GiB", "--json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.mark.parametrize(("release", "gpu", "block", "blocks"), [
    ("vllm==0.34", "MI300X", 16, 4_096),  # ROCM_ATTN's preference; before: 64 / 1,024
    ("vllm==0.34", "MI355X", 16, 4_096),
    ("vllm==0.34", "H200", 64, 1_024),  # CUDA: FLASH_ATTN takes the default
    ("vllm==0.33", "MI300X", 16, 4_096),  # no override: the default 16
])
def test_llama_block_on_rocm(capsys: pytest.CaptureFixture[str], release: str, gpu: str,
                             block: int, blocks: int) -> None:
    data = plan(capsys, "meta-llama/Meta-Llama-3.1-8B", release, gpu)
    assert (data["block_size"], data["num_blocks"]) == (block, blocks)
    named = any("ROCM_ATTN" in w for w in data["warnings"])
    assert named == (release == "vllm==0.34" and gpu.startswith("MI"))


def test_sinks_keep_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    # gpt-oss's learned sinks: ROCM_ATTN is "attention sinks not supported"; the AITER or
    # Triton backend after it takes 0.34's default 64.
    assert plan(capsys, "openai/gpt-oss-20b", "vllm==0.34", "MI300X")["block_size"] == 64


def test_multimodal_prefix_attention_keeps_the_default_unless_text_only(
        capsys: pytest.CaptureFixture[str]) -> None:
    # gemma3 is an mm-prefix LM (model_arch_config_convertor.py is_mm_prefix_lm): ROCM_ATTN
    # has no supports_mm_prefix, so 64. --language-model-only turns multimodal input off and
    # the prefix mode with it: ROCM_ATTN, 16.
    model = "google/gemma-3-27b-it"
    assert plan(capsys, model, "vllm==0.34", "MI300X")["block_size"] == 64
    assert plan(capsys, model, "vllm==0.34", "MI300X",
                "--language-model-only")["block_size"] == 16
