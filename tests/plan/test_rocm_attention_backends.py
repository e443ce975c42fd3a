"""vLLM 0.33 on a ROCm GPU picks its attention backend from ``platforms/rocm.py``
``_get_backend_priorities`` (engine="vllm==0.33"): dense MLA takes TRITON_MLA without
``VLLM_ROCM_USE_AITER=1`` (MultipleOf(16): ``--block-size auto`` is 16, where Hopper's fp8
cache takes FLASHMLA's 64); sparse MLA would take ROCM_AITER_MLA_SPARSE, refused by name."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main

V3 = ("vllm", "serve", "deepseek-ai/DeepSeek-V3", "-tp", "8", "--max-model-len", "32768")


def run(capsys: pytest.CaptureFixture[str], gpu: str, *line: str) -> tuple[int, str, str]:
    code = main(["plan", "--engine", "vllm==0.33", "--gpu", gpu, "--offline", "--json", "--",
                 *line])
    out, err = capsys.readouterr()
    return code, out, err


def planned(capsys: pytest.CaptureFixture[str], gpu: str, *line: str) -> dict[str, Any]:
    code, out, err = run(capsys, gpu, *line)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_fp8_mla_cache_takes_triton_mla_blocks_on_rocm(
        capsys: pytest.CaptureFixture[str]) -> None:
    rocm = planned(capsys, "MI300X", *V3, "--kv-cache-dtype", "fp8")
    hopper = planned(capsys, "H200", *V3, "--kv-cache-dtype", "fp8")
    assert rocm["block_size"] == 16  # TRITON_MLA: get_preferred_block_size(16), 16 % 16 == 0
    assert hopper["block_size"] == 64  # FLASHMLA: exactly [64]
    assert any("TRITON_MLA" in w for w in rocm["warnings"])


@pytest.mark.parametrize("gpu", ["MI325X", "MI355X"])
def test_every_instinct_preset_takes_triton_mla(capsys: pytest.CaptureFixture[str],
                                               gpu: str) -> None:
    assert planned(capsys, gpu, *V3, "--block-size", "64")["block_size"] == 64


def test_block_one_names_both_rocm_backends(capsys: pytest.CaptureFixture[str]) -> None:
    # TRITON_MLA refuses block 1 (vLLM stops without AITER); ROCM_AITER_MLA (MultipleOf(1),
    # VLLM_ROCM_USE_AITER=1) would take it: refused with both, and the way to a plan.
    code, _, err = run(capsys, "MI300X", *V3, "--block-size", "1")
    assert code == 2
    assert "no valid attention backend" in err and "ROCM_AITER_MLA" in err
    assert "Drop --block-size" in err


def test_aiter_mla_backend_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "MI300X", *V3, "--attention-backend", "ROCM_AITER_MLA")
    assert code == 2 and "ROCM_AITER_MLA" in err and "TRITON_MLA" in err


def test_triton_mla_selected_on_rocm_is_planned(capsys: pytest.CaptureFixture[str]) -> None:
    data = planned(capsys, "MI300X", *V3, "--attention-backend", "TRITON_MLA")
    assert data["block_size"] == 16


def test_sparse_mla_on_rocm_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "MI300X", "vllm", "serve", "deepseek-ai/DeepSeek-V3.2", "-tp",
                       "8")
    assert code == 2 and "ROCM_AITER_MLA_SPARSE" in err


GPT_OSS = ("vllm", "serve", "openai/gpt-oss-120b", "--tensor-parallel-size", "8",
           "--attention-backend", "ROCM_AITER_UNIFIED_ATTN")


def test_aiter_unified_attention_prefers_block_64(capsys: pytest.CaptureFixture[str]) -> None:
    # rocm_aiter_unified_attn.py: MultipleOf(16) kernel blocks, get_preferred_block_size → 64.
    assert planned(capsys, "MI355X", *GPT_OSS)["block_size"] == 64
    assert planned(capsys, "MI355X", *GPT_OSS, "--block-size", "32")["block_size"] == 32
    code, _, err = run(capsys, "MI355X", *GPT_OSS, "--block-size", "8")
    assert code == 2 and "block_size not supported" in err


def test_rocm_backend_on_an_nvidia_gpu_names_the_amd_presets(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "H200", *GPT_OSS)
    assert code == 2 and "MI300X" in err


def test_aiter_mla_takes_any_block(capsys: pytest.CaptureFixture[str]) -> None:
    # VLLM_ROCM_USE_AITER=1: ROCM_AITER_MLA first (MultipleOf(1)); auto stays 16
    # (get_preferred_block_size(16) takes 16). num_blocks = budget // page bytes and a
    # 16-token page is 16 one-token pages, so the 16-block pool holds
    # (block-1 tokens // 16) × 16 tokens.
    aiter = ("VLLM_ROCM_USE_AITER=1", *V3)
    one = planned(capsys, "MI355X", *aiter, "--block-size", "1")
    auto = planned(capsys, "MI355X", *aiter)
    assert (one["block_size"], auto["block_size"]) == (1, 16)
    assert one["num_blocks"] == one["kv_cache_tokens"]
    assert auto["kv_cache_tokens"] == one["kv_cache_tokens"] // 16 * 16
    # VLLM_ROCM_USE_AITER_MLA=0 keeps TRITON_MLA, which refuses block 1.
    code, _, err = run(capsys, "MI355X", "VLLM_ROCM_USE_AITER_MLA=0", *aiter, "--block-size",
                       "1")
    assert code == 2 and "TRITON_MLA" in err


def test_rocm_image_recipe_plans_on_an_instinct_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    # The ROCm Kimi-K2.5-shaped recipe: -e VLLM_ROCM_USE_AITER=1 … --block-size=1.
    line = ("docker", "run", "--device=/dev/kfd", "-e", "VLLM_ROCM_USE_AITER=1",
            "vllm/vllm-openai-rocm:latest", "deepseek-ai/DeepSeek-V3",
            "--tensor-parallel-size", "8", "--max-model-len", "32768", "--block-size=1")
    assert planned(capsys, "MI355X", *line)["block_size"] == 1
    code, _, err = run(capsys, "H200", *line)
    assert code == 2 and "name an AMD GPU" in err
