"""What vLLM 0.34 changed besides the budget (``releases/v0_34.py``), each shown on the same
request under ``vllm==0.33`` and ``vllm==0.34`` — so each fails if the 0.34 profile is planned
as 0.33.

- ``config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE`` 16 → 64, applied by
  ``platforms/interface.py update_block_size_for_backend`` (each backend's
  ``get_preferred_block_size(64)``) and ``_align_hybrid_block_size``
  (``max(backend's smallest kernel block, cache_config.block_size)``). The dense and hybrid
  rows are vLLM 0.34's own (``tests/oracles/vllm-0.34/block-auto-cases.jsonl``, replayed by
  test_vllm_oracles.py); so is the SM100 MLA row (``vllm-0.34-new-behaviour.jsonl``: the
  oracle's SM100 emulation picks FLASHINFER_MLA, kernel blocks [32, 64]: 32 under 0.33's
  default of 16, 64 under 0.34's).
- ``config/vllm.py VllmConfig.__post_init__``: Model Runner V1 is gone, so ``suffix``
  speculation keeps async scheduling on (0.33 ran it on the V1 runner, which turned it off):
  two batches of 8,192 tokens in flight (ngram: vLLM 0.34's own answer,
  ``vllm-0.34-new-behaviour.jsonl``).
"""

from __future__ import annotations

from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.engines.vllm.releases import vllm_release
from kvledger.plan.engines.vllm.resolve import concurrent_batches
from kvledger.plan.request import PlanRequest
from oracle_cases import real_config, skip_without_shared

GIB = 1 << 30


def _plan(config: str, engine: str, **extra: Any) -> Any:
    request = PlanRequest(engine=engine, kv_cache_memory_bytes=8 * GIB, **extra)
    return plan_vllm(derive_model(real_config(config)), request, 8 * GIB)


@pytest.mark.parametrize(("engine", "block", "blocks"), [
    ("vllm==0.33", 16, 4096), ("vllm==0.34", 64, 1024)])
def test_dense_auto_block(engine: str, block: int, blocks: int) -> None:
    # Llama-3.1-8B: 4,096 B a token a layer × 32 layers = 128 KiB a token; 8 GiB / 128 KiB =
    # 65,536 tokens: 4,096 blocks of 16, 1,024 of 64.
    plan = _plan("meta-llama--Meta-Llama-3.1-8B.json", engine, max_model_len=32768)
    assert (plan.block_size, plan.num_blocks, plan.kv_cache_tokens) == (block, blocks, 65536)


@pytest.mark.parametrize(("engine", "block"), [("vllm==0.33", 32), ("vllm==0.34", 64)])
def test_sm100_flashinfer_mla_takes_the_release_default(engine: str, block: int) -> None:
    # DeepSeek-V2-Lite on a B200: FLASHINFER_MLA first (qk_nope_head_dim 128), kernel blocks
    # [32, 64]: get_preferred_block_size(16) → 32, get_preferred_block_size(64) → 64.
    skip_without_shared()
    plan = _plan("deepseek-ai--DeepSeek-V2-Lite.json", engine, max_model_len=32768, gpu="B200")
    assert plan.block_size == block


@pytest.mark.parametrize(("engine", "block"), [("vllm==0.33", 16), ("vllm==0.34", 64)])
def test_sm90_flash_attn_mla_takes_the_release_default(engine: str, block: int) -> None:
    # FLASH_ATTN_MLA (MultipleOf(16)) takes either default.
    skip_without_shared()
    plan = _plan("deepseek-ai--DeepSeek-V2-Lite.json", engine, max_model_len=32768)
    assert plan.block_size == block


@pytest.mark.parametrize(("engine", "block"), [("vllm==0.33", 4128), ("vllm==0.34", 4160)])
def test_hybrid_alignment_starts_from_the_default(engine: str, block: int) -> None:
    # Nemotron-H-56B: the attention block must hold one Mamba state; the alignment is
    # max(16, cache_config.block_size): 16 × 258 = 4,128 under 0.33, 64 × 65 = 4,160 under
    # 0.34 (vLLM 0.34's own answer: block-auto-cases.jsonl).
    skip_without_shared()
    plan = _plan("nvidia--Nemotron-H-56B-Base-8K.json", engine, max_model_len=8192)
    assert plan.block_size == block


def test_an_explicit_block_size_is_kept() -> None:
    plan = _plan("meta-llama--Meta-Llama-3.1-8B.json", "vllm==0.34", max_model_len=32768,
                 block_size=16)
    assert (plan.block_size, plan.num_blocks) == (16, 4096)


@pytest.mark.parametrize(("engine", "expected"), [
    ("vllm==0.33", (False, 1)), ("vllm==0.34", (True, 2))])
def test_suffix_speculation_and_async_scheduling(engine: str,
                                                 expected: tuple[bool, int]) -> None:
    request = PlanRequest(engine=engine, num_speculative_tokens=3, speculative_method="suffix",
                          kv_cache_memory_bytes=GIB)
    assert concurrent_batches(request, vllm_release(request.engine_release)) == expected


def test_pp_keeps_async_scheduling_under_034() -> None:
    # 0.34: max_concurrent_batches = pp + 1 with async scheduling, whatever the method.
    request = PlanRequest(engine="vllm==0.34", pipeline_parallel_size=2,
                          num_speculative_tokens=3, speculative_method="ngram",
                          kv_cache_memory_bytes=GIB)
    assert concurrent_batches(request, vllm_release("0.34")) == (True, 3)


@pytest.mark.parametrize(("release", "where"), [
    ("0.33", "models/gemma.py"), ("0.34", "models/transformers/")])
def test_gemma_moved_to_the_transformers_backend(release: str, where: str) -> None:
    # 0.34 model_executor/models/registry.py _TRANSFORMERS_SUPPORTED_MODELS: GemmaForCausalLM
    # is the Transformers backend's TransformersForCausalLM (its Base is SupportsPP).
    from kvledger.plan.engines.vllm.pp_support import pp_verdict

    found = pp_verdict(("GemmaForCausalLM",), vllm_release(release))
    assert found is not None and found[1] is True and where in found[2]
