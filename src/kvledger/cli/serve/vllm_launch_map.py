"""A ``vllm serve`` line's LoRA, offload and KV-offload flags → kvledger's own (the same
names: ``cli/vllm_launch_options.py``). ``--quantization`` is checked against the model
(``checks.py``)."""

from __future__ import annotations

import json
from typing import Any

from kvledger.cli.serve.translation import Translation

# vllm serve dest → kvledger plan flag (a switch when the value is True/False).
_LORA = {
    "max_loras": "--max-loras", "max_lora_rank": "--max-lora-rank",
    "lora_dtype": "--lora-dtype", "max_cpu_loras": "--max-cpu-loras",
}


def map_launch(values: dict[str, Any], out: Translation,
               env: dict[str, str] | None = None) -> set[str]:
    """Put the flags kvledger sizes into ``out.options``; the dests it took."""
    taken: set[str] = set()
    if values.get("kv_transfer_config") is not None:
        taken.add("kv_transfer_config")
        out.options["--kv-transfer-config"] = _transfer_json(values["kv_transfer_config"],
                                                             env or {}, out)
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
    taken |= {"language_model_only", "mm_encoder_tp_mode"}
    if values.get("language_model_only"):
        out.options["--language-model-only"] = None
    mode = values.get("mm_encoder_tp_mode")
    if mode is not None and mode != "weights":
        out.options["--mm-encoder-tp-mode"] = str(mode)
        if (values.get("pipeline_parallel_size") or 1) > 1:
            out.refused.append("--mm-encoder-tp-mode data with pipeline parallelism: which "
                               "stages hold the encoder is not modelled; drop one")
    extensible = values.get("enable_extensible_kv_cache")
    if extensible is not None:  # vLLM 0.34 (VllmLaunch.enable_extensible_kv_cache)
        taken.add("enable_extensible_kv_cache")
        # True matters with a KV connector that would turn the mode off (NIXL without an
        # IMEX channel: connectors.py extensible_cache_off).
        out.options["--enable-extensible-kv-cache" if extensible
                    else "--no-enable-extensible-kv-cache"] = None
    for dest in ("mamba_cache_dtype", "mamba_ssm_cache_dtype"):
        if values.get(dest) is not None:  # config/cache.py; resolve.py and convert.py
            taken.add(dest)
            flag = "--" + dest.replace("_", "-")
            if values[dest] == "auto":
                out.ignore("default", flag)
            else:
                out.options[flag] = str(values[dest])
    # -dcp (ParallelConfig.decode_context_parallel_size; plan/engines/vllm/dcp.py). The
    # interleave is read only under DCP (VllmConfig.validate_block_size).
    taken |= {"decode_context_parallel_size", "cp_kv_cache_interleave_size"}
    dcp = values.get("decode_context_parallel_size")
    interleave = values.get("cp_kv_cache_interleave_size")
    if dcp is not None and dcp != 1:
        out.options["--decode-context-parallel-size"] = str(dcp)
        if interleave is not None and interleave != 1:
            out.options["--cp-kv-cache-interleave-size"] = str(interleave)
    elif interleave is not None and interleave != 1:
        out.notes.append(f"--cp-kv-cache-interleave-size {interleave} without -dcp: vLLM "
                         "reads it only under decode context parallelism")
    # --enable-eplb / --eplb-config (ParallelConfig; plan/engines/vllm/eplb.py). The scan has
    # read --eplb-config's JSON (scan.py: an object, or vLLM's own refusal); a config without
    # --enable-eplb is refused by vLLM only when it sets num_redundant_experts
    # (config/parallel.py).
    taken |= {"enable_eplb", "eplb_config"}
    eplb = values.get("eplb_config")
    if values.get("enable_eplb"):
        out.options["--enable-eplb"] = None
        if eplb is not None:
            out.options["--eplb-config"] = json.dumps(eplb)
    elif isinstance(eplb, dict):
        if eplb.get("num_redundant_experts") not in (None, 0):
            out.refused.append(
                f"vLLM refuses to start: num_redundant_experts is set to "
                f"{eplb['num_redundant_experts']} but EPLB is not enabled. Either enable "
                "EPLB or unset num_redundant_experts. (config/parallel.py)")
        else:
            out.notes.append("--eplb-config without --enable-eplb: vLLM does not balance "
                             "experts, so it changes no memory")
    size = values.get("kv_offloading_size")
    if size is not None:
        taken |= {"kv_offloading_size", "kv_offloading_backend"}
        out.options["--kv-offloading-size"] = f"{size:g}"
        backend = values.get("kv_offloading_backend")
        if backend is not None:
            out.options["--kv-offloading-backend"] = str(backend)
    return taken


def _transfer_json(config: Any, env: dict[str, str], out: Translation) -> str:
    """``--kv-transfer-config`` as JSON text; for LMCacheConnectorV1, the line's ``LMCACHE_*``
    variables become the ``lmcache.*`` extra-config keys they set (a key the config gives
    wins, as in LMCache's adapter: ``connectors_lmcache.py``)."""
    import json

    if not isinstance(config, dict):
        return str(config)
    if config.get("kv_connector") == "LMCacheConnectorV1":
        from kvledger.plan.engines.vllm.connectors_lmcache import ENV

        extra = dict(config.get("kv_connector_extra_config") or {})
        for name, key in ENV.items():
            if name in env:
                extra.setdefault(key, env[name])
                if name in out.env_ignored:
                    out.env_ignored.remove(name)
        if extra:
            config = {**config, "kv_connector_extra_config": extra}
    return json.dumps(config, sort_keys=True)
