#!/usr/bin/env python3
"""Regenerate ``tests/oracles/sglang-0.5.23/cases.jsonl``: SGLang 0.5.23's own pool sizing.

Research tool: never imported by kvledger, never run by CI. Each case runs SGLang's sizing code
through ``sglang_oracle_plus.py`` (the shared oracle, ``../shared/oracles/sglang-tool/``,
plus server arguments it has no flag for) in the oracle's venv, one process per case:

    python3 scripts/oracles/sglang_cases.py [--venv /work/oracle/sglang/venv] [--only ID ...]

A case with ``pp`` > 1 runs once per stage (``--pp-stage K/P``); SGLang then takes the MIN
over stages (``KVCacheConfigurator._apply_token_constraints``: all-reduce MIN) and re-sizes
from that count, which a last run reproduces with SGLang's own ``max_total_tokens`` path
(``calculate_pool_sizes_from_max_tokens`` + ``resolve_max_num_reqs``) on stage 0.

The oracle runs on CPU, where SGLang would pick page size 1 and no CUDA capability: each case
passes the page size a GPU deployment uses (``page_size``) and, for DeepSeek DSA models, the
capability SGLang reads to pick the DSA KV dtype and backends (``cuda_capability``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# Every config a case runs, real or derived from a real one (SOURCES*.md there say where each
# is from).
CONFIGS = ROOT / ".." / "shared" / "configs"
OUT = ROOT / "tests" / "oracles" / "sglang-0.5.23" / "cases.jsonl"
PLUS = Path(__file__).resolve().parent / "sglang_oracle_plus.py"
GIB = 1 << 30

# id, config file, KV pool bytes per GPU, then options:
# tp, page_size, kv_cache_dtype, server_args (SGLang names), pp, cuda_capability,
# spec_aux (resolve the EAGLE/MTP draft layers), load_quant (checkpoint KV quant),
# remote_plain (a remote-code config read as a plain PretrainedConfig: --remote-config-as-plain),
# cpu_import_only (the class SGLang registers on a GPU but the CPU oracle cannot import: its
# model_class_error is not SGLang refusing the model).
CASES: list[dict[str, Any]] = [
    # -- dense GQA ------------------------------------------------------------------------
    {"id": "llama31-8b-10g", "config": "meta-llama--Meta-Llama-3.1-8B.json", "bytes": 10 * GIB},
    # The README's worked example: the KV budget kvledger computes for one H100-80GB.
    {"id": "llama31-8b-h100-budget", "config": "meta-llama--Meta-Llama-3.1-8B.json",
     "bytes": 54476679413},
    {"id": "llama31-8b-10g-page64", "config": "meta-llama--Meta-Llama-3.1-8B.json",
     "bytes": 10 * GIB, "page_size": 64},
    {"id": "llama31-8b-10g-fp8", "config": "meta-llama--Meta-Llama-3.1-8B.json",
     "bytes": 10 * GIB, "kv_cache_dtype": "fp8_e4m3"},
    {"id": "llama31-8b-ctx8k", "config": "meta-llama--Meta-Llama-3.1-8B.json",
     "bytes": 40 * GIB, "server_args": {"context_length": 8192}},
    {"id": "llama31-8b-mrr64", "config": "meta-llama--Meta-Llama-3.1-8B.json",
     "bytes": 10 * GIB, "server_args": {"max_running_requests": 64}},
    {"id": "llama31-8b-maxtok", "config": "meta-llama--Meta-Llama-3.1-8B.json",
     "bytes": 10 * GIB, "page_size": 16, "server_args": {"max_total_tokens": 50001}},
    {"id": "llama31-8b-pp3", "config": "meta-llama--Meta-Llama-3.1-8B.json",
     "bytes": 10 * GIB, "pp": 3},
    {"id": "llama31-70b-tp4", "config": "meta-llama--Meta-Llama-3.1-70B.json",
     "bytes": 20 * GIB, "tp": 4},
    {"id": "llama31-70b-tp16", "config": "meta-llama--Meta-Llama-3.1-70B.json",
     "bytes": 20 * GIB, "tp": 16},
    {"id": "qwen3-32b-tp2-fp8", "config": "Qwen--Qwen3-32B.json", "bytes": 24 * GIB, "tp": 2,
     "kv_cache_dtype": "fp8_e4m3"},
    {"id": "qwen3-8b", "config": "Qwen--Qwen3-8B.json", "bytes": 16 * GIB},
    # vLLM issue #21348: SGLang logged "#tokens: 367404, K size: 8.23 GB" on 4×H100; this
    # budget is the smallest that gives 367404 tokens at 48128 B/token per rank.
    {"id": "qwen3-235b-fp8-tp4-issue21348", "config": "Qwen--Qwen3-235B-A22B-FP8.json",
     "bytes": 17682419712, "tp": 4},
    {"id": "mistral-7b", "config": "mistralai--Mistral-7B-v0.1.json", "bytes": 10 * GIB},
    {"id": "mixtral-8x7b-tp2", "config": "mistralai--Mixtral-8x7B-v0.1.json",
     "bytes": 20 * GIB, "tp": 2},
    {"id": "gemma3-27b", "config": "google--gemma-3-27b-it.json", "bytes": 20 * GIB},
    {"id": "gemma2-2b", "config": "google--gemma-2-2b-it.json", "bytes": 8 * GIB},
    {"id": "command-r", "config": "CohereForAI--c4ai-command-r-v01.json", "bytes": 10 * GIB},
    # ModelOpt: config.json's quantization_config wins over hf_quant_config.json; its
    # kv_cache_scheme "FP8" is a string, which SGLang does not read as FP8 KV.
    {"id": "qwen3-32b-modelopt-fp8kv", "config": "Qwen--Qwen3-32B-FP8-Static-PerTensor.json",
     "bytes": 24 * GIB, "load_quant": True},
    # ModelOpt with hf_quant_config.json only (kv_cache_quant_algo FP8): fp8 KV under auto.
    {"id": "llama31-70b-modelopt-fp8kv-tp4", "config": "nvidia--Llama-3.1-70B-Instruct-FP8.json",
     "bytes": 20 * GIB, "tp": 4, "load_quant": True},
    # -- MLA --------------------------------------------------------------------------------
    {"id": "deepseek-v3-30g", "config": "deepseek-ai--DeepSeek-V3.json", "bytes": 30 * GIB},
    {"id": "deepseek-v3-30g-page64", "config": "deepseek-ai--DeepSeek-V3.json",
     "bytes": 30 * GIB, "page_size": 64},
    {"id": "deepseek-v3-fp8", "config": "deepseek-ai--DeepSeek-V3.json", "bytes": 30 * GIB,
     "kv_cache_dtype": "fp8_e4m3", "tp": 8},
    {"id": "deepseek-v3-mtp", "config": "deepseek-ai--DeepSeek-V3.json", "bytes": 30 * GIB,
     "server_args": {"speculative_algorithm": "EAGLE", "speculative_num_steps": 3,
                     "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 4},
     "spec_aux": True},
    {"id": "deepseek-v2-lite", "config": "deepseek-ai--DeepSeek-V2-Lite.json",
     "bytes": 10 * GIB},
    {"id": "kimi-k2-tp8", "config": "moonshotai--Kimi-K2-Instruct.json", "bytes": 40 * GIB,
     "tp": 8},
    {"id": "deepseek-v31-nvfp4-kv", "config": "nvidia--DeepSeek-V3.1-NVFP4.json",
     "bytes": 30 * GIB, "kv_cache_dtype": "nvfp4", "page_size": 64,
     "attention_backend": "trtllm_mla", "cuda_capability": "10.0"},
    # -- DSA --------------------------------------------------------------------------------
    {"id": "deepseek-v32-sm90", "config": "deepseek-ai--DeepSeek-V3.2.json", "bytes": 30 * GIB,
     "page_size": 64, "cuda_capability": "9.0"},
    {"id": "deepseek-v32-sm90-fp8", "config": "deepseek-ai--DeepSeek-V3.2.json",
     "bytes": 30 * GIB, "page_size": 64, "cuda_capability": "9.0",
     "kv_cache_dtype": "fp8_e4m3"},
    {"id": "deepseek-v32-sm100", "config": "deepseek-ai--DeepSeek-V3.2.json",
     "bytes": 30 * GIB, "page_size": 64, "cuda_capability": "10.0"},
    {"id": "glm52-sm90", "config": "zai-org--GLM-5.2.json", "bytes": 30 * GIB,
     "page_size": 64, "cuda_capability": "9.0"},
    # -- hybrid sliding window -------------------------------------------------------------
    {"id": "gpt-oss-20b", "config": "openai--gpt-oss-20b.json", "bytes": 10 * GIB},
    {"id": "gpt-oss-20b-page64", "config": "openai--gpt-oss-20b.json", "bytes": 10 * GIB,
     "page_size": 64},
    {"id": "gpt-oss-20b-ratio05", "config": "openai--gpt-oss-20b.json", "bytes": 10 * GIB,
     "server_args": {"swa_full_tokens_ratio": 0.5}},
    {"id": "gpt-oss-20b-reqcap", "config": "openai--gpt-oss-20b.json", "bytes": 10 * GIB,
     "server_args": {"disable_radix_cache": True, "max_running_requests": 64,
                     "chunked_prefill_size": 8192}},
    {"id": "gpt-oss-120b-tp2", "config": "openai--gpt-oss-120b.json", "bytes": 30 * GIB,
     "tp": 2},
    {"id": "llama4-scout-tp4", "config": "meta-llama--Llama-4-Scout-17B-16E-Instruct.json",
     "bytes": 30 * GIB, "tp": 4},
    # -- Gated DeltaNet hybrids -------------------------------------------------------------
    {"id": "qwen3-next", "config": "Qwen--Qwen3-Next-80B-A3B-Thinking.json", "bytes": 10 * GIB},
    {"id": "qwen3-next-tp4", "config": "Qwen--Qwen3-Next-80B-A3B-Thinking.json",
     "bytes": 30 * GIB, "tp": 4},
    {"id": "qwen3-next-ratio05", "config": "Qwen--Qwen3-Next-80B-A3B-Thinking.json",
     "bytes": 30 * GIB, "server_args": {"mamba_full_memory_ratio": 0.5}},
    {"id": "qwen3-next-noradix", "config": "Qwen--Qwen3-Next-80B-A3B-Thinking.json",
     "bytes": 30 * GIB, "server_args": {"disable_radix_cache": True,
                                        "max_running_requests": 32}},
    {"id": "qwen3-next-nooverlap", "config": "Qwen--Qwen3-Next-80B-A3B-Thinking.json",
     "bytes": 30 * GIB, "server_args": {"disable_overlap_schedule": True}},
    {"id": "qwen3-next-page64", "config": "Qwen--Qwen3-Next-80B-A3B-Thinking.json",
     "bytes": 30 * GIB, "page_size": 64},
    {"id": "qwen3-next-pp2", "config": "Qwen--Qwen3-Next-80B-A3B-Thinking.json",
     "bytes": 30 * GIB, "pp": 2},
    {"id": "qwen35-35b", "config": "Qwen--Qwen3.5-35B-A3B.json", "bytes": 20 * GIB},
    {"id": "qwen35-397b-tp8", "config": "Qwen--Qwen3.5-397B-A17B.json", "bytes": 40 * GIB,
     "tp": 8},
    # -- Mamba2 hybrids ---------------------------------------------------------------------
    {"id": "nemotron-h-56b", "config": "nvidia--Nemotron-H-56B-Base-8K.json",
     "bytes": 20 * GIB},
    {"id": "nemotron-h-56b-tp4", "config": "nvidia--Nemotron-H-56B-Base-8K.json",
     "bytes": 20 * GIB, "tp": 4},
    {"id": "nemotron3-super-fp8", "config":
     "nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8.json", "bytes": 30 * GIB, "tp": 2,
     "load_quant": True},
]


# One real config per model type kvledger derives (``kvledger models --json``), added after
# the layout was first checked: id suffix, config (../shared/configs),
# --context-length (min(32768, the config's max positions)), and case options. Each runs at a
# 16 GiB pool and page 1 (what SGLang picks on Hopper for these backends); a model SGLang
# cannot load records SGLang's own ``model_class_error``.
COVERAGE: list[tuple[str, str, int, dict[str, Any]]] = [
    ("afmoe", "arcee-ai--Trinity-Nano-Preview.neuronx.json", 32768, {}),
    ("bloom", "bigscience--bloom-1layer-TEST.json", 4096, {}),
    ("chatglm", "THUDM--chatglm3-6b.json", 8192, {}),
    ("dbrx", "databricks--dbrx.OME-ABRIDGED.MODIFIED.json", 32768, {}),
    ("deepseek-v4", "deepseek-ai--DeepSeek-V4-Flash.json", 32768, {"load_quant": True}),
    ("ernie4-5", "baidu--ERNIE-4.5-0.3B-PT.HF-ARCH.MODIFIED.json", 32768, {}),
    ("ernie4-5-moe", "baidu--ERNIE-4.5-21B-A3B-FastDeploy-TEST.NOQUANT.MODIFIED.json", 32768, {}),
    # Exaone4's model override asserts fa3 / triton / trtllm_mha (fa3 is Hopper's default).
    ("exaone4", "LGAI-EXAONE--EXAONE-4.0-32B.json", 32768, {"attention_backend": "fa3"}),
    ("exaone4-5", "LGAI-EXAONE--EXAONE-4.5-33B.json", 32768, {}),
    ("falcon", "tiiuae--falcon-40b.json", 2048, {}),
    ("falcon-h1", "tiiuae--Falcon-H1-0.5B.mbridge.D_SSM.MODIFIED.json", 16384, {}),
    # No max-positions key: 2048, SGLang's fallback. The CPU oracle cannot import
    # models/falcon_mamba.py (mamba1.py needs causal_conv1d_fn, which
    # layers/attention/mamba/mamba.py binds only on CUDA / NPU / XPU), so it records a loader
    # error; a GPU registers the class (its EntryClass), and the pool is sized regardless.
    ("falcon-mamba", "tiiuae--falcon-mamba-7b.mlstm.json", 2048,
     {"cpu_import_only": "FalconMambaForCausalLM"}),
    ("gemma", "google--gemma-7b.json", 8192, {}),
    ("gemma3n", "unsloth--gemma-3n-E2B-it.json", 32768, {}),
    ("gemma3n-text", "unsloth--gemma-3n-E2B-it.TEXT.MODIFIED.json", 32768, {}),
    ("gemma4", "google--gemma-4-E2B-it.json", 32768, {}),
    ("glm4-moe", "zai-org--GLM-4.5.json", 32768, {}),
    ("glm4v", "zai-org--GLM-4.1V-9B-Thinking.json", 32768, {}),
    ("glm5-next", "zai-org--GLM-5.3-Flash.json", 32768, {}),
    ("gpt2", "openai-community--gpt2-large.json", 1024, {}),
    ("gpt-bigcode", "WizardLMTeam--WizardCoder-15B-V1.0.json", 8192, {}),
    ("gpt-neox", "togethercomputer--RedPajama-INCITE-3B-v1.json", 2048, {}),
    ("gptj", "EleutherAI--gpt-j-6b.MODIFIED.json", 2048, {}),
    ("granite", "ibm-granite--granite-3.3-8b-instruct.json", 32768, {}),
    ("granitemoe", "ibm-granite--granite-3.0-1b-a400m-instruct.json", 4096, {}),
    ("granitemoe-3-1-tp2", "ibm-granite--granite-3.1-1b-a400m-instruct.json", 32768, {"tp": 2}),
    ("granitemoehybrid", "ibm-granite--granite-4-8b-dense-hybrid.json", 32768, {}),
    ("granitemoehybrid-mamba", "ibm-granite--granite-4-8b-dense-hybrid.MAMBA.MODIFIED.json",
     32768, {}),
    ("jamba", "ai21labs--Jamba-4layer-TEST.json", 32768, {}),
    ("kimi-k25", "moonshotai--Kimi-K2.5.json", 32768, {"load_quant": True}),
    ("kimi-k3", "moonshotai--Kimi-K3.json", 32768, {"load_quant": True}),
    ("laguna", "poolside--Laguna-XS.2-FP8.json", 32768, {"load_quant": True}),
    ("lfm2-vl", "LiquidAI--LFM2.5-VL-1.6B.json", 32768, {}),
    ("llava", "llava-hf--llava-1.5-7b-hf.json", 4096, {}),
    ("llava-next", "llava-hf--llava-v1.6-mistral-7b-hf.TEST.json", 32768, {}),
    ("mimo-v2-flash", "XiaomiMiMo--MiMo-V2-Flash.json", 32768, {"load_quant": True}),
    ("minicpm3", "openbmb--MiniCPM3-4B.json", 32768, {}),
    ("minicpmv4-6", "openbmb--MiniCPM-V-4_6.json", 32768, {"load_quant": True}),
    ("minimax-m1", "MiniMaxAI--MiniMax-M1.json", 32768, {}),
    ("minimax-m2", "MiniMaxAI--MiniMax-M2.5.json", 32768, {"load_quant": True}),
    ("minimax-m3", "MiniMaxAI--MiniMax-M3.json", 32768, {}),
    ("minimax-m3-vl", "nvidia--MiniMax-M3-NVFP4.json", 32768, {"load_quant": True}),
    ("ministral3", "mistralai--Devstral-2-123B-Instruct.json", 32768, {"load_quant": True}),
    ("mistral3", "mistralai--Devstral-Small-2-24B-Instruct.json", 32768, {"load_quant": True}),
    ("mllama", "meta-llama--Llama-3.2-Vision-mllama-4layer-TEST.json", 32768, {}),
    ("muse-glimmer", "meta-models--Muse-Glimmer-30B.json", 32768, {}),
    ("nemotron", "nvidia--Minitron-4B-Base.CONVERTED.json", 4096, {}),
    ("nemotron-nas", "nvidia--Llama-3_3-Nemotron-Super-49B-v1.json", 32768, {"remote_plain": True}),
    ("olmo2", "allenai--OLMo-2-1124-7B.mlc.json", 4096, {}),
    ("olmo3", "allenai--Olmo-3.1-32B-Instruct.json", 32768, {}),
    ("olmoe", "allenai--OLMoE-1B-7B.mbridge.json", 4096, {}),
    ("opt", "facebook--opt-125m.json", 2048, {}),
    ("paligemma", "google--paligemma-3b-pt-224.json", 8192, {}),
    ("phi", "microsoft--phi-1.json", 2048, {}),
    ("phi3", "microsoft--Phi-3-mini-4k-instruct.MODIFIED.json", 4096, {}),
    # Remote-code config classes (auto_map): read as plain PretrainedConfig (no network here).
    ("phi3small", "microsoft--Phi-3-small-8k-instruct.MODIFIED.json", 8192,
     {"remote_plain": True}),
    ("phimoe", "microsoft--Phi-3.5-MoE-instruct.json", 32768, {}),
    ("qwen2", "Qwen--Qwen2.5-7B.json", 32768, {}),
    ("qwen2-5-omni", "Qwen--Qwen2.5-Omni-7B.json", 32768, {"load_quant": True}),
    ("qwen2-5-vl", "allenai--olmOCR-2-7B-1025.json", 32768, {}),
    ("qwen2-audio", "Qwen--Qwen2-Audio-7B-Instruct.json", 8192, {}),
    ("qwen2-vl", "Qwen--Qwen2-VL-2B-Instruct.json", 32768, {"load_quant": True}),
    ("qwen3-5", "nvidia--Qwen3.6-27B-NVFP4.json", 32768, {"load_quant": True}),
    ("qwen3-5-moe-text", "Qwen--Qwen3.6-35B-A3B.TEXT.MODIFIED.json", 32768, {}),
    ("qwen3-asr", "Qwen--Qwen3-ASR-0.6B.json", 32768, {}),
    ("qwen3-vl", "Qwen--Qwen3-VL-8B-Instruct.json", 32768, {}),
    ("qwen3-vl-moe", "Qwen--Qwen3-VL-30B-A3B-Instruct.json", 32768, {}),
    ("smolvlm", "HuggingFaceTB--SmolVLM2-500M-Video-Instruct.CONVERTED.json", 8192, {}),
    ("stablelm", "stabilityai--stablelm-3b-4e1t.json", 4096, {}),
    ("starcoder2", "bigcode--starcoder2.mlc.json", 16384, {}),
    ("whisper", "openai--whisper-tiny.json", 448, {}),
    ("zamba2", "Zyphra--Zamba2-2.7B-native.json", 2048, {}),
    # Variants: the KV dtype option on a Transformers-backend model, TP on multi-query /
    # grouped heads of the new types, fp8 on MiniCPM3's latent (MLA) pool.
    ("gpt-neox-fp8", "togethercomputer--RedPajama-INCITE-3B-v1.json", 2048,
     {"kv_cache_dtype": "fp8_e4m3"}),
    ("chatglm-tp2", "THUDM--chatglm3-6b.json", 8192, {"tp": 2}),
    ("gpt-bigcode-tp2", "WizardLMTeam--WizardCoder-15B-V1.0.json", 8192, {"tp": 2}),
    ("minicpm3-fp8", "openbmb--MiniCPM3-4B.json", 32768, {"kv_cache_dtype": "fp8_e4m3"}),
    ("phimoe-tp4", "microsoft--Phi-3.5-MoE-instruct.json", 32768, {"tp": 4}),
    # Hybrid sliding-window pools of the new types: Gemma-4 without KV sharing and with K = V
    # full layers (26B), its fp8-KV checkpoint (31B NVFP4), TP and 64-token pages.
    ("gemma4-26b", "google--gemma-4-26B-A4B.json", 32768, {}),
    ("gemma4-31b-nvfp4", "nvidia--Gemma-4-31B-IT-NVFP4.json", 32768, {"load_quant": True}),
    ("gemma4-e2b-tp2-page64", "google--gemma-4-E2B-it.json", 32768,
     {"tp": 2, "page_size": 64}),
    # A window (511) longer than the context (256): SGLang still splits the pools by
    # architecture.
    ("gemma4-e2b-ctx256", "google--gemma-4-E2B-it.json", 256, {}),
    ("laguna-s", "poolside--Laguna-S-2.1-FP8.json", 32768, {"load_quant": True}),
    ("mimo-v2-flash-tp4", "XiaomiMiMo--MiMo-V2-Flash.json", 32768,
     {"tp": 4, "load_quant": True}),
    # LFM2's conv-only state pool: radix cache off with a request cap, TP with 16-token
    # pages, and a budget small enough that the state pool caps the requests.
    ("lfm2-vl-noradix", "LiquidAI--LFM2.5-VL-1.6B.json", 32768,
     {"server_args": {"context_length": 32768, "disable_radix_cache": True,
                      "max_running_requests": 64}}),
    ("lfm2-vl-tp2-page16", "LiquidAI--LFM2.5-VL-1.6B.json", 32768,
     {"tp": 2, "page_size": 16}),
    ("lfm2-vl-256m", "LiquidAI--LFM2.5-VL-1.6B.json", 32768, {"bytes": 256 << 20}),
    # Coverage wave 2 variants: the Mamba-1 full-rank state split over TP (and its cap on
    # the requests with the radix cache off), Falcon-H1's Mamba2 groups widened for TP 2
    # (extra_groups_for_head_shards), Gemma-3n's shared-KV rows at TP 2 with 64-token pages.
    ("falcon-mamba-tp2", "tiiuae--falcon-mamba-7b.mlstm.json", 2048,
     {"tp": 2, "cpu_import_only": "FalconMambaForCausalLM"}),
    ("falcon-mamba-noradix", "tiiuae--falcon-mamba-7b.mlstm.json", 2048,
     {"cpu_import_only": "FalconMambaForCausalLM",
      "server_args": {"context_length": 2048, "disable_radix_cache": True,
                      "max_running_requests": 64}}),
    ("falcon-mamba-pp2", "tiiuae--falcon-mamba-7b.mlstm.json", 2048,
     {"pp": 2, "cpu_import_only": "FalconMambaForCausalLM"}),
    # No KV layer: --max-total-tokens replaces the context length (_zero_kv_max_tokens).
    ("falcon-mamba-maxtok", "tiiuae--falcon-mamba-7b.mlstm.json", 2048,
     {"page_size": 16, "cpu_import_only": "FalconMambaForCausalLM",
      "server_args": {"context_length": 2048, "max_total_tokens": 1000}}),
    # The Megatron-Bridge dict as it is (no mamba_d_ssm): SGLang's config load rejects it
    # exactly as kvledger's derive does (FalconH1Config.validate_architecture).
    ("falcon-h1-no-d-ssm", "tiiuae--Falcon-H1-0.5B.mbridge.json", 16384, {}),
    ("falcon-h1-tp2", "tiiuae--Falcon-H1-0.5B.mbridge.D_SSM.MODIFIED.json", 16384, {"tp": 2}),
    ("gemma3n-tp2-page64", "unsloth--gemma-3n-E2B-it.json", 32768,
     {"tp": 2, "page_size": 64}),
    ("muse-glimmer-ratio05", "meta-models--Muse-Glimmer-30B.json", 32768,
     {"server_args": {"context_length": 32768, "swa_full_tokens_ratio": 0.5}}),
    # Coverage wave 3: model types that had no case of their own (tests/plan/
    # test_every_type.py walks them). Text-only checkpoints of types seen before only
    # inside a wrapper, plain Mamba-1, Qwen1.5-MoE.
    ("gemma3-text", "google--gemma-3-1b-it.json", 32768, {}),
    # models/mamba.py, like falcon_mamba.py, cannot be imported on CPU (causal_conv1d_fn);
    # a GPU registers MambaForCausalLM (its EntryClass).
    ("mamba", "state-spaces--mamba-130m-hf.mbridge.json", 2048,
     {"cpu_import_only": "MambaForCausalLM"}),
    ("qwen2-moe", "Qwen--Qwen1.5-MoE-A2.7B-Chat.ABRIDGED.CONVERTED.json", 32768, {}),
    # A wrapper's text_config lifted to the top with SGLang's text-only class
    # (tests/oracles/make_configs.py TEXT_ONLY): the path a text-only checkpoint takes.
    ("lfm2-text", "LiquidAI--LFM2.5-VL-1.6B.TEXT.MODIFIED.json", 32768, {}),
    ("kimi-linear-text", "moonshotai--Kimi-K3.TEXT.MODIFIED.json", 32768, {}),
    ("llama4-text", "meta-llama--Llama-4-Scout-17B-16E-Instruct.TEXT.MODIFIED.json", 32768, {}),
    ("qwen3-5-text", "Qwen--Qwen3.5-9B.TEXT.MODIFIED.json", 32768, {}),
    # SGLang's config load rejects a top-level gemma4_text (served.py CONFIG_NOT_LOADED).
    ("gemma4-text", "google--gemma-4-E2B-it.TEXT.MODIFIED.json", 32768, {}),
    # Mamba-Codestral (pure Mamba-2; no max-positions key: 2048, SGLang's fallback).
    ("mamba2", "mistralai--Mamba-Codestral-7B-v0.1.CONVERTED.json", 2048, {}),
    ("mamba2-tp2", "mistralai--Mamba-Codestral-7B-v0.1.CONVERTED.json", 2048, {"tp": 2}),
    ("mamba2-noradix", "mistralai--Mamba-Codestral-7B-v0.1.CONVERTED.json", 2048,
     {"server_args": {"context_length": 2048, "disable_radix_cache": True,
                      "max_running_requests": 8}}),
    # Zyphra's native Zamba2 file given transformers' model_type and architecture: which
    # class SGLang builds for Zamba2ForCausalLM (make_configs.py RETYPED).
    ("zamba2-hf-arch", "Zyphra--Zamba2-2.7B-native.HF-ARCH.MODIFIED.json", 2048, {}),
    # A config naming only PhiModel (the base model, no LM head): what SGLang's loader does.
    ("phi-model", "hf-internal-testing--tiny-random-PhiModel.json", 512, {}),
    # SmolVLM2's config retyped as SmolVLM v1 states it (idefics3; make_configs.py RETYPED).
    ("idefics3", "HuggingFaceTB--SmolVLM2-500M-Video-Instruct.IDEFICS3.MODIFIED.json", 8192, {}),
    # Variants of the wave-3 types: Qwen1.5-MoE's 16 KV heads over TP 4, fp8 KV on Gemma-3-1B's
    # single KV head, text-only LFM2's no_buffer strategy against the radix cache off and
    # 16-token pages (which SGLang refuses: validate_mamba_no_buffer), plain Mamba's full-rank
    # state split over TP 2.
    ("qwen2-moe-tp4", "Qwen--Qwen1.5-MoE-A2.7B-Chat.ABRIDGED.CONVERTED.json", 32768, {"tp": 4}),
    ("gemma3-text-fp8", "google--gemma-3-1b-it.json", 32768, {"kv_cache_dtype": "fp8_e4m3"}),
    ("lfm2-text-noradix", "LiquidAI--LFM2.5-VL-1.6B.TEXT.MODIFIED.json", 32768,
     {"server_args": {"context_length": 32768, "disable_radix_cache": True,
                      "max_running_requests": 64}}),
    ("lfm2-text-page16", "LiquidAI--LFM2.5-VL-1.6B.TEXT.MODIFIED.json", 32768, {"page_size": 16}),
    ("mamba-tp2", "state-spaces--mamba-130m-hf.mbridge.json", 2048,
     {"tp": 2, "cpu_import_only": "MambaForCausalLM"}),
    # persimmon (PersimmonConfig's defaults: ../shared/configs/SOURCES-tfbackend.md);
    # SGLang 0.5.23 registers PersimmonForCausalLM natively (srt/models/persimmon.py).
    ("persimmon", "transformers--PersimmonConfig-defaults.CLASS.json", 16384, {}),
    # Remote-code types kvledger plans from the keys config.json states (derive/remote_code.py):
    # SGLang 0.5.23 registers each class natively (srt/models/internlm2.py, minicpm.py,
    # exaone.py, deepseek.py, orion.py, bailing_moe.py); the configs load as plain
    # PretrainedConfigs of their stated keys (EXAONE through SGLang's own ExaoneConfig).
    ("internlm2", "internlm--internlm2-7b.json", 32768, {"remote_plain": True}),
    ("minicpm", "openbmb--MiniCPM4-8B.json", 32768, {"remote_plain": True}),
    ("minicpm-moe", "openbmb--MiniCPM-MoE-8x2B.mlc.json", 4096, {"remote_plain": True}),
    ("exaone", "LGAI-EXAONE--EXAONE-3.5-7.8B-Instruct.json", 32768, {"remote_plain": True}),
    ("deepseek-v1", "deepseek-ai--deepseek-moe-16b.mlc.json", 4096, {"remote_plain": True}),
    ("orion", "OrionStarAI--Orion-14B.mlc.json", 4096, {"remote_plain": True}),
    ("bailing-moe", "inclusionAI--Ling-lite.HEAD-DIM.MODIFIED.json", 16384,
     {"remote_plain": True}),
    ("minicpm-tp4", "openbmb--MiniCPM4-8B.json", 32768, {"remote_plain": True, "tp": 4}),
]
CASES += [{"id": "cov-" + name, "config": config, "bytes": 16 * GIB, "page_size": 1,
           "server_args": {"context_length": context}, **extra}
          for name, config, context, extra in COVERAGE]


def config_path(name: str) -> Path:
    """A case's config, in ``../shared/configs``."""
    return CONFIGS / name


