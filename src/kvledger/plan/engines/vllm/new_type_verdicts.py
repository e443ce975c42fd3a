"""vLLM 0.32 model classes that stop at construction on configs kvledger can derive.

vLLM builds its model class from ``architectures``, and the class reads the config object's
attributes in ``__init__``. When an attribute it reads has no value in the file and none in the
config class, the engine stops at start-up with the ``AttributeError`` quoted below (seen on
the oracle: ``tests/oracles/vllm-0.32/vllm-0.32-breadth.jsonl``); kvledger refuses the same configs
with
that reason instead of planning a cache vLLM never builds. Two kinds, each a table:

- ``WRAPPER_NEEDS``: a multimodal wrapper architecture named on a flat text config (a text
  model's ``config.json`` whose ``architectures`` was left as the wrapper's, or copied from
  it). The wrapper's ``__init__`` reads its sub-config before anything else; the text config
  class has none.
- ``READ_WITHOUT_DEFAULT``: a key a model file reads unconditionally for which the config class
  declares no default, so a config that omits it stops vLLM (a config class's own defaults,
  e.g., ``tests/data/class-default-configs/glm4_moe_lite.json``). A key may sit in a
  sub-config (``thinker_config.vision_config.image_size``: a dotted path from the level); the
  error then names that sub-config's class (``SUB_CONFIG_CLASSES``).
- ``NONE_NOT_ACCEPTED``: a key whose class default is None and which the model class uses as
  a number.
- ``CHECKED_AT_INIT``: a key the model class checks for itself (``hasattr``) and raises its own
  error without.
- ``ASSERTED_AT_INIT``: a flag the model class asserts true, whose class default is false.
- ``STRING_PARSED``: a key the model class parses as a comma-separated string
  (``value.strip().split(",")``), so a config holding it as a list stops vLLM.

A table is keyed by the model type of the level the model class reads: the top level, or for
a wrapper the language model's config (Glm4vMoeTextConfig inside GLM-4.5V's). The same lines
read the same in vLLM 0.33 (model_executor/models/hy_v3.py, longcat_flash.py, glm4_moe.py).
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False  # plain data at import: pp_support.py reads NEW_PP_SUPPORT from here
if TYPE_CHECKING:
    from typing import Any

    from kvledger.derive.layers import ModelFacts
    from kvledger.plan.engines.vllm.releases.profile import VllmRelease

# architecture -> (the sub-config key its __init__ reads first, where)
WRAPPER_NEEDS: Mapping[str, tuple[str, str]] = {
    "Qwen3_5ForConditionalGeneration": (
        "vision_config",
        "vllm/model_executor/models/qwen3_5.py Qwen3_5ForConditionalGeneration.__init__"),
    "Qwen3_5MoeForConditionalGeneration": (
        "vision_config",
        "vllm/model_executor/models/qwen3_5.py Qwen3_5MoeForConditionalGeneration.__init__"),
}

# model_type -> (the keys read, in the order the model class reads them, the class default
# of the key that makes vLLM read them — None when they are read always — as (key, value) or
# None, where)
READ_WITHOUT_DEFAULT: Mapping[str, tuple[tuple[str, ...], tuple[str, object] | None, str]] = {
    # `config.n_routed_experts is not None and layer_idx >= config.first_k_dense_replace`:
    # Glm4MoeLiteConfig (transformers 5.19) has n_routed_experts 64 and no
    # first_k_dense_replace.
    "glm4_moe_lite": (
        ("first_k_dense_replace",), ("n_routed_experts", 64),
        "vllm/model_executor/models/glm4_moe_lite.py Glm4MoeLiteDecoderLayer.__init__"),
    # `config.mla_scale_q_lora`, then `config.mla_scale_kv_lora`: LongcatFlashConfig
    # (transformers 5.19) has neither (oracle: tests/oracles/vllm-0.32/vllm-0.32-breadth.jsonl).
    "longcat_flash": (
        ("mla_scale_q_lora", "mla_scale_kv_lora"), None,
        "vllm/model_executor/models/longcat_flash.py scale_mla_lora_norms_on_load"),
    # `use_qk_norm=config.use_qk_norm` (Glm4MoeDecoderLayer.__init__, built by glm4_1v.py
    # for GLM-4.5V): Glm4vMoeTextConfig has no use_qk_norm (oracle: vllm-0.32-breadth.jsonl).
    "glm4v_moe_text": (
        ("use_qk_norm",), None,
        "vllm/model_executor/models/glm4_moe.py Glm4MoeDecoderLayer.__init__"),
    # `config.force_image_size or config.vision_config.image_size` (InternVLChatModel.__init__,
    # the base of vLLM 0.33's QianfanOCRForConditionalGeneration): QianfanOCRConfig
    # (transformers 5.19/5.20) has no force_image_size (0.33 oracle:
    # tests/oracles/vllm-0.33/vllm-0.33-new-behaviour.jsonl).
    "qianfan_ocr": (
        ("force_image_size",), None,
        "vllm/model_executor/models/internvl.py InternVLChatModel.__init__"),
    # `patch_size = config.patch_size` (NemotronH_Nano_VL_V2.__init__, which vLLM 0.33 builds
    # for the Nemotron-H Omni architectures): the class defaults keep patch_size only inside
    # vision_config (0.33 oracle: vllm-0.33-new-behaviour.jsonl).
    "nemotron_h_omni": (
        ("patch_size",), None,
        "vllm/model_executor/models/nano_nemotron_vl.py NemotronH_Nano_VL_V2.__init__"),
    # `self.use_moe_router_bias = config.use_moe_router_bias` (Step3p5MoEFeedForward, built on
    # every MoE layer): transformers' Step3p7TextConfig, which vLLM 0.33 loads step3p5 with,
    # has no use_moe_router_bias (0.33 oracle: tests/oracles/vllm-0.33/
    # vllm-0.33-breadth.jsonl).
    "step3p5": (
        ("use_moe_router_bias",), None,
        "vllm/model_executor/models/step3p5.py Step3p5MoEFeedForward.__init__"),
    # `self.image_size = vision_config.image_size`, then `vision_config.apply_vit_abs_pos_embed`
    # (Qwen3Omni_VisionTransformer.__init__, the thinker's vision tower, in vLLM 0.32 and 0.33
    # alike): transformers' Qwen3OmniMoeVisionEncoderConfig declares neither (0.33 oracle:
    # tests/oracles/vllm-0.33/vllm-0.33-new-behaviour.jsonl, the class defaults with head_dim).
    "qwen3_omni_moe": (
        ("thinker_config.vision_config.image_size",
         "thinker_config.vision_config.apply_vit_abs_pos_embed"), None,
        "vllm/model_executor/models/qwen3_omni_moe_thinker.py "
        "Qwen3Omni_VisionTransformer.__init__"),
}

# model_type of a sub-config -> its config class (what vLLM's AttributeError names), for the
# sub-config levels READ_WITHOUT_DEFAULT reaches (transformers 5.19 / 5.20 class names).
SUB_CONFIG_CLASSES: Mapping[str, str] = {
    "qwen3_omni_moe_vision_encoder": "Qwen3OmniMoeVisionEncoderConfig",
}

# model_type -> (key, vLLM's error, where): HYV3DecoderLayer.__init__ checks
# `hasattr(config, "first_k_dense_replace")` and raises without it; HYV3Config (transformers
# 5.19) has none (its mlp_layer_types say the same thing; oracle: vllm-0.32-breadth.jsonl).
CHECKED_AT_INIT: Mapping[str, tuple[str, str, str]] = {
    "hy_v3": (
        "first_k_dense_replace",
        "ValueError: first_k_dense_replace not exist,please check config",
        "vllm/model_executor/models/hy_v3.py HYV3DecoderLayer.__init__"),
}

# model_type -> (key, the error, where): a key whose config-class default is None, which the
# model class vLLM builds uses as a number, so a config that leaves it None (or omits it)
# stops vLLM. HunYuanDenseV1Config's head_dim defaults to None; vLLM 0.32's Transformers
# backend builds transformers' own HunYuanDenseV1Attention, whose __init__ computes
# head_dim ** -0.5 (oracle: tests/oracles/vllm-0.32/vllm-0.32-breadth.jsonl).
NONE_NOT_ACCEPTED: Mapping[str, tuple[str, str, str]] = {
    # FunAudioChatDiscreteEncoder.__init__ (funaudiochat.py) runs int(config.pad_token_id) on
    # the audio config, which vLLM's FunAudioChatAudioEncoderConfig leaves None (0.33 oracle:
    # tests/oracles/vllm-0.33/vllm-0.33-breadth.jsonl). A dotted key is a sub-config's.
    "funaudiochat": (
        "audio_config.pad_token_id",
        "TypeError: int() argument must be a string, a bytes-like object or a real number, "
        "not 'NoneType'",
        "vllm/model_executor/models/funaudiochat.py FunAudioChatDiscreteEncoder.__init__"),
    # step3_vl.py Step3VLForConditionalGeneration.__init__ builds its language model with
    # init_vllm_registered_model(hf_config=config.text_config) and no architectures=;
    # VllmConfig.with_hf_config (vllm/config/vllm.py) then takes text_config.architectures
    # (None in its class), or transformers' causal-LM class of its model_type, which
    # step3_text has none of, and the registry stops (oracle:
    # tests/oracles/vllm-0.33/vllm-0.33-breadth.jsonl).
    "step3_text": (
        "architectures", "ValueError: No model architectures are specified",
        "vllm/model_executor/models/registry.py ModelRegistry.resolve_model_cls, from "
        "step3_vl.py Step3VLForConditionalGeneration.__init__"),
    "hunyuan_v1_dense": (
        "head_dim", "TypeError: unsupported operand type(s) for ** or pow(): 'NoneType' and "
        "'float'",
        "transformers/models/hunyuan_v1_dense/modeling_hunyuan_v1_dense.py "
        "HunYuanDenseV1Attention.__init__, built by vLLM's Transformers backend"),
    # HunYuanVLTextConfig's head_dim defaults to None too, and the Transformers backend builds
    # transformers' HunYuanVLDenseV1Attention on it: getattr(config, "head_dim", ...) returns
    # the None the class holds, then self.head_dim ** -0.5 (oracle: vllm-0.32-breadth.jsonl).
    "hunyuan_vl_text": (
        "head_dim", "TypeError: unsupported operand type(s) for ** or pow(): 'NoneType' and "
        "'float'",
        "transformers/models/hunyuan_vl/modeling_hunyuan_vl.py "
        "HunYuanVLDenseV1Attention.__init__, built by vLLM's Transformers backend"),
    # Gemma4UnifiedConfig's vision_config defaults to None, and the model class checks
    # `if config.vision_config is None: raise ValueError(...)` before it builds the language
    # model (oracle: vllm-0.32-breadth.jsonl).
    "gemma4_unified": (
        "vision_config", "ValueError: Gemma4 Unified requires a vision configuration",
        "vllm/model_executor/models/gemma4_unified.py "
        "Gemma4UnifiedForConditionalGeneration.__init__"),
}


# model_type -> (flag, its config-class default, what vLLM asserts, where, why the flag is
# what the model class sees). CohereCompassForCausalLM.__init__ asserts
# config.tie_word_embeddings on the text config it is given, and VllmConfig.with_hf_config
# (config/vllm.py, 0.32 and 0.33 alike) first copies the top level's tie_word_embeddings onto
# the text config of a multimodal model; CohereCompassConfig's default is False (its text
# config's True is overwritten), so its class defaults stop vLLM with a bare AssertionError
# (0.33 oracle: vllm-0.33-new-behaviour.jsonl, with the traceback).
ASSERTED_AT_INIT: Mapping[str, tuple[str, bool, str, str, str]] = {
    "cohere_compass": (
        "tie_word_embeddings", False, "AssertionError: assert config.tie_word_embeddings",
        "vllm/model_executor/models/cohere_compass.py CohereCompassForCausalLM.__init__",
        "VllmConfig.with_hf_config copies the top level's tie_word_embeddings onto "
        "text_config"),
}


def _missing(level: Mapping[str, Any], path: str) -> tuple[str, str] | None:
    """(the key, the config class that lacks it) when ``path`` (``key``, or ``sub.key`` into
    sub-configs) is not stated in ``level``, else None. The class of a sub-config is
    ``SUB_CONFIG_CLASSES``'s for its model_type; "" for ``level`` itself (the caller names
    it). A sub-config the file omits is built from its class, which holds no such key."""
    *subs, key = path.split(".")
    here: Mapping[str, Any] = level
    for sub in subs:
        found = here.get(sub)
        here = found if isinstance(found, Mapping) else {}
    if key in here:
        return None
    owner = SUB_CONFIG_CLASSES.get(str(here.get("model_type")), "PretrainedConfig") \
        if subs else ""
    return key, owner


# model_type -> (the key, vLLM's error on a non-string value, where)
STRING_PARSED: Mapping[str, tuple[str, str, str]] = {
    # vLLM's own Step3TextConfig (transformers_utils/configs/step3_vl.py) defaults
    # moe_layers_enum to a tuple, while Step3TextDecoderLayer.__init__ (step3_text.py) runs
    # `[int(i) for i in moe_layers_enum.strip().split(",")]`; Step3's checkpoints write the
    # string (oracle: tests/oracles/vllm-0.33/vllm-0.33-breadth.jsonl).
    "step3_text": (
        "moe_layers_enum", "AttributeError: 'list' object has no attribute 'strip'",
        "vllm/model_executor/models/step3_text.py Step3TextDecoderLayer.__init__"),
}


def _levels(facts: ModelFacts) -> list[tuple[str, dict[str, Any]]]:
    """(model type, config as the file states it) of the top level and, for a wrapper, of the
    language model's config."""
    levels = [(facts.model_type, facts.config)]
    text = facts.language_config()
    inner = text.get("model_type")
    if isinstance(inner, str) and inner != facts.model_type:
        levels.append((inner, text))
    return levels


