"""Every vLLM oracle case, planned through the library as the release whose oracle answered it
(``--engine vllm==<release>``), must match that release exactly: blocks, tokens, block size,
concurrency, the refusal flag, bytes a block, every KV cache group, and the settings vLLM
resolved.

One test for every release: the cases are the ``*.jsonl`` files under
``tests/oracles/vllm-<release>/`` (the release is the folder's name), plus, for 0.32, the public
sets in ``../shared/oracles/vllm-0.32/`` (``cases.jsonl``, ``coverage-cases.jsonl``). The numbers
are vLLM's own, written by ``tests/oracles/make_vllm_cases.py --release <release>`` (or the
runner named in the folder's README); nothing here is computed by the code under test.

A case's command may emulate another GPU (``--gpu-capability 10.0``: kvledger is asked for a
B200; 8.0: an A100; 9.0 or none: SM90, kvledger's default). A case with
``inputs.weights_quant_stripped`` ran a copy without the weights' quantization (the CPU oracle
has no kernel for it; the block carries no KV scheme): True drops ``quantization_config`` and
the companion, "weights part only" keeps a compressed-tensors block without ``config_groups`` /
``ignore``. Files whose questions the shared tool cannot ask have their own replays
(``OWN_REPLAY``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.plan.engines.vllm import plan_vllm
from oracle_cases import (
    ORACLE_DIR,
    assert_plan_is,
    case_model,
    config_path,
    hf_quant_config,
    real_config,
    request_of,
)

ORACLES = Path(__file__).resolve().parents[1] / "oracles"
GPU_OF = {"9.0": None, "10.0": "B200", "8.0": "A100-80GB"}
# The public 0.32 sets, read from ../shared (not committed here).
SHARED_SETS = {"0.32": (ORACLE_DIR / "cases.jsonl", ORACLE_DIR / "coverage-cases.jsonl")}
# Runners whose questions the shared tool cannot ask, each with its own replay
# (test_vllm_remote.py, test_vllm_tfbackend.py, test_vllm_pp_support.py,
# test_vllm_sentence_len.py, test_vllm_startup.py, test_breadth_oracle.py,
# test_vllm_cache_dtype.py, test_heldout_fixes.py), by the end of the file's stem.
OWN_REPLAY = ("remote", "tfbackend", "pp-startup", "tokenizer-len")
# 0.32's files besides the shared tool's cases: the start-up, refusal, breadth and held-out
# runs are replayed by their own tests, which also check the refusals.
OWN_REPLAY_032 = ("startup", "refusals", "refusals-heldout", "breadth", "heldout")

# Cases kvledger does not match, each marked strict (it fails the day it matches, so the mark
# is removed then): (release, file stem, config[, "file:line" of the question's source]).
KNOWN: dict[tuple[str, ...], str] = {
    # SM100 under --kv-cache-dtype auto: the emulating oracle keeps a bf16 cache —
    # Glm5NextModelConfig.verify_and_update_config (model_executor/models/config.py) returns
    # early when current_platform.is_cuda() is false — where a real B200 stores fp8, as
    # kvledger does (test_engine_releases.py). The explicit fp8 question is exact.
    ("0.33", "vllm-0.33-new-behaviour", "zai-org--GLM-5.3-Flash.json", "EXTRA:7"):
        "GLM-5.3-Flash on SM100 under auto: fp8 from the model hook (off CUDA the "
        "emulation's hook returns early and keeps bf16)",
    # ngram speculation: the 0.33 oracle runs vLLM's V1 model runner (its CPU platform has no
    # Triton) and turns async scheduling off; a GPU runs Model Runner V2, where 0.33 keeps it
    # on. With VLLM_USE_V2_MODEL_RUNNER=1 the oracle gives the GPU's answer, and kvledger
    # matches it (vllm-0.33-new-behaviour.jsonl, EXTRA line 24).
    ("0.33", "vllm-0.33-cases", "mistralai--Mistral-7B-v0.1.json"):
        "ngram: the oracle's V1 runner turns async off, a GPU's Model Runner V2 keeps it",
    # An fp8 MLA cache (ModelOpt fp8 KV under auto) on SM90: vLLM picks FLASHMLA, exactly
    # 64-token kernel blocks (test_mla_backends.py, from source); the CPU oracle has no
    # FlashMLA kernel, falls back to TRITON_MLA and reports 16.
    ("0.33", "vllm-0.33-heldout", "nvidia--Kimi-K2.6-NVFP4.json"):
        "fp8 MLA on SM90: FlashMLA's 64 (source) vs the CPU oracle's TRITON_MLA 16",
}

# Settings vLLM reports differently from kvledger's Resolved where the plan itself is exact
# (test_matches_its_release passes): (release, file stem[, config]) → why; strict.
KNOWN_RESOLVED: dict[tuple[str, ...], str] = {
    ("0.33", "vllm-0.33-dsv4"): "DeepSeek-V4: vLLM names its cache fp8_ds_mla and its "
    "compressor state makes it hybrid, not MLA; kvledger reports the MLA cache it plans",
    ("0.33", "vllm-0.33-new-behaviour", "deepseek-ai--DeepSeek-V4-Flash.json"):
        "DeepSeek-V4: as vllm-0.33-dsv4",
    ("0.32", "vllm-0.32-more", "nvidia--GLM-5.2-NVFP4.json"):
        "fp8 sparse MLA: vLLM names the cache fp8_ds_mla, kvledger fp8",
    ("0.33", "vllm-0.33-more", "nvidia--GLM-5.2-NVFP4.json"):
        "fp8 sparse MLA: vLLM names the cache fp8_ds_mla, kvledger fp8",
    ("0.33", "vllm-0.33-heldout", "nvidia--Kimi-K2.6-NVFP4.json"):
        "fp8 MLA: vLLM names the cache fp8_ds_mla, kvledger fp8",
    ("0.33", "vllm-0.33-heldout", "hf-internal-testing--tiny-random-PhiModel.json"):
        "the oracle ran PhiModel through the Transformers backend's float16 without async "
        "scheduling; the plan is exact",
}


def _release(folder: Path) -> str:
    return folder.name.removeprefix("vllm-")


def _replayed(release: str, path: Path) -> bool:
    stem = path.stem.removeprefix(f"vllm-{release}-")
    if stem.endswith(OWN_REPLAY):
        return False
    return not (release == "0.32" and stem in OWN_REPLAY_032)


def _files() -> list[tuple[str, Path]]:
    out = [(release, path) for release, paths in SHARED_SETS.items() for path in paths
           if path.is_file()]
    for folder in sorted(ORACLES.glob("vllm-*/")):
        release = _release(folder)
        out += [(release, p) for p in sorted(folder.glob("*.jsonl")) if _replayed(release, p)]
    return out


def _cases(*, resolved: bool = False) -> list[Any]:
    """Every replayed case as (release, case); ``resolved``: marked for the settings test
    (``KNOWN_RESOLVED``), leaving out the cases whose plan is known to differ."""
    out = []
    for release, path in _files():
        shared = "" if path.parent.parent == ORACLES else "shared-"
        for i, line in enumerate(path.read_text().splitlines()):
            if not line.strip():
                continue
            case = json.loads(line)
            if "expected" not in case or "tp" in case["inputs"]:
                continue  # a failed run (its error is the line), or a PP/other runner's
            source = case.get("source", {})
            why = KNOWN.get((release, path.stem, case["config"])) or KNOWN.get(
                (release, path.stem, case["config"],
                 f"{source.get('file')}:{source.get('line')}"))
            if resolved:
                if why:
                    continue  # its plan is known to differ already
                why = KNOWN_RESOLVED.get((release, path.stem)) or KNOWN_RESOLVED.get(
                    (release, path.stem, case["config"]))
            marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
            out.append(pytest.param(
                release, case, marks=marks,
                id=f"{release}-{shared}{path.stem}-{i:03d}-{case['config'].removesuffix('.json')}"))
    return out


CASES = _cases()
RESOLVED_CASES = _cases(resolved=True)


def _capability(case: dict[str, Any]) -> str:
    found = re.search(r"--gpu-capability (\S+)", case.get("command", ""))
    return found[1] if found else "9.0"


def _as_asked(case: dict[str, Any]) -> tuple[str | dict[str, Any], dict[str, Any] | None]:
    """(model, companion) as the oracle's vLLM saw them (module docstring)."""
    stripped = case["inputs"].get("weights_quant_stripped")
    if not stripped:
        return case_model(case), hf_quant_config(case)
    name = case["config"]
    raw = (json.loads(config_path(case).read_text()) if name.startswith("class-default-configs/")
           else real_config(name))
    if stripped == "weights part only":
        qc = raw["quantization_config"]
        raw["quantization_config"] = {k: v for k, v in qc.items()
                                      if k not in ("config_groups", "ignore")}
        return raw, hf_quant_config(case)
    raw.pop("quantization_config", None)
    return raw, None