def _args(case: dict[str, Any], stage: str | None = None,
          extra: dict[str, Any] | None = None) -> list[str]:
    args = [str(config_path(case["config"])), "--kv-pool-bytes", str(case["bytes"]),
            "--tp", str(case.get("tp", 1)), "--kv-cache-dtype",
            case.get("kv_cache_dtype", "auto")]
    if case.get("page_size"):
        args += ["--page-size", str(case["page_size"])]
    if case.get("attention_backend"):
        args += ["--attention-backend", case["attention_backend"]]
    if case.get("cuda_capability"):
        args += ["--emulate-cuda-capability", case["cuda_capability"]]
    for key, value in {**case.get("server_args", {}), **(extra or {})}.items():
        args += ["--server-arg", f"{key}={json.dumps(value)}"]
    if case.get("spec_aux"):
        args.append("--resolve-spec-aux")
    if case.get("load_quant"):
        args.append("--load-quant-config")
    if case.get("remote_plain"):
        args.append("--remote-config-as-plain")
    # The window the real model class reports (gpt-oss: sliding_window - 1), not the config's.
    args.append("--model-class-window")
    # Which class SGLang's loader builds (native, Transformers backend) or why it refuses.
    args.append("--resolve-model-class")
    if stage:
        args += ["--pp-stage", stage]
    return args


