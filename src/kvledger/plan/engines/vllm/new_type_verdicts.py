"""vLLM 0.32 model classes that stop at construction on configs kvledger can derive.

vLLM builds its model class from ``architectures``, and the class reads the config object's
attributes in ``__init__``. When an attribute it reads has no value in the file and none in the
config class, the engine stops at start-up with the ``AttributeError`` quoted below (seen on
the oracle: ``tests/oracles/vllm-0.32-breadth.jsonl``); kvledger refuses the same configs with
that reason instead of planning a cache vLLM never builds. Two kinds, each a table:

- ``WRAPPER_NEEDS``: a multimodal wrapper architecture named on a flat text config (a text
  model's ``config.json`` whose ``architectures`` was left as the wrapper's, or copied from
  it). The wrapper's ``__init__`` reads its sub-config before anything else; the text config
  class has none.
- ``READ_WITHOUT_DEFAULT``: a key a model file reads unconditionally for which the config class
  declares no default, so a config that omits it stops vLLM (a config class's own defaults,
  e.g., ``tests/data/class-default-configs/glm4_moe_lite.json``).
- ``NONE_NOT_ACCEPTED``: a key whose class default is None and which the model class uses as
  a number.
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False  # plain data at import: pp_support.py reads NEW_PP_SUPPORT from here
if TYPE_CHECKING:
    from kvledger.derive.layers import ModelFacts

# architecture -> (the sub-config key its __init__ reads first, where)
WRAPPER_NEEDS: Mapping[str, tuple[str, str]] = {
    "Qwen3_5ForConditionalGeneration": (
        "vision_config",
        "vllm/model_executor/models/qwen3_5.py Qwen3_5ForConditionalGeneration.__init__"),
    "Qwen3_5MoeForConditionalGeneration": (
        "vision_config",
        "vllm/model_executor/models/qwen3_5.py Qwen3_5MoeForConditionalGeneration.__init__"),
}

# model_type -> (key, the class default of the key that makes vLLM read it — None when it is
# read always — as (key, value) or None, where)
READ_WITHOUT_DEFAULT: Mapping[str, tuple[str, tuple[str, object] | None, str]] = {
    # `config.n_routed_experts is not None and layer_idx >= config.first_k_dense_replace`:
    # Glm4MoeLiteConfig (transformers 5.19) has n_routed_experts 64 and no
    # first_k_dense_replace.
    "glm4_moe_lite": (
        "first_k_dense_replace", ("n_routed_experts", 64),
        "vllm/model_executor/models/glm4_moe_lite.py Glm4MoeLiteDecoderLayer.__init__"),
}

# model_type -> (key, the error, where): a key whose config-class default is None, which the
# model class vLLM builds uses as a number, so a config that leaves it None (or omits it)
# stops vLLM. HunYuanDenseV1Config's head_dim defaults to None; vLLM 0.32's Transformers
# backend builds transformers' own HunYuanDenseV1Attention, whose __init__ computes
# head_dim ** -0.5 (oracle: tests/oracles/vllm-0.32-breadth.jsonl).
NONE_NOT_ACCEPTED: Mapping[str, tuple[str, str, str]] = {
    "hunyuan_v1_dense": (
        "head_dim", "TypeError: unsupported operand type(s) for ** or pow(): 'NoneType' and "
        "'float'",
        "transformers/models/hunyuan_v1_dense/modeling_hunyuan_v1_dense.py "
        "HunYuanDenseV1Attention.__init__, built by vLLM's Transformers backend"),
}


def _config_class(model_type: str) -> str:
    """The config class vLLM holds for ``model_type`` (the row's, when it is a class name)."""
    from kvledger.derive.model_types import MODEL_TYPES, resolve

    if model_type in MODEL_TYPES:
        name = resolve(model_type).config_class
        if name.isidentifier():
            return name
    return "PretrainedConfig"


def construction_refusal(facts: ModelFacts) -> tuple[str, str] | None:
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
    unread = READ_WITHOUT_DEFAULT.get(facts.model_type)
    if unread is not None:
        key, gate, where = unread
        gated = gate is None or config.get(gate[0], gate[1]) is not None
        if gated and key not in config:
            return (f"AttributeError: '{_config_class(facts.model_type)}' object has no "
                    f"attribute '{key}' (the config omits it and the config class has no "
                    "default)", where)
    unset = NONE_NOT_ACCEPTED.get(facts.model_type)
    if unset is not None and config.get(unset[0]) is None:
        key, error, where = unset
        return (f"{error} (the config leaves {key} None, its config class's default)", where)
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
}
