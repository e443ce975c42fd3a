"""The benchmark's questions and their true answers.

Two sources:
- every case of the vLLM oracle (../shared/oracles/vllm-0.32/cases.jsonl, computed by vLLM
  0.32.0's own planner; see the README there): the question is the case's ``inputs`` on the
  case's config (and ``hf_quant_config.json`` where the case had one); the truth is its
  ``expected``;
- every catalog model vLLM could not build (no oracle case): asked one default question
  (8 GiB budget, TP 1, block size "auto" as vLLM defaults, ``max_model_len`` = min(its max
  positions, 32768)); there is no truth,
  so these only show who answers and who refuses.

True answers, per case:
- ``bytes_per_token``: ``bytes_per_block / block_size``, vLLM's KV bytes per token per worker,
  defined only where vLLM made a single KV cache group (uniform layers). With several groups
  (sliding + full, Mamba + attention, self + cross) a block holds only one group's layers and
  "bytes per token" has no single meaning in vLLM's layout, so that metric is not scored there.
- ``kv_cache_tokens``: what vLLM logs as "GPU KV cache size: N tokens".
- ``max_concurrency``: what vLLM logs as "Maximum concurrency for L tokens per request", unrounded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "src" / "kvledger" / "derive" / "catalog"
ORACLE = ROOT.parent / "shared" / "oracles" / "vllm-0.32" / "cases.jsonl"

DEFAULT_BUDGET = 8 * 2**30
DEFAULT_LEN_CAP = 32768


def _read(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict), path
    return data


def _config_file(name: str) -> Path:
    """The bundled copy (what kvledger ships), else ../shared/configs (the same bytes)."""
    bundled = CATALOG / name
    return bundled if bundled.is_file() else ROOT.parent / "shared" / "configs" / name


def model_id(config_file: str) -> str:
    return config_file.removesuffix(".json").replace("--", "/", 1)


def oracle_cases(path: Path = ORACLE) -> list[dict[str, Any]]:
    """One question per oracle line, with its truth."""
    if not path.is_file():
        raise SystemExit(f"no oracle at {path} (the benchmark needs ../shared beside the repo)")
    out = []
    for n, line in enumerate(path.read_text().splitlines()):
        if not line.strip():
            continue
        case = json.loads(line)
        name = case["config"]
        quant = None
        if case.get("hf_quant_config"):
            quant = _read(_config_file(name.removesuffix(".json") + ".hf_quant_config.json"))
        inputs = case["inputs"]
        expected = case["expected"]
        single_group = len(case.get("kv_cache_groups", [])) == 1
        out.append({
            "id": f"case{n:03d}",
            "model": model_id(name),
            "config": _read(_config_file(name)),
            "hf_quant_config": quant,
            "inputs": inputs,
            "max_model_len": inputs["max_model_len"],
            "kv_cache_memory_bytes": inputs["kv_cache_memory_bytes"],
            "kv_cache_dtype": inputs["kv_cache_dtype"],
            "tensor_parallel_size": inputs["tensor_parallel_size"],
            "block_size": inputs["block_size"],
            "truth": {
                "bytes_per_token": (expected["bytes_per_block"] / expected["block_size"]
                                    if single_group else None),
                "kv_cache_tokens": expected["kv_cache_tokens"],
                "max_concurrency": expected["max_concurrency"],
                "vllm_refuses_to_start": expected["vllm_refuses_to_start"],
            },
        })
    return out


def _max_positions(config: dict[str, Any]) -> int | None:
    for where in (config.get("text_config"), config):
        if isinstance(where, dict):
            for key in ("max_position_embeddings", "n_positions", "max_target_positions"):
                if isinstance(where.get(key), int):
                    return int(where[key])
    return None


def catalog_only(covered: set[str]) -> list[dict[str, Any]]:
    """One default question for each bundled model no oracle case covers."""
    out = []
    for path in sorted(CATALOG.glob("*.json")):
        if path.name.endswith(".hf_quant_config.json") or model_id(path.name) in covered:
            continue
        config = _read(path)
        quant_path = path.with_name(path.stem + ".hf_quant_config.json")
        length = min(_max_positions(config) or 4096, DEFAULT_LEN_CAP)
        inputs = {"kv_cache_memory_bytes": DEFAULT_BUDGET, "block_size": "auto",
                  "max_model_len": length, "kv_cache_dtype": "auto", "tensor_parallel_size": 1}
        out.append({
            "id": f"catalog:{model_id(path.name)}",
            "model": model_id(path.name),
            "config": config,
            "hf_quant_config": _read(quant_path) if quant_path.is_file() else None,
            "inputs": inputs,
            "max_model_len": length,
            "kv_cache_memory_bytes": DEFAULT_BUDGET,
            "kv_cache_dtype": "auto",
            "tensor_parallel_size": 1,
            "block_size": "auto",
            "truth": None,
        })
    return out


def all_questions(oracle: Path = ORACLE) -> list[dict[str, Any]]:
    cases = oracle_cases(oracle)
    return cases + catalog_only({c["model"] for c in cases})