def _run(python: str, args: list[str]) -> dict[str, Any]:
    done = subprocess.run([python, str(PLUS), *args], capture_output=True, text=True,
                          timeout=900, check=False)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"oracle printed no JSON: {done.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(lines[-1])
    return out


KEEP = ("sglang_version", "architectures", "attention_arch", "is_hybrid_swa", "context_len",
        "model_dtype", "kv_cache_torch_dtype", "resolved_kv_cache_dtype", "page_size",
        "resolved_attention_backend", "resolved_mamba_radix_cache_strategy",
        "resolved_disable_overlap_schedule", "resolved_chunked_prefill_size",
        "pool_configurator", "cell_size_bytes_per_token", "sliding_window_size",
        "kv_budget_bytes_after_mamba_and_reservations", "max_total_num_tokens",
        "full_max_total_num_tokens", "swa_max_total_num_tokens", "max_running_requests",
        "mamba", "hybrid_swa", "layer_info", "allocated", "kv_cache_quant_algo",
        "model_class_window", "model_class", "model_class_error", "remote_config_stand_in",
        "error", "sglang_error")


def _expected(out: dict[str, Any]) -> dict[str, Any]:
    kept = {k: out.get(k) for k in KEEP if out.get(k) is not None}
    kept["log"] = [ln for ln in out.get("sglang_log", [])
                   if "is allocated" in ln or "SWAKVPool" in ln or "capped" in ln]
    return kept


