"""Which architectures vLLM serves with pipeline parallelism, as data, per release.

vLLM refuses ``--pipeline-parallel-size > 1`` for a model class that does not implement
``SupportsPP`` (vllm/config/model.py ``ModelConfig.verify_with_parallel_config``: "Pipeline
parallelism is not supported for this model. Supported models implement the `SupportsPP`
interface.", a ``NotImplementedError``). The verdict belongs to the *class* vLLM resolves from
config.json's ``architectures`` (model_executor/models/registry.py ``is_pp_supported_model`` →
``inspect_model_cls`` → ``_ModelInfo.supports_pp`` → interfaces.py ``supports_pp``: ``SupportsPP``
in the class's MRO and a ``forward`` that takes ``intermediate_tensors``) — so a multimodal or
encoder-decoder wrapper is judged by the wrapper class, never by its language model.

Why a table and not a rule: whether a class implements ``SupportsPP`` is a fact of vLLM's source,
one class at a time (Gemma-3 does, Gemma-3n does not). Every row below is vLLM's own answer:
``tests/oracles/run_pp_oracle.py table`` asked vLLM 0.32's registry for each architecture a
derivable model type can carry and wrote ``tests/oracles/vllm-0.32/vllm-0.32-pp-support.json``,
which
``tests/plan/test_vllm_pp_support.py`` holds this table to.

Architecture → (supports PP, where vLLM defines the class). ``None``: vLLM 0.32's registry has
no such architecture, so ``inspect_model_cls`` passes over it to the next one in the list
(``["PhiForCausalLM", "PhiModel"]``); when *no* architecture of a config is registered, vLLM
first tries its Transformers backend for the first one (``_try_resolve_transformers``), which
serves those in ``TRANSFORMERS_BACKEND`` (transformers has the class and it takes vLLM's
attention) — and every Transformers-backend class implements SupportsPP.

``PP_SUPPORT`` is vLLM 0.32's answer; a later release's table is that plus the rows its profile
adds (``VllmRelease.pp_support_added``: 0.33 registers BeamForCausalLM and
Kolibri1ForCausalLM, ``tests/oracles/vllm-0.33/vllm-0.33-pp-support.json``; the rule itself,
``verify_with_parallel_config`` → ``is_pp_supported_model`` → ``interfaces.supports_pp``, reads
the same in both releases). ``pp_table(release)`` is the table of a release.

The EAGLE3 draft rows never refuse a target's PP: vLLM checks a draft against its own parallel
config, built with ``pipeline_parallel_size=1`` (config/speculative.py
``create_draft_parallel_config``). Imported only for a plan with PP > 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from kvledger.plan.engines.vllm.new_type_verdicts import NEW_PP_SUPPORT

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from kvledger.plan.engines.vllm.releases.profile import VllmRelease

PP_SUPPORT: Mapping[str, tuple[bool | None, str]] = MappingProxyType(
    {
        "AfmoeForCausalLM": (True, "vllm/model_executor/models/afmoe.py AfmoeForCausalLM"),
        "BailingMoeForCausalLM": (
            True, "vllm/model_executor/models/bailing_moe.py BailingMoeForCausalLM"),
        "BloomForCausalLM": (True, "vllm/model_executor/models/bloom.py BloomForCausalLM"),
        "ChatGLMModel": (True, "vllm/model_executor/models/chatglm.py ChatGLMForCausalLM"),
        "CohereForCausalLM": (True, "vllm/model_executor/models/commandr.py CohereForCausalLM"),
        "DbrxForCausalLM": (True, "vllm/model_executor/models/dbrx.py DbrxForCausalLM"),
        "DeciLMForCausalLM": (True, "vllm/model_executor/models/nemotron_nas.py DeciLMForCausalLM"),
        "DeepseekForCausalLM": (
            True, "vllm/model_executor/models/deepseek_v2.py DeepseekForCausalLM"),
        "DeepseekV2ForCausalLM": (
            True, "vllm/model_executor/models/deepseek_v2.py DeepseekV2ForCausalLM"),
        "DeepseekV32ForCausalLM": (True, "vllm/models/deepseek_v32/ DeepseekV32ForCausalLM"),
        "DeepseekV3ForCausalLM": (
            True, "vllm/model_executor/models/deepseek_v2.py DeepseekV3ForCausalLM"),
        "DeepseekV4ForCausalLM": (True, "vllm/models/deepseek_v4/ DeepseekV4ForCausalLM"),
        "Eagle3LlamaForCausalLM": (
            False, "vllm/model_executor/models/llama_eagle3.py Eagle3LlamaForCausalLM"),
        "Ernie4_5ForCausalLM": (True, "vllm/model_executor/models/ernie45.py Ernie4_5ForCausalLM"),
        "Ernie4_5_ForCausalLM": (None, ""),
        "Ernie4_5_MoeForCausalLM": (
            True, "vllm/model_executor/models/ernie45_moe.py Ernie4_5_MoeForCausalLM"),
        "Exaone4ForCausalLM": (True, "vllm/model_executor/models/exaone4.py Exaone4ForCausalLM"),
        "Exaone4_5_ForConditionalGeneration": (
            True, "vllm/model_executor/models/exaone4_5.py Exaone4_5_ForConditionalGeneration"),
        "ExaoneForCausalLM": (True, "vllm/model_executor/models/exaone.py ExaoneForCausalLM"),
        "FalconForCausalLM": (True, "vllm/model_executor/models/falcon.py FalconForCausalLM"),
        "FalconH1ForCausalLM": (
            True, "vllm/model_executor/models/falcon_h1.py FalconH1ForCausalLM"),
        "FalconMambaForCausalLM": (True, "vllm/model_executor/models/mamba.py MambaForCausalLM"),
        "GPT2LMHeadModel": (True, "vllm/model_executor/models/gpt2.py GPT2LMHeadModel"),
        "GPTBigCodeForCausalLM": (
            True, "vllm/model_executor/models/transformers/ TransformersForCausalLM"),
        "GPTJForCausalLM": (True, "vllm/model_executor/models/gpt_j.py GPTJForCausalLM"),
        "GPTNeoXForCausalLM": (
            True, "vllm/model_executor/models/transformers/ TransformersForCausalLM"),
        "Gemma2ForCausalLM": (True, "vllm/model_executor/models/gemma2.py Gemma2ForCausalLM"),
        "Gemma3ForCausalLM": (True, "vllm/model_executor/models/gemma3.py Gemma3ForCausalLM"),
        "Gemma3ForConditionalGeneration": (
            True, "vllm/model_executor/models/gemma3_mm.py Gemma3ForConditionalGeneration"),
        "Gemma3nForCausalLM": (False, "vllm/model_executor/models/gemma3n.py Gemma3nForCausalLM"),
        "Gemma3nForConditionalGeneration": (
            False, "vllm/model_executor/models/gemma3n_mm.py Gemma3nForConditionalGeneration"),
        "Gemma4ForCausalLM": (True, "vllm/model_executor/models/gemma4.py Gemma4ForCausalLM"),
        "Gemma4ForConditionalGeneration": (
            True, "vllm/model_executor/models/gemma4_mm.py Gemma4ForConditionalGeneration"),
        "GemmaForCausalLM": (True, "vllm/model_executor/models/gemma.py GemmaForCausalLM"),
        "Glm4MoeForCausalLM": (True, "vllm/model_executor/models/glm4_moe.py Glm4MoeForCausalLM"),
        "Glm4vForConditionalGeneration": (
            True, "vllm/model_executor/models/glm4_1v.py Glm4vForConditionalGeneration"),
        "Glm5NextForConditionalGeneration": (
            True, "vllm/models/glm5next/ Glm5NextForConditionalGeneration"),
        "GlmMoeDsaForCausalLM": (True, "vllm/models/deepseek_v32/ GlmMoeDsaForCausalLM"),
        "GptOssForCausalLM": (True, "vllm/model_executor/models/gpt_oss.py GptOssForCausalLM"),
        "GraniteForCausalLM": (True, "vllm/model_executor/models/granite.py GraniteForCausalLM"),
        "GraniteMoeForCausalLM": (
            True, "vllm/model_executor/models/granitemoe.py GraniteMoeForCausalLM"),
        "GraniteMoeHybridForCausalLM": (
            True, "vllm/model_executor/models/granitemoehybrid.py GraniteMoeHybridForCausalLM"),
        "Idefics3ForConditionalGeneration": (
            False, "vllm/model_executor/models/idefics3.py Idefics3ForConditionalGeneration"),
        "InternLM2ForCausalLM": (
            True, "vllm/model_executor/models/internlm2.py InternLM2ForCausalLM"),
        "JambaForCausalLM": (True, "vllm/model_executor/models/jamba.py JambaForCausalLM"),
        "KimiK25ForConditionalGeneration": (
            True, "vllm/model_executor/models/kimi_k25.py KimiK25ForConditionalGeneration"),
        "KimiK3ForConditionalGeneration": (
            True, "vllm/models/kimi_k3/ KimiK3ForConditionalGeneration"),
        "KimiLinearForCausalLM": (True, "vllm/models/kimi_k3/ KimiLinearForCausalLM"),
        "LagunaForCausalLM": (True, "vllm/model_executor/models/laguna.py LagunaForCausalLM"),
        "Lfm2ForCausalLM": (True, "vllm/model_executor/models/lfm2.py Lfm2ForCausalLM"),
        "Lfm2VlForConditionalGeneration": (
            True, "vllm/model_executor/models/lfm2_vl.py Lfm2VLForConditionalGeneration"),
        "Llama4ForCausalLM": (True, "vllm/model_executor/models/llama4.py Llama4ForCausalLM"),
        "Llama4ForConditionalGeneration": (
            True, "vllm/model_executor/models/mllama4.py Llama4ForConditionalGeneration"),
        "LlamaForCausalLM": (True, "vllm/model_executor/models/llama.py LlamaForCausalLM"),
        "LlamaForCausalLMEagle3": (
            False, "vllm/model_executor/models/llama_eagle3.py Eagle3LlamaForCausalLM"),
        "LlavaForConditionalGeneration": (
            True, "vllm/model_executor/models/llava.py LlavaForConditionalGeneration"),
        "LlavaNextForConditionalGeneration": (
            True, "vllm/model_executor/models/llava_next.py LlavaNextForConditionalGeneration"),
        "Mamba2ForCausalLM": (False, "vllm/model_executor/models/mamba2.py Mamba2ForCausalLM"),
        "MambaForCausalLM": (True, "vllm/model_executor/models/mamba.py MambaForCausalLM"),
        "MiMoV2FlashForCausalLM": (
            True, "vllm/model_executor/models/mimo_v2.py MiMoV2FlashForCausalLM"),
        "MiniCPM3ForCausalLM": (True, "vllm/model_executor/models/minicpm3.py MiniCPM3ForCausalLM"),
        "MiniCPMForCausalLM": (True, "vllm/model_executor/models/minicpm.py MiniCPMForCausalLM"),
        "MiniCPMV4_6ForConditionalGeneration": (
            True, "vllm/model_executor/models/minicpmv4_6.py MiniCPMV4_6ForConditionalGeneration"),
        "MiniMaxM1ForCausalLM": (None, ""),
        "MiniMaxM2ForCausalLM": (
            True, "vllm/model_executor/models/minimax_m2.py MiniMaxM2ForCausalLM"),
        "MiniMaxM3ForCausalLM": (None, ""),
        "MiniMaxM3SparseForConditionalGeneration": (
            True, "vllm/models/minimax_m3/ MiniMaxM3SparseForConditionalGeneration"),
        "Ministral3ForCausalLM": (True, "vllm/model_executor/models/mistral.py MistralForCausalLM"),
        "Mistral3ForConditionalGeneration": (
            True, "vllm/model_executor/models/mistral3.py Mistral3ForConditionalGeneration"),
        "MistralForCausalLM": (True, "vllm/model_executor/models/mistral.py MistralForCausalLM"),
        "MixtralForCausalLM": (True, "vllm/model_executor/models/mixtral.py MixtralForCausalLM"),
        "MllamaForConditionalGeneration": (None, ""),
        "MuseGlimmerForConditionalGeneration": (
            True, "vllm/model_executor/models/muse_glimmer.py MuseGlimmerForCausalLM"),
        "NemotronForCausalLM": (True, "vllm/model_executor/models/nemotron.py NemotronForCausalLM"),
        "NemotronHForCausalLM": (
            True, "vllm/model_executor/models/nemotron_h.py NemotronHForCausalLM"),
        "OPTForCausalLM": (True, "vllm/model_executor/models/opt.py OPTForCausalLM"),
        "Olmo2ForCausalLM": (
            True, "vllm/model_executor/models/transformers/ TransformersForCausalLM"),
        "Olmo3ForCausalLM": (
            True, "vllm/model_executor/models/transformers/ TransformersForCausalLM"),
        "OlmoeForCausalLM": (True, "vllm/model_executor/models/olmoe.py OlmoeForCausalLM"),
        "OrionForCausalLM": (True, "vllm/model_executor/models/orion.py OrionForCausalLM"),
        "PaliGemmaForConditionalGeneration": (
            True, "vllm/model_executor/models/paligemma.py PaliGemmaForConditionalGeneration"),
        "PersimmonForCausalLM": (None, ""),
        "Phi3ForCausalLM": (True, "vllm/model_executor/models/phi3.py Phi3ForCausalLM"),
        "Phi3SmallForCausalLM": (None, ""),
        "PhiForCausalLM": (
            True, "vllm/model_executor/models/transformers/ TransformersForCausalLM"),
        "PhiMoEForCausalLM": (True, "vllm/model_executor/models/phimoe.py PhiMoEForCausalLM"),
        "PhiModel": (None, ""),
        "Qwen2AudioForConditionalGeneration": (
            True, "vllm/model_executor/models/qwen2_audio.py Qwen2AudioForConditionalGeneration"),
        "Qwen2ForCausalLM": (True, "vllm/model_executor/models/qwen2.py Qwen2ForCausalLM"),
        "Qwen2MoeForCausalLM": (
            True, "vllm/model_executor/models/qwen2_moe.py Qwen2MoeForCausalLM"),
        "Qwen2VLForConditionalGeneration": (
            True, "vllm/model_executor/models/qwen2_vl.py Qwen2VLForConditionalGeneration"),
        "Qwen2_5OmniForConditionalGeneration": (
            True, "vllm/model_executor/models/qwen2_5_omni_thinker.py "
                  "Qwen2_5OmniThinkerForConditionalGeneration"),
        "Qwen2_5_VLForConditionalGeneration": (
            True, "vllm/model_executor/models/qwen2_5_vl.py Qwen2_5_VLForConditionalGeneration"),
        "Qwen3ASRForConditionalGeneration": (
            True, "vllm/model_executor/models/qwen3_asr.py Qwen3ASRForConditionalGeneration"),
        "Qwen3ForCausalLM": (True, "vllm/model_executor/models/qwen3.py Qwen3ForCausalLM"),
        "Qwen3MoeForCausalLM": (
            True, "vllm/model_executor/models/qwen3_moe.py Qwen3MoeForCausalLM"),
        "Qwen3NextForCausalLM": (
            True, "vllm/model_executor/models/qwen3_next.py Qwen3NextForCausalLM"),
        "Qwen3VLForConditionalGeneration": (
            True, "vllm/model_executor/models/qwen3_vl.py Qwen3VLForConditionalGeneration"),
        "Qwen3VLMoeForConditionalGeneration": (
            True, "vllm/model_executor/models/qwen3_vl_moe.py Qwen3VLMoeForConditionalGeneration"),
        "Qwen3_5ForCausalLM": (True, "vllm/model_executor/models/qwen3_5.py Qwen3_5ForCausalLM"),
        "Qwen3_5ForConditionalGeneration": (
            True, "vllm/model_executor/models/qwen3_5.py Qwen3_5ForConditionalGeneration"),
        "Qwen3_5MoeForCausalLM": (
            True, "vllm/model_executor/models/qwen3_5.py Qwen3_5MoeForCausalLM"),
        "Qwen3_5MoeForConditionalGeneration": (
            True, "vllm/model_executor/models/qwen3_5.py Qwen3_5MoeForConditionalGeneration"),
        "SmolVLMForConditionalGeneration": (
            False, "vllm/model_executor/models/smolvlm.py SmolVLMForConditionalGeneration"),
        "StableLmForCausalLM": (True, "vllm/model_executor/models/stablelm.py StablelmForCausalLM"),
        "Starcoder2ForCausalLM": (
            True, "vllm/model_executor/models/transformers/ TransformersForCausalLM"),
        "WhisperForConditionalGeneration": (
            False, "vllm/model_executor/models/whisper.py WhisperForConditionalGeneration"),
        "Zamba2ForCausalLM": (False, "vllm/model_executor/models/zamba2.py Zamba2ForCausalLM"),
        **NEW_PP_SUPPORT,
    }
)


# Unregistered architectures vLLM's ``_try_resolve_transformers`` hands to the Transformers
# backend (oracle: ``transformers_backend`` in vllm-0.32-pp-support.json).
TRANSFORMERS_BACKEND = frozenset(
    {"MllamaForConditionalGeneration", "PersimmonForCausalLM", "PhiModel"})
TRANSFORMERS_BACKEND_WHERE = "vllm/model_executor/models/transformers/ (Transformers backend)"


def pp_table(release: VllmRelease) -> Mapping[str, tuple[bool | None, str]]:
    """The verdicts of ``release``: ``PP_SUPPORT`` and the rows its profile adds."""
    added = release.pp_support_added
    return {**PP_SUPPORT, **added} if added else PP_SUPPORT


def pp_verdict(architectures: tuple[str, ...],
               release: VllmRelease) -> tuple[str, bool, str] | None:
    """(architecture, supports PP, where) for the class the planned release resolves from
    ``architectures`` (registry.py ``inspect_model_cls``): with none registered, the
    Transformers backend for the first when it serves it; else the first registered one.
    ``None`` when an architecture has no row here before a decision (kvledger cannot tell
    which class vLLM would build, so it does not guess), or when vLLM serves none of them."""
    table = pp_table(release)
    for arch in architectures:
        row = table.get(arch)
        if row is None:
            return None
        supported, where = row
        if supported is not None:
            return arch, supported, where
    if architectures and architectures[0] in TRANSFORMERS_BACKEND:
        return architectures[0], True, TRANSFORMERS_BACKEND_WHERE
    return None