_PLANS: dict[int, Any] = {}


def _plan(release: str, case: dict[str, Any]) -> Any:
    # One plan per case for both tests (planning DeepSeek-scale models is not free).
    key = id(case)
    if key not in _PLANS:
        model, companion = _as_asked(case)
        request = request_of(case["inputs"], engine=f"vllm=={release}",
                             gpu=GPU_OF[_capability(case)])
        _PLANS[key] = plan_vllm(derive_model(model, hf_quant_config=companion), request,
                                case["inputs"]["kv_cache_memory_bytes"])
    return _PLANS[key]


@pytest.mark.parametrize(("release", "case"), CASES)
def test_matches_its_release(release: str, case: dict[str, Any]) -> None:
    assert_plan_is(_plan(release, case), case)


@pytest.mark.parametrize(("release", "case"), RESOLVED_CASES)
def test_resolved_settings_match_its_release(release: str, case: dict[str, Any]) -> None:
    """The settings vLLM resolved (the KV cache dtype among them), computed from the config
    and options, never read from the case."""
    plan = _plan(release, case)
    want = case["vllm_resolved"]
    mine = plan.resolved.as_vllm_resolved()
    mine["mamba_block_size"] = plan.mamba_block_size
    mine["mamba_page_size_padded"] = plan.mamba_page_size_padded
    mine["tp_kv_heads_per_rank"] = plan.tp_kv_heads_per_rank
    assert {k: v for k, v in mine.items() if k in want} == {k: want[k] for k in mine
                                                            if k in want}


def test_every_release_has_cases() -> None:
    from kvledger.plan.engines.vllm.releases import RELEASES

    replayed = {release for release, _ in _files()}
    assert {v.rsplit(".", 1)[0] for v in RELEASES} <= replayed


def test_the_034_block_auto_cases_are_replayed() -> None:
    # vLLM 0.34's own answers with --block-size auto (CacheConfig.DEFAULT_BLOCK_SIZE 64).
    auto = [c for r, c in (p.values for p in CASES) if r == "0.34"
            and c["inputs"]["block_size"] == "auto"]
    assert len(auto) >= 14
    assert {c["expected"]["block_size"] for c in auto} >= {64, 4160}
