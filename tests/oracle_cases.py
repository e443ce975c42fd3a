"""Where the vLLM 0.32 oracle cases and the shared configs live, and one loader for them.

CI clones the repo with ``shared/`` beside it (``../shared``); tests that need the oracle skip
when it is absent rather than fail on a machine that lacks it.

Two files, one format (``../shared/oracles/README.md``): ``cases.jsonl`` (the first cases) and
``coverage-cases.jsonl`` (newer checkpoints; a case may carry ``hf_quant_config: true`` — the
companion ``<stem>.hf_quant_config.json`` sat beside config.json — and
``inputs.weights_quant_stripped: true`` — the oracle ran a copy without quantization_config,
whose numbers kvledger must give for the verbatim file). Cases this repo adds, with the
command that made each, live in ``tests/oracles/``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared"
ORACLE_DIR = SHARED / "oracles" / "vllm-0.32"
ORACLE_FILE = ORACLE_DIR / "cases.jsonl"
COVERAGE_FILE = ORACLE_DIR / "coverage-cases.jsonl"
CONFIGS = SHARED / "configs"  # every real config a test reads (origins: SOURCES*.md there)
# The one reason every test that needs ../shared skips with when it is absent (tests/conftest.py
# counts them in the summary by it): the marker below, ``skip_without_shared``, and the
# suite-wide catch of a missing ../shared file in tests/conftest.py all give it.
SHARED_MISSING = "needs ../shared (the team's real configs and oracle cases) beside the repo"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=SHARED_MISSING)
# Cases this repository ran the oracle for (their configs are in ../shared/configs).
LOCAL_DIR = Path(__file__).resolve().parent / "oracles"
LOCAL_FILE = LOCAL_DIR / "vllm-0.32" / "vllm-0.32-cases.jsonl"


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_cases() -> list[dict[str, Any]]:
    """Every case of ``cases.jsonl`` in file order ([] when the oracle is not beside the repo)."""
    return _read(ORACLE_FILE)


def load_coverage_cases() -> list[dict[str, Any]]:
    """Every case of ``coverage-cases.jsonl`` in file order."""
    return _read(COVERAGE_FILE)


def load_local_cases() -> list[dict[str, Any]]:
    """The cases committed in this repository: ``tests/oracles/vllm-0.32/vllm-0.32-cases.jsonl`` and
    every model-type group's ``tests/oracles/vllm-0.32/vllm-0.32-coverage-<group>.jsonl``."""
    cases = _read(LOCAL_FILE)
    for path in sorted((LOCAL_DIR / "vllm-0.32").glob("vllm-0.32-coverage-*.jsonl")):
        cases.extend(_read(path))
    return cases


def shared_text(name: str) -> str:
    """``../shared/configs/<name>`` (a SOURCES table) as text, or "" without ../shared: read
    at collection, where a missing file would stop the whole run. A test that walks it is
    marked ``needs_shared``."""
    path = CONFIGS / name
    return path.read_text() if SHARED.is_dir() else ""


def skip_without_shared() -> None:
    """Skip the running test (with ``SHARED_MISSING``) when ../shared is not beside the repo."""
    if not SHARED.is_dir():
        pytest.skip(SHARED_MISSING)


def bundled_id(name: str) -> str | None:
    """The catalog id whose values were read from ``../shared/configs/<name>`` (its row's
    ``source.file``), or None. The catalog reproduces that file's facts and plans
    (tests/source/test_catalog_facts.py), so a case on it runs without ../shared."""
    from kvledger.source.catalog import catalog_rows

    for row in catalog_rows():
        if row["source"]["file"] == name:
            listed: str = row["ids"][0]
            return listed
    return None


def real_config(name: str) -> dict[str, Any]:
    """``../shared/configs/<name>`` as a fresh dict — or, for a catalog model's file, the
    catalog's values of it (what kvledger reads), so that the test runs without ../shared."""
    model_id = bundled_id(name)
    if model_id is not None:
        from kvledger.source.resolve import load_source

        return load_source(model_id).config
    loaded: dict[str, Any] = json.loads((CONFIGS / name).read_text())
    return loaded


CLASS_DEFAULT_CONFIGS = Path(__file__).resolve().parent / "data" / "class-default-configs"


