"""SGLang's platform from each GPU preset's own compute capability (plan/gpus.py), not from a
second table of preset names: every CUDA preset plans, a ROCm one is its gfx name (planned by
backends.py), a GPU known only by its total is Hopper (the assumption vLLM's layout states too)."""

from __future__ import annotations

import pytest

from kvledger.plan.api import plan_model
from kvledger.plan.engines.sglang.memory import gpu_arch
from kvledger.plan.gpus import given_total_preset, gpu_names, gpu_preset
from kvledger.plan.request import PlanRequest


@pytest.mark.parametrize(("gpu", "arch"), [
    ("H100-PCIE", "sm90"), ("H200-NVL", "sm90"), ("B300", "sm100"), ("GB200", "sm100"),
    ("RTX-PRO-6000", "sm120"), ("A10", "sm86"), ("L40", "sm89"), ("A30", "sm80"),
    (None, "sm90"),
])
def test_arch_from_the_presets_capability(gpu: str | None, arch: str) -> None:
    # SGLang's is_sm100 / is_sm120 are family checks (major 10 / 12): sm103 → sm100.
    assert gpu_arch(gpu) == arch


def test_a_total_alone_is_hopper() -> None:
    assert gpu_arch(given_total_preset(80 << 30)) == "sm90"


def test_every_cuda_preset_has_a_platform_and_rocm_its_gfx_name() -> None:
    for name in gpu_names():
        stated = str(gpu_preset(name).compute_capability)
        if stated.startswith("gfx"):
            assert gpu_arch(name) == stated
        else:
            assert gpu_arch(name).startswith("sm")


def test_sglang_plans_with_a_total_alone() -> None:
    # Llama-3.1-8B-shaped: 32 layers × 2 (K, V) × 8 heads × 128 × 2 B = 131,072 B a token.
    llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
             "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
             "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
             "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}
    plan = plan_model(llama, PlanRequest(engine="sglang", gpu_total_bytes=80 << 30))
    # A total alone is a Hopper of that total: the same pool as a named H100 given the same
    # total (its budget lines are the same reserves against the same bytes).
    named = plan_model(llama, PlanRequest(engine="sglang", gpu="H100-80GB",
                                          gpu_total_bytes=80 << 30))
    assert plan.kv_cache_tokens == named.kv_cache_tokens > 0
    assert plan.kv_cache_tokens * 131_072 <= 80 << 30
