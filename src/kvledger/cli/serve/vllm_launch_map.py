"""A ``vllm serve`` line's LoRA, offload and KV-offload flags → kvledger's own (the same
names: ``cli/vllm_launch_options.py``). ``--quantization`` is checked against the model
(``checks.py``)."""

from __future__ import annotations

from typing import Any

from kvledger.cli.serve.translation import Translation

# vllm serve dest → kvledger plan flag (a switch when the value is True/False).
_LORA = {
    "max_loras": "--max-loras", "max_lora_rank": "--max-lora-rank",
    "lora_dtype": "--lora-dtype", "max_cpu_loras": "--max-cpu-loras",
}


def map_launch(values: dict[str, Any], out: Translation) -> set[str]:
    """Put the flags kvledger sizes into ``out.options``; the dests it took."""
    taken: set[str] = set()
    if values.get("enable_lora"):
        out.options["--enable-lora"] = None
        taken |= {"enable_lora", *_LORA, "fully_sharded_loras"}
        for dest, flag in _LORA.items():
            if values.get(dest) is not None:
                out.options[flag] = str(values[dest])
        if values.get("fully_sharded_loras"):
            out.options["--fully-sharded-loras"] = None
        if values.get("enable_expert_parallel"):
            out.refused.append("--enable-lora with --enable-expert-parallel: each rank's share "
                               "of the experts' LoRA stacks is not modelled")
        if values.get("lora_target_modules"):
            # LoRAConfig.target_modules: only these module suffixes are wrapped.
            out.refused.append("--lora-target-modules restricts the modules LoRA wraps, which "
                               "kvledger does not model (it sizes every supported module)")
    gb = values.get("cpu_offload_gb")
    if gb is not None:
        taken.add("cpu_offload_gb")
        if gb:
            out.options["--cpu-offload-gb"] = f"{gb:g}"
    extensible = values.get("enable_extensible_kv_cache")
    if extensible is not None:  # vLLM 0.34 (VllmLaunch.enable_extensible_kv_cache)
        taken.add("enable_extensible_kv_cache")
        if extensible is False:
            out.options["--no-enable-extensible-kv-cache"] = None
    size = values.get("kv_offloading_size")
    if size is not None:
        taken |= {"kv_offloading_size", "kv_offloading_backend"}
        out.options["--kv-offloading-size"] = f"{size:g}"
        backend = values.get("kv_offloading_backend")
        if backend is not None:
            out.options["--kv-offloading-backend"] = str(backend)
    return taken
