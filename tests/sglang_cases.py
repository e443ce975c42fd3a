"""The SGLang 0.5.23 oracle cases committed in this repo, and how each is asked of kvledger.

``tests/oracles/sglang-0.5.23/cases.jsonl`` was made by ``scripts/oracles/sglang_cases.py``
(SGLang's own sizing code, run on CPU; see that script). Each case names a config under
``../shared/configs/``; a case on a catalog model's file asks the catalog id instead (the
catalog reproduces that file's facts: tests/source/test_catalog_facts.py), so those cases run
without ``../shared``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kvledger.derive import derive_model
from kvledger.plan.engines.sglang import SglangOptions, plan_sglang
from kvledger.plan.engines.sglang.layout import SglangPlan
from kvledger.plan.request import PlanRequest
from kvledger.source.resolve import load_source
from oracle_cases import CONFIGS, bundled_id

HERE = Path(__file__).resolve().parent
CASES_FILE = HERE / "oracles" / "sglang-0.5.23" / "cases.jsonl"

# SGLang server-argument names → SglangOptions fields (the same names).
OPTION_KEYS = ("max_running_requests", "max_total_tokens", "swa_full_tokens_ratio",
               "mamba_full_memory_ratio", "disable_radix_cache", "disable_overlap_schedule",
               "chunked_prefill_size")


GIB16 = 16 << 30  # the pool the hand-worked SGLang tests size

# Cases where the CPU oracle stopped with an error kvledger does not reproduce either way (not
# scored; test_oracle.py lists each so none goes unnoticed, and a case here covers no
# model type in test_every_type.py).
UNSCORED = frozenset({
    # SGLang rejects NVFP4 prefill on trtllm_mla without an FP8 workspace (a backend check the
    # CPU oracle reaches); kvledger's MLA nvfp4 cell is worked by hand in test_sglang_rules.
    "deepseek-v31-nvfp4-kv",
})


def catalog_config(model_id: str) -> dict[str, Any]:
    """The bundled catalog's config of ``model_id`` as a fresh dict (safe to edit)."""
    return load_source(model_id).config


def repo_config(name: str) -> dict[str, Any]:
    """A real config (``../shared/configs/name``) as a fresh dict."""
    data: dict[str, Any] = json.loads((CONFIGS / name).read_text())
    return data


def plan_repo_config(name: str, context: int) -> SglangPlan:
    """SGLang's plan for a coverage config derived from its path, on a 16 GiB pool with the
    oracle's CPU page of 1 token and ``context`` as the context length."""
    facts = derive_model(str(CONFIGS / name))
    return plan_sglang(facts, PlanRequest(engine="sglang", block_size=1,
                                          max_model_len=context), GIB16)


def load() -> list[dict[str, Any]]:
    if not CASES_FILE.is_file():
        return []
    return [json.loads(line) for line in CASES_FILE.read_text().splitlines() if line.strip()]


def model_of(case: dict[str, Any]) -> tuple[str, dict[str, Any] | None] | None:
    """(what to pass to derive_model, its hf_quant_config) or None when the config is absent.

    The catalog id when the file is a catalog model's (the id also brings its
    hf_quant_config); otherwise the shared file, with its ``.hf_quant_config.json`` sibling.
    """
    name = case["config"]
    model_id = bundled_id(name)
    if model_id is not None:
        return model_id, None
    path = CONFIGS / name
    if not path.is_file():
        return None
    quant_path = path.with_name(name.removesuffix(".json") + ".hf_quant_config.json")
    quant = json.loads(quant_path.read_text()) if quant_path.is_file() else None
    return str(path), quant


def request_of(case: dict[str, Any]) -> tuple[PlanRequest, SglangOptions, str]:
    """The case's question as kvledger's request, SGLang options and platform."""
    server = case.get("server_args", {})
    options = SglangOptions(**{k: server[k] for k in OPTION_KEYS if k in server})
    spec = server.get("speculative_algorithm")
    request = PlanRequest(
        engine="sglang",
        kv_cache_memory_bytes=case["kv_pool_bytes"],
        block_size=case.get("page_size") or 1,  # the oracle ran with SGLang's CPU page 1
        max_model_len=server.get("context_length"),
        kv_cache_dtype=case.get("kv_cache_dtype", "auto"),
        tensor_parallel_size=case.get("tp", 1),
        pipeline_parallel_size=case.get("pp", 1),
        num_speculative_tokens=server.get("speculative_num_steps", 0) if spec else 0,
        speculative_method="mtp" if spec else None,
        sglang=options,
    )
    capability = case.get("cuda_capability") or "9.0"
    platform = "sm" + capability.replace(".", "")
    return request, options, platform