def _dotted(level: Mapping[str, Any], key: str) -> Any:
    """``level[key]``, where ``a.b`` is key ``b`` of the sub-config ``a``; None when absent."""
    value: Any = level
    for part in key.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _config_class(model_type: str) -> str:
    """The config class vLLM holds for ``model_type`` (the row's, when it is a class name)."""
    from kvledger.derive.model_types import MODEL_TYPES, resolve

    if model_type in MODEL_TYPES:
        name = resolve(model_type).config_class
        if name.isidentifier():
            return name
    return "PretrainedConfig"


def construction_refusal(facts: ModelFacts,
                         release: VllmRelease) -> tuple[str, str] | None:
    """(vLLM's error, where it is raised) when vLLM 0.32's model class for ``facts`` stops in
    ``__init__``, else None."""
    config = facts.config
    for architecture in facts.architectures[:1]:  # vLLM builds the first one it can resolve
        needed = WRAPPER_NEEDS.get(architecture)
        if needed is not None and needed[0] not in config:
            key, where = needed
            return (f"AttributeError: '{_config_class(facts.model_type)}' object has no "
                    f"attribute '{key}' (architectures names the multimodal wrapper "
                    f"{architecture}, but the config is a flat text config without {key})",
                    where)
    filled = release.class_fills_construction_keys
    for model_type, level in _levels(facts):
        if model_type in filled:
            continue
        unread = READ_WITHOUT_DEFAULT.get(model_type)
        if unread is not None:
            keys, gate, where = unread
            gated = gate is None or level.get(gate[0], gate[1]) is not None
            missing = [(path, *m) for path in keys if (m := _missing(level, path))]
            if gated and missing:
                path, key, owner = missing[0]
                return (f"AttributeError: '{owner or _config_class(model_type)}' object has no "
                        f"attribute '{key}' (the config omits {path} and the config class has "
                        "no default)", where)
        asserted = ASSERTED_AT_INIT.get(model_type)
        if asserted is not None and not level.get(asserted[0], asserted[1]):
            flag, default, error, where, why = asserted
            return (f"{error} (the config leaves {flag} {level.get(flag, default)}, and {why})",
                    where)
        checked = CHECKED_AT_INIT.get(model_type)
        if checked is not None and checked[0] not in level:
            key, error, where = checked
            return (f"{error} (the config omits {key} and the config class has no default)",
                    where)
        unset = NONE_NOT_ACCEPTED.get(model_type)
        if unset is not None and _dotted(level, unset[0]) is None:
            key, error, where = unset
            return (f"{error} (the config leaves {key} None, its config class's default)",
                    where)
        parsed = STRING_PARSED.get(model_type)
        if parsed is not None and not isinstance(level.get(parsed[0], ""), str):
            key, error, where = parsed
            return (f"{error} (the config's {key} is not a string; the model class parses "
                    "a comma-separated one)", where)
    return None


