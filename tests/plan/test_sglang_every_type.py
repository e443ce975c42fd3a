"""Every model type kvledger derives has an SGLang 0.5.23 oracle case, or says why not.

``--engine sglang`` answers for any model kvledger derives; an answer no SGLang case checks is
a guess. This walks every derivable row (``supported_types``: the model types and the rows
reached by architecture) and fails when one is neither exercised by a case in
``tests/oracles/sglang-0.5.23/cases.jsonl`` (``scripts/oracles/sglang_cases.py``) nor listed
in ``WITHOUT_CASE`` with its reason — so a new model type must bring an SGLang case.

A case exercises the row of its config's top level (the architecture's row when
``ARCHITECTURES`` names one, else its ``model_type``) and, for a wrapper, each row down to the
language model (the text config's own ``model_type``, or the wrapper's default inner type),
as derive walks them. The architectures those types carry are walked the same way
(``ARCHITECTURES_WITHOUT_CASE``): SGLang picks its model class from them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.derive import derive_model
from kvledger.derive.model_types import ARCHITECTURES, resolve, supported_types
from kvledger.plan.engines.sglang import SglangLayoutError, plan_sglang
from kvledger.plan.engines.sglang.unchecked import UNCHECKED_MODEL_TYPES
from kvledger.plan.request import PlanRequest
from kvledger.source.resolve import load_source
from oracle_cases import CONFIGS, skip_without_shared
from sglang_cases import UNSCORED, load, model_of

_DEFAULTS = Path(__file__).resolve().parents[1] / "data" / "class-default-configs"
# Derivable rows without an SGLang case; kvledger refuses each under --engine sglang (the
# test below checks it), so no unchecked number is given.
WITHOUT_CASE: dict[str, str] = {
    "llama_eagle3": "an EAGLE-3 draft is served only beside its target: kvledger refuses a "
                    "draft planned alone under --engine sglang, and a separate draft model "
                    "with a target is refused too (layout.py DRAFT_MODEL_METHODS), so there "
                    "is no SGLang answer to check",
    "mpt": "SGLang 0.5.23 registers no MptForCausalLM (nor does vLLM since 0.28): derive "
           "reads MPT for the native layout only, and kvledger refuses it under --engine "
           "sglang",
    "qwen2_5_omni_talker": "Qwen2.5-Omni's talker_config, which only vLLM-Omni's talker stage "
                           "builds (kvledger plan --omni-deploy): SGLang 0.5.23 has no model "
                           "class for it and kvledger refuses it under --engine sglang",
    # The breadth rows, checked against vLLM only: the SGLang layout refuses them as not
    # checked (plan/engines/sglang/unchecked.py) until an SGLang oracle case exists.
    **dict.fromkeys(UNCHECKED_MODEL_TYPES, "a breadth row with no SGLang oracle case yet: "
                                           "refused as not checked (sglang/unchecked.py)"),
}

# The class-default file a breadth row is planned from where it is not ``<type>.json``:
# lfm2_moe's class builds no layer_types, and the GLM-4.5V and Qwen3-Omni classes leave
# head_dim None (their variants state it); DeepSeek-VL2's class writes the language_config
# it reads as text_config (its variant renames it back).
_DEFAULT_FILE = {"lfm2_moe": "lfm2_moe.layer-types", "glm4v_moe": "glm4v_moe.head-dim",
                 "qwen3_omni_moe": "qwen3_omni_moe.head-dim",
                 "deepseek_vl_v2": "deepseek_vl_v2.language-config",
                 "moondream3": "moondream3.config-text"}
# Text configs (and Qwen3-Omni's thinker) inside a wrapper's class defaults: (file, keys down).
_INSIDE = {"aria_text": ("aria", ("text_config",)),
           "glm4v_moe_text": ("glm4v_moe.head-dim", ("text_config",)),
           "glm_ocr_text": ("glm_ocr", ("text_config",)),
           "paddleocr_vl_text": ("paddleocr_vl", ("text_config",)),
           "emu3_text_model": ("emu3", ("text_config",)),
           "qwen3_omni_moe_thinker": ("qwen3_omni_moe.head-dim", ("thinker_config",)),
           "qwen3_omni_moe_text": ("qwen3_omni_moe.head-dim", ("thinker_config", "text_config")),
           "cohere_compass_text": ("cohere_compass", ("text_config",)),
           "cosmos3_edge_text": ("cosmos3_edge", ("text_config",)),
           "gemma4_unified_text": ("gemma4_unified.vision", ("text_config",)),
           "hunyuan_vl_text": ("hunyuan_vl.head-dim", ("text_config",))}


# Levels inside Moondream 3's schema (config -> text), which state no model_type: each given
# its row's type, with the class defaults' empty sections.
_BUILT = {"moondream3_config": {"model_type": "moondream3_config", "text": {}},
          "moondream3_text": {"model_type": "moondream3_text"}}


def _inside(name: str, keys: tuple[str, ...]) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((_DEFAULTS / f"{name}.json").read_text())
    for key in keys:
        config = config[key]
    return config


# What kvledger must answer for each row of WITHOUT_CASE: a model of that row and the phrase
# of its refusal (the bundled catalog's real EAGLE-3 draft config).
REFUSALS: dict[str, tuple[Any, str]] = {
    "llama_eagle3": (str(CONFIGS / "sgl-project--SpecForge-llama3-8B-eagle3.json"),
                     "draft model alone"),
    # MPT-7B's stated sizes (mosaicml/mpt-7b config.json).
    "mpt": ({"model_type": "mpt", "architectures": ["MptForCausalLM"], "d_model": 4096,
             "n_heads": 32, "n_layers": 32, "max_seq_len": 2048},
            "has no model class MptForCausalLM"),
    # Qwen2.5-Omni-7B's talker_config sizes (its config.json).
    "qwen2_5_omni_talker": ({"model_type": "qwen2_5_omni_talker",
                             "architectures": ["Qwen2OmniTalkerForConditionalGeneration"],
                             "hidden_size": 896, "num_hidden_layers": 24,
                             "num_attention_heads": 12, "num_key_value_heads": 4,
                             "head_dim": 128, "max_position_embeddings": 32768},
                            "has no model class Qwen2OmniTalkerForConditionalGeneration"),
    **{t: (str(_DEFAULTS / f"{_DEFAULT_FILE.get(t, t)}.json"),
           "has not been checked against SGLang")
       for t in UNCHECKED_MODEL_TYPES if t not in _INSIDE and t not in _BUILT},
    **{t: (_inside(*_INSIDE[t]), "has not been checked against SGLang") for t in _INSIDE},
    **{t: (_BUILT[t], "has not been checked against SGLang") for t in _BUILT},
}


def _raw(case: dict[str, Any]) -> tuple[dict[str, Any], str]:
    found = model_of(case)
    assert found is not None, case["config"]
    name = found[0]
    if Path(name).is_file():
        raw: dict[str, Any] = json.loads(Path(name).read_text())
        return raw, name
    return load_source(name).config, name


def rows_of(raw: dict[str, Any], model: str) -> list[str]:
    """The table rows a config passes through, top level first (as derive walks them)."""
    archs = raw.get("architectures") or []
    top = next((ARCHITECTURES[a] for a in archs if a in ARCHITECTURES), None) \
        or raw.get("model_type") or derive_model(model).model_type  # Zyphra's native schema
    rows, level, row = [str(top)], raw, resolve(str(top))
    while row.is_wrapper:
        sub = level.get(row.text_key)
        stated = sub.get("model_type") if isinstance(sub, dict) else None
        inner = str(stated or row.inner[0])
        rows.append(inner)
        if isinstance(sub, dict):
            level = sub
        row = resolve(inner)
    return rows


def covered() -> dict[str, list[str]]:
    """Row → the scored SGLang cases that exercise it."""
    out: dict[str, list[str]] = {}
    for case in load():
        if case["id"] in UNSCORED or model_of(case) is None:
            continue
        raw, model = _raw(case)
        for row in rows_of(raw, model):
            out.setdefault(row, []).append(case["id"])
    return out


CASES = load()
pytestmark = pytest.mark.skipif(not CASES, reason="no SGLang oracle cases")


def test_every_derivable_row_has_an_sglang_case_or_a_reason() -> None:
    if any(model_of(c) is None for c in CASES):
        skip_without_shared()
    have = covered()
    missing = [t for t in supported_types() if t not in have and t not in WITHOUT_CASE]
    assert not missing, f"model types with no SGLang oracle case and no reason: {missing}"


def test_the_table_of_rows_without_a_case_is_current() -> None:
    if any(model_of(c) is None for c in CASES):
        skip_without_shared()
    have = covered()
    assert set(WITHOUT_CASE) <= set(supported_types())
    stale = sorted(t for t in WITHOUT_CASE if t in have)
    assert not stale, f"these now have an SGLang case; drop them from WITHOUT_CASE: {stale}"
    assert set(REFUSALS) == set(WITHOUT_CASE)


@pytest.mark.parametrize("row", sorted(WITHOUT_CASE))
def test_rows_without_a_case_are_refused_under_sglang(row: str) -> None:
    model, phrase = REFUSALS[row]
    facts = derive_model(model)
    assert resolve(facts.model_type).name == row or row in ARCHITECTURES.values()
    with pytest.raises(SglangLayoutError, match=phrase):
        plan_sglang(facts, PlanRequest(engine="sglang", block_size=1, max_model_len=4096),
                    16 << 30)


# -- architectures ------------------------------------------------------------------------
# SGLang picks the model class from ``architectures``, so a model type can be served one way
# under one architecture and refused under another. The architectures derivable model types
# carry are those vLLM's registry was asked about
# (tests/oracles/vllm-0.32/vllm-0.32-pp-support.json,
# written by tests/oracles/run_pp_oracle.py from every real config); each must appear in an
# SGLang case's config, or be listed here with why not.
PP_TABLE = (Path(__file__).resolve().parents[1] / "oracles" / "vllm-0.32"
            / "vllm-0.32-pp-support.json")
ARCHITECTURES_WITHOUT_CASE: dict[str, str] = {
    "LlamaForCausalLMEagle3": "an EAGLE-3 draft (row llama_eagle3): see WITHOUT_CASE",
    "Eagle3LlamaForCausalLM": "an EAGLE-3 draft (row llama_eagle3): see WITHOUT_CASE; SGLang "
                              "registers no class of this name either",
    "Ernie4_5_ForCausalLM": "the remote-code ERNIE-4.5 architecture: kvledger's derive refuses "
                            "it for every engine (vLLM 0.32 has no such class; row "
                            "ernie4_5_remote_code), before any layout",
    **dict.fromkeys(
        ("ApertusForCausalLM", "ArceeForCausalLM", "Cohere2ForCausalLM", "ExaoneMoeForCausalLM",
         "Glm4ForCausalLM", "Glm4MoeLiteForCausalLM", "GlmForCausalLM",
         "GraniteMoeSharedForCausalLM", "Jais2ForCausalLM", "Lfm2MoeForCausalLM",
         "OlmoForCausalLM", "SeedOssForCausalLM", "SmolLM3ForCausalLM", "VaultGemmaForCausalLM",
         "FlexOlmoForCausalLM", "HunYuanDenseV1ForCausalLM", "CwmForCausalLM",
         # breadth round 3
         "AXK1ForCausalLM", "AriaForConditionalGeneration",
         "AudioFlamingo3ForConditionalGeneration", "Blip2ForConditionalGeneration",
         "Cohere2MoeForCausalLM", "Cohere2VisionForConditionalGeneration",
         "CohereCompassForConditionalGeneration", "Emu3ForConditionalGeneration",
         "Glm4vMoeForConditionalGeneration", "GlmAsrForConditionalGeneration",
         "GlmOcrForConditionalGeneration", "Granite4VisionForConditionalGeneration",
         "GraniteMoeSWAForCausalLM", "GraniteSWAForCausalLM",
         "GraniteSpeechForConditionalGeneration", "GraniteSpeechPlusForConditionalGeneration",
         "HYV3ForCausalLM", "HyperCLOVAXForCausalLM", "InternVLForConditionalGeneration",
         "LlavaNextVideoForConditionalGeneration", "LlavaOnevisionForConditionalGeneration",
         "LongcatFlashForCausalLM", "MellumForCausalLM", "MiniCPMV4_7ForConditionalGeneration",
         "NemotronH_Omni_Reasoning_V3", "OlmoHybridForCausalLM",
         "PaddleOCRVLForConditionalGeneration", "QianfanOCRForConditionalGeneration",
         "Qwen3OmniMoeForConditionalGeneration", "VibeVoiceAsrForConditionalGeneration",
         # breadth round 4
         "Cosmos3EdgeForConditionalGeneration", "Gemma4UnifiedForConditionalGeneration",
         "HunYuanVLForConditionalGeneration",
         # breadth round 5
         "MossTranscribeDiarizeForConditionalGeneration",
         # breadth round 6
         "BagelForConditionalGeneration", "FunAudioChatForConditionalGeneration",
         "KimiVLForConditionalGeneration", "MiDashengLMModel", "OpenVLAForActionPrediction",
         "Step3TextForCausalLM", "Step3VLForConditionalGeneration", "Step3p5ForCausalLM",
         # breadth round 7 (and round 5's beam / kolibri1, which the 0.32 PP table now names
         # as not registered there)
         "DeepseekVLV2ForCausalLM", "IsaacForConditionalGeneration", "BeamForCausalLM",
         "Kolibri1ForCausalLM", "Moondream3ForCausalLM"),
        "a breadth row's architecture: its model type is refused under --engine sglang as not "
        "checked (see WITHOUT_CASE)"),
    "MptForCausalLM": "row mpt (MPT-7B, ../shared/configs): see WITHOUT_CASE",
}


def test_every_architecture_of_a_derivable_type_has_an_sglang_case_or_a_reason() -> None:
    if any(model_of(c) is None for c in CASES):
        skip_without_shared()
    carried = json.loads(PP_TABLE.read_text())["architectures"]
    named: set[str] = set()
    for case in CASES:
        if case["id"] not in UNSCORED:
            named.update(_raw(case)[0].get("architectures") or [])
    missing = sorted(a for a in carried if a not in named and a not in ARCHITECTURES_WITHOUT_CASE)
    assert not missing, f"architectures with no SGLang oracle case and no reason: {missing}"
    stale = sorted(a for a in ARCHITECTURES_WITHOUT_CASE if a in named or a not in carried)
    assert not stale, f"drop these from ARCHITECTURES_WITHOUT_CASE: {stale}"


# architecture -> the breadth row's class-default config that names it
_BREADTH = {json.loads(p.read_text())["architectures"][0]: str(p)
            for p in sorted(_DEFAULTS.glob("*.json"))
            if json.loads(p.read_text())["model_type"] in UNCHECKED_MODEL_TYPES
            and p.name not in ("lfm2_moe.json", "glm4v_moe.json", "qwen3_omni_moe.json",
                               "deepseek_vl_v2.json", "moondream3.json")}


@pytest.mark.parametrize("arch", sorted(ARCHITECTURES_WITHOUT_CASE))
def test_architectures_without_a_case_are_refused_under_sglang(arch: str) -> None:
    if arch == "Ernie4_5_ForCausalLM":
        with pytest.raises(ValueError, match="Ernie4_5_ForCausalLM"):
            derive_model(str(CONFIGS / "baidu--ERNIE-4.5-0.3B-PT.json"))
        return
    if arch == "MptForCausalLM":  # row mpt's own refusal
        model, phrase = REFUSALS["mpt"]
        with pytest.raises(SglangLayoutError, match=phrase):
            plan_sglang(derive_model(model), PlanRequest(engine="sglang", block_size=1,
                                                         max_model_len=2048), 16 << 30)
        return
    if arch in _BREADTH:  # a breadth row's own class-default config
        facts = derive_model(_BREADTH[arch])
        with pytest.raises(SglangLayoutError, match="has not been checked against SGLang"):
            plan_sglang(facts, PlanRequest(engine="sglang", block_size=1, max_model_len=4096),
                        16 << 30)
        return
    draft = json.loads((CONFIGS / "sgl-project--SpecForge-llama3-8B-eagle3.json").read_text())
    facts = derive_model({**draft, "architectures": [arch]})
    with pytest.raises(SglangLayoutError, match=r"draft model alone|cannot load this model"):
        plan_sglang(facts, PlanRequest(engine="sglang", block_size=1, max_model_len=4096),
                    16 << 30)


def test_a_wrapper_case_covers_its_language_model_row() -> None:
    # Gemma-3-27B's config holds a gemma3_text text_config; Qwen2-VL-2B's states its text
    # keys at the top level (text_inline), where Qwen2VLConfig builds a qwen2_vl_text config.
    gemma = {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
             "text_config": {"model_type": "gemma3_text"}}
    assert rows_of(gemma, "<dict>") == ["gemma3", "gemma3_text"]
    assert rows_of({"model_type": "qwen2_vl", "architectures": ["Qwen2VLForConditionalGeneration"]},
                   "<dict>") == ["qwen2_vl", "qwen2_vl_text"]
    draft = {"model_type": "llama", "architectures": ["LlamaForCausalLMEagle3"]}
    assert rows_of(draft, "<dict>") == ["llama_eagle3"]