def config_path(case: dict[str, Any]) -> Path:
    """The config a case ran: ``class-default-configs/X`` is the project's own class-default
    config (tests/data/, made by a committed script), any other name is ../shared/configs'."""
    name = str(case["config"])
    if name.startswith("class-default-configs/"):
        return CLASS_DEFAULT_CONFIGS / name.removeprefix("class-default-configs/")
    return CONFIGS / name


def _bundled(case: dict[str, Any]) -> tuple[str, dict[str, Any] | None] | None:
    """(catalog id, its hf_quant_config) when the case's config is a catalog model's file and
    the case saw the companion exactly when the catalog has one; else None."""
    model_id = bundled_id(case["config"])
    if model_id is None:
        return None
    from kvledger.source.catalog import catalog_entry

    found = catalog_entry(model_id)
    assert found is not None
    quant = found[2]
    return (model_id, quant) if (quant is not None) == bool(case.get("hf_quant_config")) \
        else None


def hf_quant_config(case: dict[str, Any]) -> dict[str, Any] | None:
    """The companion hf_quant_config.json the oracle saw beside config.json, if any."""
    if not case.get("hf_quant_config"):
        return None
    bundled = _bundled(case)
    if bundled is not None:
        return bundled[1]
    path = config_path(case)
    companion = path.with_name(path.name.removesuffix(".json") + ".hf_quant_config.json")
    loaded: dict[str, Any] = json.loads(companion.read_text())
    return loaded


def case_model(case: dict[str, Any]) -> str | dict[str, Any]:
    """What to hand ``derive_model`` so it sees exactly what the oracle's vLLM saw.

    A catalog model's id when the case ran its file (and its companion exactly when the
    catalog has one): then the case runs without ../shared. Otherwise a config path brings
    its ``<stem>.hf_quant_config.json`` companion along (as a model directory does); a case
    that ran without the companion (``hf_quant_config`` false) gets the config as a dict,
    which has none.
    """
    bundled = _bundled(case)
    if bundled is not None:
        return bundled[0]
    path = config_path(case)
    if case.get("hf_quant_config"):
        return str(path)
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def request_of(inputs: dict[str, Any], engine: str = "vllm==0.32",
               gpu: str | None = None) -> Any:
    """The ``PlanRequest`` of an oracle run's ``inputs`` (vLLM's resolved values), planned as
    ``engine`` (the release whose oracle answered) on ``gpu`` (None: SM90 assumed)."""
    from kvledger.plan.request import PlanRequest

    block = inputs["block_size"]
    return PlanRequest(
        engine=engine, gpu=gpu, kv_cache_memory_bytes=inputs["kv_cache_memory_bytes"],
        block_size=None if block == "auto" else int(block),
        max_model_len=inputs["max_model_len"], kv_cache_dtype=inputs["kv_cache_dtype"],
        tensor_parallel_size=inputs["tensor_parallel_size"],
        max_num_seqs=inputs["max_num_seqs"],
        max_num_batched_tokens=inputs["max_num_batched_tokens"],
        enable_prefix_caching=inputs["enable_prefix_caching"],
        num_speculative_tokens=inputs.get("num_speculative_tokens", 0),
        speculative_method=inputs.get("speculative_method"),
    )


def assert_plan_is(plan: Any, case: dict[str, Any]) -> None:
    """A vLLM-layout plan equals the oracle run's: blocks, tokens, block size, concurrency,
    the refusal flag, bytes a block, and every KV cache group's spec, layers, block size, page
    and per-request bytes."""
    want = case["expected"]
    got = (plan.num_blocks, plan.kv_cache_tokens, plan.block_size,
           round(plan.max_concurrency, 2), plan.vllm_refuses_to_start, plan.bytes_per_block)
    assert got == (want["num_blocks"], want["kv_cache_tokens"], want["block_size"],
                   round(want["max_concurrency"], 2), want["vllm_refuses_to_start"],
                   want["bytes_per_block"])
    groups = [(g.spec, g.num_layers, g.block_size, g.page_size_bytes,
               g.max_memory_usage_bytes_per_request) for g in plan.groups]
    assert groups == [(g["spec"], g["num_layers"], g["block_size"], g["page_size_bytes"],
                       g["max_memory_usage_bytes_per_request"])
                      for g in case["kv_cache_groups"]]