# Pipeline-parallel support of the breadth rows' architectures, as vLLM 0.32's registry
# answered (tests/oracles/run_pp_oracle.py table → vllm-0.32-pp-support.json); merged into
# pp_support.PP_SUPPORT.
NEW_PP_SUPPORT: Mapping[str, tuple[bool | None, str]] = {
    "ApertusForCausalLM": (
        True, "vllm/model_executor/models/apertus.py ApertusForCausalLM"),
    "ArceeForCausalLM": (
        True, "vllm/model_executor/models/transformers/ TransformersForCausalLM"),
    "Cohere2ForCausalLM": (
        True, "vllm/model_executor/models/commandr.py CohereForCausalLM"),
    "ExaoneMoeForCausalLM": (
        True, "vllm/model_executor/models/exaone_moe.py ExaoneMoeForCausalLM"),
    "Glm4ForCausalLM": (
        True, "vllm/model_executor/models/glm4.py Glm4ForCausalLM"),
    "Glm4MoeLiteForCausalLM": (
        True, "vllm/model_executor/models/glm4_moe_lite.py Glm4MoeLiteForCausalLM"),
    "GlmForCausalLM": (
        True, "vllm/model_executor/models/transformers/ TransformersForCausalLM"),
    "GraniteMoeSharedForCausalLM": (
        True, "vllm/model_executor/models/granitemoeshared.py GraniteMoeSharedForCausalLM"),
    "Jais2ForCausalLM": (
        True, "vllm/model_executor/models/transformers/ TransformersForCausalLM"),
    "Lfm2MoeForCausalLM": (
        True, "vllm/model_executor/models/lfm2_moe.py Lfm2MoeForCausalLM"),
    "OlmoForCausalLM": (
        True, "vllm/model_executor/models/transformers/ TransformersForCausalLM"),
    "SeedOssForCausalLM": (
        True, "vllm/model_executor/models/transformers/ TransformersForCausalLM"),
    "SmolLM3ForCausalLM": (
        True, "vllm/model_executor/models/transformers/ TransformersForCausalLM"),
    "VaultGemmaForCausalLM": (
        True, "vllm/model_executor/models/transformers/ TransformersForCausalLM"),
    "CwmForCausalLM": (
        True, "vllm/model_executor/models/transformers/ TransformersForCausalLM"),
    "FlexOlmoForCausalLM": (
        True, "vllm/model_executor/models/transformers/ TransformersMoEForCausalLM"),
    "HunYuanDenseV1ForCausalLM": (
        True, "vllm/model_executor/models/transformers/ TransformersForCausalLM"),
    # breadth round 3 (run_pp_oracle.py table, after the rows were added)
    "AXK1ForCausalLM": (
        True, "vllm/model_executor/models/AXK1.py AXK1ForCausalLM"),
    "AriaForConditionalGeneration": (
        False, "vllm/model_executor/models/aria.py AriaForConditionalGeneration"),
    "AudioFlamingo3ForConditionalGeneration": (
        True,
        "vllm/model_executor/models/audioflamingo3.py AudioFlamingo3ForConditionalGeneration"),
    "Blip2ForConditionalGeneration": (
        True, "vllm/model_executor/models/blip2.py Blip2ForConditionalGeneration"),
    "Cohere2MoeForCausalLM": (
        True, "vllm/model_executor/models/cohere2_moe.py Cohere2MoeForCausalLM"),
    "Cohere2VisionForConditionalGeneration": (
        True, "vllm/model_executor/models/cohere2_vision.py Cohere2VisionForConditionalGeneration"),
    "CohereCompassForConditionalGeneration": (
        True, "vllm/model_executor/models/cohere_compass.py CohereCompassForConditionalGeneration"),
    "Emu3ForConditionalGeneration": (
        True, "vllm/model_executor/models/transformers/ TransformersMultiModalForCausalLM"),
    "Glm4vMoeForConditionalGeneration": (
        True, "vllm/model_executor/models/glm4_1v.py Glm4vMoeForConditionalGeneration"),
    "GlmAsrForConditionalGeneration": (
        True, "vllm/model_executor/models/glmasr.py GlmAsrForConditionalGeneration"),
    "GlmOcrForConditionalGeneration": (
        True, "vllm/model_executor/models/glm_ocr.py GlmOcrForConditionalGeneration"),
    "Granite4VisionForConditionalGeneration": (
        True,
        "vllm/model_executor/models/granite4_vision.py Granite4VisionForConditionalGeneration"),
    "GraniteMoeSWAForCausalLM": (
        True, "vllm/model_executor/models/granitemoeshared.py GraniteMoeSharedForCausalLM"),
    "GraniteSWAForCausalLM": (
        True, "vllm/model_executor/models/granite.py GraniteForCausalLM"),
    "GraniteSpeechForConditionalGeneration": (
        True, "vllm/model_executor/models/granite_speech.py GraniteSpeechForConditionalGeneration"),
    "GraniteSpeechPlusForConditionalGeneration": (
        True,
        "vllm/model_executor/models/granite_speech_plus.py "
        "GraniteSpeechPlusForConditionalGeneration"),
    "HYV3ForCausalLM": (
        True, "vllm/model_executor/models/hy_v3.py HYV3ForCausalLM"),
    "HyperCLOVAXForCausalLM": (
        True, "vllm/model_executor/models/hyperclovax.py HyperCLOVAXForCausalLM"),
    "InternVLForConditionalGeneration": (
        True, "vllm/model_executor/models/interns1.py InternS1ForConditionalGeneration"),
    "LlavaNextVideoForConditionalGeneration": (
        True,
        "vllm/model_executor/models/llava_next_video.py LlavaNextVideoForConditionalGeneration"),
    "LlavaOnevisionForConditionalGeneration": (
        True,
        "vllm/model_executor/models/llava_onevision.py LlavaOnevisionForConditionalGeneration"),
    "LongcatFlashForCausalLM": (
        True, "vllm/model_executor/models/longcat_flash.py LongcatFlashForCausalLM"),
    "MellumForCausalLM": (
        True, "vllm/model_executor/models/transformers/ TransformersMoEForCausalLM"),
    "MiniCPMV4_7ForConditionalGeneration": (
        True, "vllm/model_executor/models/minicpmv4_7.py MiniCPMV4_7ForConditionalGeneration"),
    # mosaicml--mpt-7b.json, new in ../shared/configs: vLLM 0.32 registers no MPT class and
    # its Transformers backend does not take it (the table says so).
    "MptForCausalLM": (None, ""),
    "NemotronH_Omni_Reasoning_V3": (
        False, "vllm/model_executor/models/nano_nemotron_vl.py NemotronH_Nano_VL_V2"),
    "OlmoHybridForCausalLM": (
        True, "vllm/model_executor/models/olmo_hybrid.py OlmoHybridForCausalLM"),
    "PaddleOCRVLForConditionalGeneration": (
        False, "vllm/model_executor/models/paddleocr_vl.py PaddleOCRVLForConditionalGeneration"),
    "QianfanOCRForConditionalGeneration": (
        True, "vllm/model_executor/models/qianfan_ocr.py QianfanOCRForConditionalGeneration"),
    "Qwen3OmniMoeForConditionalGeneration": (
        True,
        "vllm/model_executor/models/qwen3_omni_moe_thinker.py "
        "Qwen3OmniMoeThinkerForConditionalGeneration"),
    "VibeVoiceAsrForConditionalGeneration": (
        True, "vllm/model_executor/models/transformers/ TransformersMultiModalForCausalLM"),
    # breadth round 4 (run_pp_oracle.py table, after the rows were added)
    "Cosmos3EdgeForConditionalGeneration": (
        True, "vllm/model_executor/models/cosmos3_edge.py Cosmos3EdgeForConditionalGeneration"),
    "Gemma4UnifiedForConditionalGeneration": (
        True,
        "vllm/model_executor/models/gemma4_unified.py Gemma4UnifiedForConditionalGeneration"),
    "HunYuanVLForConditionalGeneration": (
        True, "vllm/model_executor/models/transformers/ TransformersMultiModalForCausalLM"),
    # breadth round 5 (run_pp_oracle.py table, after the row was added)
    "MossTranscribeDiarizeForConditionalGeneration": (
        True, "vllm/model_executor/models/moss_transcribe_diarize.py "
              "MossTranscribeDiarizeForConditionalGeneration"),
    # breadth round 6: vLLM's own config classes (run_pp_oracle.py table, after the rows were
    # added; UltravoxModel's line dropped since, its row refused). MiDashengLMModel: the 0.32
    # registry could not import midashenglm.py (it imports torchaudio, which the oracle venv
    # lacks), so its answer is None, not a verdict.
    "BagelForConditionalGeneration": (
        True, "vllm/model_executor/models/bagel.py BagelForConditionalGeneration"),
    "FunAudioChatForConditionalGeneration": (
        True, "vllm/model_executor/models/funaudiochat.py FunAudioChatForConditionalGeneration"),
    "KimiVLForConditionalGeneration": (
        True, "vllm/model_executor/models/kimi_vl.py KimiVLForConditionalGeneration"),
    "MiDashengLMModel": (None, "vllm/model_executor/models/midashenglm.py MiDashengLMModel"),
    "OpenVLAForActionPrediction": (
        True, "vllm/model_executor/models/openvla.py OpenVLAForActionPrediction"),
    "Step3TextForCausalLM": (
        True, "vllm/model_executor/models/step3_text.py Step3TextForCausalLM"),
    "Step3VLForConditionalGeneration": (
        True, "vllm/model_executor/models/step3_vl.py Step3VLForConditionalGeneration"),
    "Step3p5ForCausalLM": (True, "vllm/model_executor/models/step3p5.py Step3p5ForCausalLM"),
    # breadth round 7 (run_pp_oracle.py table, after the rows were added)
    "DeepseekVLV2ForCausalLM": (
        True, "vllm/model_executor/models/deepseek_vl2.py DeepseekVLV2ForCausalLM"),
    "IsaacForConditionalGeneration": (
        True, "vllm/model_executor/models/isaac.py IsaacForConditionalGeneration"),
    "Moondream3ForCausalLM": (
        True, "vllm/model_executor/models/moondream3.py Moondream3ForCausalLM"),
    # ... and that 0.32 table, regenerated, now names the 0.33-only rows' architectures too:
    # 0.32's registry has neither (0.33's profile adds them, pp_support_added)
    "BeamForCausalLM": (None, ""),
    "Kolibri1ForCausalLM": (None, ""),
}
