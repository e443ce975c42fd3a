"""vLLM's launch options that ``plan`` / ``fit`` size (``--engine vllm`` only), under vLLM's
names and defaults: LoRA slots, online quantization, weight offload, the CPU KV tier. The
rules are ``kvledger.plan.engines.vllm.launch`` (imported only when one is given)."""

from __future__ import annotations

import math

from kvledger.cli.args import int_at_least
from kvledger.cli.errors import UsageError

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    import argparse
    from typing import Any

# dest → the value meaning "not given".
UNSET: dict[str, Any] = {
    "enable_lora": False, "max_loras": None, "max_lora_rank": None, "lora_dtype": None,
    "fully_sharded_loras": False, "max_cpu_loras": None, "quantization": None,
    "cpu_offload_gb": None, "kv_offloading_size": None, "kv_offloading_backend": None,
    "kv_transfer_config": None, "draft_config": None, "language_model_only": False,
    "mm_encoder_tp_mode": None, "attention_backend": None, "enable_extensible_kv_cache": None,
    "rocm_aiter_mla": False, "mamba_cache_dtype": None, "mamba_ssm_cache_dtype": None,
    "decode_context_parallel_size": None, "cp_kv_cache_interleave_size": None,
    "allow_deprecated_quantization": False, "enable_eplb": False, "eplb_config": None,
}


def _gib(text: str) -> float:
    """A GiB amount as vLLM reads it (a float >= 0)."""
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of GiB, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of GiB >= 0, got {text!r}")
    return value


def add_vllm_launch_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("vLLM launch options (--engine vllm; vLLM's names and defaults)")
    g.add_argument("--enable-lora", action="store_true",
                   help="reserve LoRA slots: a 'lora' budget line")
    g.add_argument("--max-loras", type=int_at_least(1), default=None, metavar="N",
                   help="LoRA slots on the GPU (default 1)")
    g.add_argument("--max-lora-rank", type=int_at_least(1), default=None, metavar="R",
                   help="rank of each slot (default 16)")
    g.add_argument("--lora-dtype", default=None, choices=("auto", "float16", "bfloat16"),
                   help="default auto: the model dtype")
    g.add_argument("--fully-sharded-loras", action="store_true",
                   help="shard the LoRA A stacks' rank (and row-parallel B) over TP ranks")
    g.add_argument("--max-cpu-loras", type=int_at_least(1), default=None, metavar="N",
                   help="adapters cached in CPU memory (no GPU bytes; >= --max-loras)")
    g.add_argument("--quantization", default=None, metavar="METHOD",
                   help="online quantization of an unquantized checkpoint (fp8, "
                   "fp8_per_tensor, fp8_per_block)")
    g.add_argument("--cpu-offload-gb", type=_gib, default=None, metavar="GIB",
                   help="weights per GPU moved to CPU memory: a 'cpu_offload' budget line")
    g.add_argument("--kv-offloading-size", type=_gib, default=None, metavar="GIB",
                   help="CPU KV tier over all ranks: its capacity in tokens (kv_offload)")
    g.add_argument("--kv-offloading-backend", default=None, choices=("native", "lmcache"),
                   help="default native (only native is sized)")
    g.add_argument("--kv-transfer-config", default=None, metavar="JSON",
                   help="a KV connector as vLLM takes it (NixlConnector, MooncakeConnector, "
                   "LMCacheConnectorV1, OffloadingConnector, MultiConnector): its GPU and host "
                   "bytes and tiers (kv_transfer)")
    g.add_argument("--language-model-only", action="store_true",
                   help="vLLM builds no vision / audio tower and profiles no encoder: the "
                   "towers leave the weights line")
    g.add_argument("--mm-encoder-tp-mode", default=None, choices=("weights", "data"),
                   help="data: each TP rank holds the whole multimodal encoder (models "
                   "that support it; default weights)")
    g.add_argument("--attention-backend", default=None, metavar="NAME",
                   help="the attention backend vLLM is told to use (AttentionBackendEnum name, "
                   "e.g. FLASHMLA, CUTLASS_MLA): its block sizes, or vLLM's refusal; with "
                   "--engine sglang, SGLang's (triton / flashinfer, aiter on ROCm, trtllm_mha "
                   "on Blackwell): its page and ROCm memory factor")
    import argparse

    g.add_argument("--enable-extensible-kv-cache", action=argparse.BooleanOptionalAction,
                   default=None, help="the releases that have it size the KV cache after "
                   "warm-up with gpu_memory_utilization 1.0 (their default on CUDA/ROCm); "
                   "--no-...: the earlier profile-run budget")
    g.add_argument("--rocm-aiter-mla", action="store_true", default=False,
                   help="on a ROCm GPU, MLA runs AITER's ROCM_AITER_MLA (a line's "
                   "VLLM_ROCM_USE_AITER=1): any block size")
    g.add_argument("--mamba-cache-dtype", default=None,
                   choices=("auto", "float32", "float16", "bfloat16"),
                   help="recurrent layers' conv state dtype (auto: the model dtype), and "
                   "their SSM state's too unless --mamba-ssm-cache-dtype says otherwise")
    g.add_argument("--mamba-ssm-cache-dtype", default=None,
                   choices=("auto", "float32", "float16", "bfloat16"),
                   help="recurrent layers' SSM / temporal state dtype (auto: vLLM's choice "
                   "for the architecture, else the conv state's)")
    g.add_argument("--decode-context-parallel-size", "--dcp", "-dcp", type=int_at_least(1),
                   default=None, metavar="N",
                   help="vLLM's decode context parallelism: the KV cache's tokens are spread "
                   "over N of the TP ranks, so a block holds block-size x N tokens of a "
                   "request (default 1)")
    g.add_argument("--cp-kv-cache-interleave-size", type=int_at_least(1), default=None,
                   metavar="I", help="with --dcp, tokens a rank stores before the next "
                   "(default 1; must divide the block)")
    g.add_argument("--allow-deprecated-quantization", action="store_true",
                   help="load a checkpoint of a deprecated quantization method (fbgemm_fp8, "
                   "fp_quant), which vLLM otherwise refuses at start-up")
    g.add_argument("--enable-eplb", action="store_true",
                   help="expert-parallel load balancing (with --enable-expert-parallel): the "
                   "redundant experts and the rebalancing buffer on each GPU")
    g.add_argument("--eplb-config", default=None, metavar="JSON",
                   help="vLLM's EPLBConfig as JSON (num_redundant_experts, window_size, …; "
                   "default: the fewest redundant experts EP allows, a 1,000-step window)")
    g.add_argument("--draft-config", default=None, metavar="CONFIG_JSON",
                   help="the separate draft model's config.json, directory or Hub id "
                   "(--speculative-method "
                   "draft_model / eagle / eagle3 / dflash / dspark): a shorter draft lowers "
                   "max_model_len under vLLM's Model Runner V2; a DFlash / DSpark draft's "
                   "layers and weights are planned from it")