def make_case(python: str, case: dict[str, Any]) -> dict[str, Any]:
    pp = case.get("pp", 1)
    record: dict[str, Any] = {
        "id": case["id"], "config": case["config"], "kv_pool_bytes": case["bytes"],
        "tp": case.get("tp", 1), "pp": pp, "page_size": case.get("page_size"),
        "kv_cache_dtype": case.get("kv_cache_dtype", "auto"),
        "server_args": case.get("server_args", {}),
        "cuda_capability": case.get("cuda_capability"),
        "attention_backend": case.get("attention_backend"),
        "spec_aux": bool(case.get("spec_aux")), "load_quant": bool(case.get("load_quant")),
        "remote_plain": bool(case.get("remote_plain")),
        **({"cpu_import_only": case["cpu_import_only"]} if case.get("cpu_import_only") else {}),
        "command": "python3 scripts/oracles/sglang_cases.py --only " + case["id"],
    }
    if pp == 1:
        record["expected"] = _expected(_run(python, _args(case)))
        return record
    stages = [_expected(_run(python, _args(case, f"{k}/{pp}"))) for k in range(pp)]
    fewest = min(s["max_total_num_tokens"] for s in stages)
    final = _expected(_run(python, _args(case, f"0/{pp}", {"max_total_tokens": fewest})))
    record["stages"] = stages
    record["expected"] = final
    return record


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", default="/work/oracle/sglang/venv")
    ap.add_argument("--only", nargs="*", default=None, help="case ids to (re)run")
    args = ap.parse_args()
    python = str(Path(args.venv) / "bin" / "python")
    existing: dict[str, dict[str, Any]] = {}
    if OUT.is_file():
        for line in OUT.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                existing[record["id"]] = record
    OUT.parent.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        if args.only is not None and case["id"] not in args.only:
            continue
        if args.only is None and case["id"] in existing:
            continue
        print(f"{case['id']} ...", file=sys.stderr, flush=True)
        existing[case["id"]] = make_case(python, case)
        order = [c["id"] for c in CASES if c["id"] in existing]
        OUT.write_text("".join(json.dumps(existing[i], sort_keys=True) + "\n" for i in order))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
