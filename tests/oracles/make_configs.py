"""Write the MODIFIED configs in ``configs/``: a real config from ../shared/configs with one
quantization block added, to ask vLLM 0.32 how it treats that block (see SOURCES.md) — or, for
``TEXT_ONLY``, a multimodal config's ``text_config`` lifted to the top (the form a text-only
checkpoint takes: vLLM's speculative config names ``qwen3_5_moe_text`` for it), because the
oracle cannot build a multimodal model's runner without its processor files, and
speculative decoding needs that runner. ``TEXT_ONLY`` also gives the SGLang oracle the
text-only form of types seen before only inside a wrapper, and ``RETYPED`` restates a real
config under another model type / architecture with the same schema (SOURCES-sglang-every.md).

Run from the repository root: ``python tests/oracles/make_configs.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / ".." / "shared" / "configs"

# compressed-tensors KV scheme as llm-compressor writes it (fp8, per tensor, symmetric), and
# an int8 one vLLM's CompressedTensorsKVCacheMethod rejects. No config_groups: the weights
# stay unquantized, so the CPU oracle needs no weight kernel.
CT_FP8 = {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False,
          "symmetric": True}
CT_INT8 = {"num_bits": 8, "type": "int", "strategy": "tensor", "dynamic": False,
           "symmetric": True}


def compressed_tensors(scheme: dict[str, object]) -> dict[str, object]:
    return {"quant_method": "compressed-tensors", "format": "naive-quantized",
            "config_groups": {}, "ignore": ["lm_head"], "kv_cache_scheme": scheme,
            "quantization_status": "compressed"}


def modelopt_hf_quant(quant_algo: str, kv_algo: str) -> dict[str, object]:
    return {"producer": {"name": "modelopt", "version": "0.29.0"},
            "quantization": {"quant_algo": quant_algo, "kv_cache_quant_algo": kv_algo,
                             "exclude_modules": ["lm_head"]}}


MADE = {
    # name: (real config, quantization_config to add or None, hf_quant_config or None)
    "meta-llama--Meta-Llama-3.1-8B.CT-FP8KV.MODIFIED.json":
        ("meta-llama--Meta-Llama-3.1-8B.json", compressed_tensors(CT_FP8), None),
    "meta-llama--Meta-Llama-3.1-8B.CT-INT8KV.MODIFIED.json":
        ("meta-llama--Meta-Llama-3.1-8B.json", compressed_tensors(CT_INT8), None),
    "deepseek-ai--DeepSeek-V2-Lite.CT-FP8KV.MODIFIED.json":
        ("deepseek-ai--DeepSeek-V2-Lite.json", compressed_tensors(CT_FP8), None),
    "meta-llama--Meta-Llama-3.1-8B.MIXED-HFQ.MODIFIED.json":
        ("meta-llama--Meta-Llama-3.1-8B.json", None, modelopt_hf_quant("MIXED_PRECISION", "FP8")),
    "deepseek-ai--DeepSeek-V2-Lite.NVFP4KV-HFQ.MODIFIED.json":
        ("deepseek-ai--DeepSeek-V2-Lite.json", None, modelopt_hf_quant("FP8", "NVFP4")),
}


# name: (real multimodal config, the text-only architecture vLLM registers for it)
TEXT_ONLY = {
    "Qwen--Qwen3.6-35B-A3B.TEXT.MODIFIED.json":
        ("Qwen--Qwen3.6-35B-A3B.json", "Qwen3_5MoeForCausalLM"),
    # SGLang 0.5.23 oracle cases for text-only checkpoints of types kvledger had seen only
    # inside a wrapper (SOURCES-sglang-every.md); the architecture is SGLang's text class.
    "LiquidAI--LFM2.5-VL-1.6B.TEXT.MODIFIED.json":
        ("LiquidAI--LFM2.5-VL-1.6B.json", "Lfm2ForCausalLM"),
    "moonshotai--Kimi-K3.TEXT.MODIFIED.json": ("moonshotai--Kimi-K3.json", "KimiLinearForCausalLM"),
    "meta-llama--Llama-4-Scout-17B-16E-Instruct.TEXT.MODIFIED.json":
        ("meta-llama--Llama-4-Scout-17B-16E-Instruct.json", "Llama4ForCausalLM"),
    "Qwen--Qwen3.5-9B.TEXT.MODIFIED.json": ("Qwen--Qwen3.5-9B.json", "Qwen3_5ForCausalLM"),
    "google--gemma-4-E2B-it.TEXT.MODIFIED.json":
        ("google--gemma-4-E2B-it.json", "Gemma4ForCausalLM"),
}


# name: (real config, the model_type and architecture it is given instead). SmolVLM's first
# release (HuggingFaceTB/SmolVLM-Instruct) states model_type idefics3 and
# Idefics3ForConditionalGeneration with the same schema SmolVLM2 states as smolvlm; no
# idefics3 config.json was at hand, so SmolVLM2's is retyped to ask SGLang about that class.
RETYPED = {
    "HuggingFaceTB--SmolVLM2-500M-Video-Instruct.IDEFICS3.MODIFIED.json":
        ("HuggingFaceTB--SmolVLM2-500M-Video-Instruct.CONVERTED.json", "idefics3",
         "Idefics3ForConditionalGeneration"),
    # Zyphra's native Zamba2 file names no model_type or architecture; given transformers'
    # (zamba2, Zamba2ForCausalLM) it asks SGLang which class it builds for that architecture.
    "Zyphra--Zamba2-2.7B-native.HF-ARCH.MODIFIED.json":
        ("Zyphra--Zamba2-2.7B-native.json", "zamba2", "Zamba2ForCausalLM"),
}


def _real(name: str) -> Path:
    """A real config of ../shared/configs."""
    return SHARED / name


def main() -> None:
    for name, (source, arch) in TEXT_ONLY.items():
        outer = json.loads(_real(source).read_text())
        text = {**outer["text_config"], "architectures": [arch]}
        (SHARED / name).write_text(json.dumps(text, indent=2) + "\n")
    for name, (source, model_type, arch) in RETYPED.items():
        config = json.loads(_real(source).read_text())
        config.update(model_type=model_type, architectures=[arch])
        (SHARED / name).write_text(json.dumps(config, indent=2) + "\n")
    for name, (source, block, hf_quant) in MADE.items():
        config = json.loads((SHARED / source).read_text())
        if block is not None:
            config["quantization_config"] = block
        (SHARED / name).write_text(json.dumps(config, indent=2) + "\n")
        if hf_quant is not None:
            companion = name.removesuffix(".json") + ".hf_quant_config.json"
            (SHARED / companion).write_text(json.dumps(hf_quant, indent=2) + "\n")


if __name__ == "__main__":
    main()