def vllm_launch(ns: argparse.Namespace) -> Any:
    """The request's ``vllm_launch`` (None when no launch option was given)."""
    given = {k: getattr(ns, k) for k, unset in UNSET.items()
             if getattr(ns, k, unset) is not unset and getattr(ns, k, unset) != unset}
    if ns.engine.partition("==")[0] == "sglang":
        # SGLang has --attention-backend too, and sizes an EAGLE draft from --draft-config:
        # plan_options._sglang_options reads both.
        given.pop("attention_backend", None)
        given.pop("draft_config", None)
    if not given:
        return None
    flags = ", ".join("--" + k.replace("_", "-") for k in given)
    if ns.engine.partition("==")[0] != "vllm":
        raise UsageError(f"kvledger: error: {flags} apply to --engine vllm only",
                         hint="plan without them, or with --engine vllm")
    lora_sizes = {"max_loras", "max_lora_rank", "lora_dtype", "fully_sharded_loras",
                  "max_cpu_loras"} & set(given)
    if lora_sizes and not given.get("enable_lora"):
        # vLLM reads them only with --enable-lora (EngineArgs.create_lora_config).
        given = {k: v for k, v in given.items() if k not in lora_sizes}
        if not given:
            return None
    if given.get("cpu_offload_gb") == 0:
        del given["cpu_offload_gb"]
    if "draft_config" in given:
        given.update(_draft(given.pop("draft_config")))
    from kvledger.plan.engines.vllm.launch import VllmLaunch

    try:
        return VllmLaunch(**given)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"kvledger: error: {exc}") from None


def _draft(path: str) -> dict[str, Any]:
    """``--draft-config``: the draft's length and RoPE types (``draft_length.draft_fields``)."""
    import json

    from kvledger.errors import KvledgerError
    from kvledger.plan.engines.vllm.draft_length import draft_fields

    config = read_draft_config(path)
    try:
        return {**draft_fields(config), "draft_config": json.dumps(config, sort_keys=True)}
    except (KvledgerError, TypeError, ValueError) as exc:
        raise UsageError(f"kvledger: error: --draft-config {path}: {exc}") from None


def read_draft_config(path: str) -> dict[str, Any]:
    """``--draft-config``'s config: a config.json, a model directory, or a Hub id read as a
    model id is (catalog, the local HF cache, then the Hub unless offline:
    ``source.resolve``); a UsageError in one line when it cannot be read."""
    import json
    from pathlib import Path

    from kvledger.errors import KvledgerError

    config: Any
    where = Path(path).expanduser()
    if where.is_dir():
        where = where / "config.json"
    from kvledger.source.resolve import is_repo_id

    if not where.exists() and is_repo_id(path):
        from kvledger.source.resolve import load_source

        try:
            config = load_source(path).config
        except KvledgerError as exc:
            raise UsageError(f"kvledger: error: --draft-config {path}: {exc}",
                             hint=getattr(exc, "hint", "") or "give the draft's config.json"
                             ) from None
    else:
        try:
            config = json.loads(where.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise UsageError(f"kvledger: error: --draft-config {path}: cannot read it as JSON: "
                             f"{exc}") from None
    if not isinstance(config, dict):
        raise UsageError(f"kvledger: error: --draft-config {path}: not a JSON object")
    return config
