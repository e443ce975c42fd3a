"""Multimodal wrappers (coverage wave, group "multimodal"): each real config derives only its
language model's KV cache (vision / audio encoders hold none in vLLM 0.32), with the bytes per
token worked by hand from the config's own values in a comment, and — where the vLLM 0.32
oracle could build it — the per-layer facts against vLLM's ``layer_specs``
(``tests/oracles/vllm-0.32/vllm-0.32-coverage-multimodal.jsonl``, made by
``tests/oracles/run_multimodal_oracle.py``; the full plans are replayed by
``tests/plan/test_vllm_oracles.py``). Wrappers vLLM 0.32 cannot build from a config.json are
refused with vLLM's own reason.
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from pathlib import Path

import pytest

from derive.coverage import (
    WrapperRow,
    check_inspect,
    check_wrapper,
    find_case,
    vllm_derive_file,
    vllm_facts,
)
from derive.coverage import attention_groups as _attention
from derive.coverage import derive_file as _facts
from derive.coverage import oracle_attention as _oracle
from derive.coverage import raw_config as _raw
from kvledger.derive import ConfigError, UnknownCacheKey, UnsupportedArchitecture, derive_model
from kvledger.derive.layers import Kind, RecurrentState, Role
from kvledger.plan.engines.vllm import VllmLayoutError, plan_vllm
from kvledger.plan.request import PlanRequest
from oracle_cases import CONFIGS, needs_shared

HERE = Path(__file__).resolve().parents[1] / "oracles"
CASES_FILE = HERE / "vllm-0.32" / "vllm-0.32-coverage-multimodal.jsonl"
_case = partial(find_case, CASES_FILE)


# -- the types, one real config each ------------------------------------------------------------
# (stem, model_type, where the language model sat, its row, KV dtype, max positions,
#  decoder bytes/token worked from the config)
TYPES = [
    # llava-1.5: sparse llama text_config; LlamaConfig fills 32 layers × 32 heads × hidden 4096
    # (head 128, KV heads = heads); float16: 32 × 2 × 32 × 128 × 2 B = 524,288.
    ("llava-hf--llava-1.5-7b-hf", "llava", "text_config", "llama", "float16", 4096, 524_288),
    # llava-v1.6-mistral (llava_next): sparse mistral text_config; MistralConfig: 32 layers ×
    # 32 heads × hidden 4096, 8 KV heads stated, sliding_window null; float16 at the top wins
    # over text_config's bfloat16: 32 × 2 × 8 × 128 × 2 B = 131,072.
    ("llava-hf--llava-v1.6-mistral-7b-hf.TEST", "llava_next", "text_config", "mistral",
     "float16", 32_768, 131_072),
    # SmolVLM2-500M (smolvlm): llama text_config 32 layers × 2 × 5 KV × head_dim 64 × 4 B:
    # the top level states float32 (derive keeps it; vLLM's plan downcasts to bfloat16).
    ("HuggingFaceTB--SmolVLM2-500M-Video-Instruct.CONVERTED", "smolvlm", "text_config", "llama",
     "float32", 8192, 81_920),
    # Devstral-Small-2: ministral3, 40 layers × 2 × 8 KV × head_dim 128 × 2 B = 163,840.
    ("mistralai--Devstral-Small-2-24B-Instruct", "mistral3", "text_config", "ministral3",
     "bfloat16", 393_216, 163_840),
    # Qwen2-VL-2B (text keys at the top level): 28 layers × 2 × 2 KV × (1536 / 12 = 128) × 2 B
    # (float16) = 28,672; sliding_window 32768 dropped, use_sliding_window false.
    ("Qwen--Qwen2-VL-2B-Instruct", "qwen2_vl", "top-level text keys", "qwen2_vl_text",
     "float16", 32_768, 28_672),
    # olmOCR-2 (Qwen2.5-VL-7B): text_config 28 layers × 2 × 4 KV × (3584 / 28 = 128) × 2 B
    # = 57,344; the top-level copies (sliding_window 32768) are not read.
    ("allenai--olmOCR-2-7B-1025", "qwen2_5_vl", "text_config", "qwen2_5_vl_text", "bfloat16",
     128_000, 57_344),
    # Qwen2.5-Omni-7B: thinker_config.text_config, 28 × 2 × 4 × (3584 / 28) × 2 B = 57,344;
    # the talker (24 layers) is never built by vLLM.
    ("Qwen--Qwen2.5-Omni-7B", "qwen2_5_omni", "thinker_config.text_config",
     "qwen2_5_omni_text", "bfloat16", 32_768, 57_344),
    # Qwen2-Audio-7B: sparse qwen2 text_config; Qwen2Config: 32 layers, 32 heads, 32 KV heads,
    # hidden 4096 → 32 × 2 × 32 × 128 × 2 B = 524,288.
    ("Qwen--Qwen2-Audio-7B-Instruct", "qwen2_audio", "text_config", "qwen2", "bfloat16", 8192,
     524_288),
    # Qwen3-ASR-0.6B: thinker_config.text_config, 28 × 2 × 8 × head_dim 128 × 2 B = 114,688.
    ("Qwen--Qwen3-ASR-0.6B", "qwen3_asr", "thinker_config.text_config", "qwen3_asr_text",
     "bfloat16", 65_536, 114_688),
    # GLM-4.1V-9B (text keys at the top level): 40 × 2 × 2 KV × (4096 / 32) × 2 B = 40,960.
    ("zai-org--GLM-4.1V-9B-Thinking", "glm4v", "top-level text keys", "glm4v_text",
     "bfloat16", 65_536, 40_960),
    # Kimi-K2.5: kimi_k2 (MLA) text model, 61 × (kv_lora_rank 512 + rope 64) × 2 B = 70,272.
    ("moonshotai--Kimi-K2.5", "kimi_k25", "text_config", "kimi_k2", "bfloat16", 262_144,
     70_272),
    # EXAONE-4.5-33B: 64 × 2 × 8 × 128 × 2 B = 262,144 (48 sliding 4096, 16 full).
    ("LGAI-EXAONE--EXAONE-4.5-33B", "exaone4_5", "text_config", "exaone4_5_text", "bfloat16",
     262_144, 262_144),
    # MiniCPM-V-4.6: qwen3_5_text, 6 full-attention layers × 2 × 2 KV × 256 × 2 B = 12,288
    # (the 18 GDN layers hold per-request state instead).
    ("openbmb--MiniCPM-V-4_6", "minicpmv4_6", "text_config", "qwen3_5_text", "bfloat16",
     262_144, 12_288),
]


@pytest.mark.parametrize("row", TYPES, ids=[t[0] for t in TYPES])
def test_wrapper_derives_its_language_model(row: WrapperRow) -> None:
    check_wrapper(*row)


# stem → (KV heads, head dim, window) → layers, from the config's own values.
ATTENTION = {
    "llava-hf--llava-1.5-7b-hf": {(32, 128, None): 32},
    "llava-hf--llava-v1.6-mistral-7b-hf.TEST": {(8, 128, None): 32},
    "HuggingFaceTB--SmolVLM2-500M-Video-Instruct.CONVERTED": {(5, 64, None): 32},
    "mistralai--Devstral-Small-2-24B-Instruct": {(8, 128, None): 40},
    "Qwen--Qwen2-VL-2B-Instruct": {(2, 128, None): 28},
    "allenai--olmOCR-2-7B-1025": {(4, 128, None): 28},
    "Qwen--Qwen2.5-Omni-7B": {(4, 128, None): 28},
    "Qwen--Qwen2-Audio-7B-Instruct": {(32, 128, None): 32},
    "Qwen--Qwen3-ASR-0.6B": {(8, 128, None): 28},
    "zai-org--GLM-4.1V-9B-Thinking": {(2, 128, None): 40},
    # layer_types "LLLG" × 16: 48 sliding (sliding_window 4096), 16 full.
    "LGAI-EXAONE--EXAONE-4.5-33B": {(8, 128, 4096): 48, (8, 128, None): 16},
    # full_attention_interval 4: 6 of 24 layers, head_dim 256, 2 KV heads.
    "openbmb--MiniCPM-V-4_6": {(2, 256, None): 6},
}


@pytest.mark.parametrize("stem", sorted(ATTENTION))
def test_attention_layers_match_the_config_and_vllm(stem: str) -> None:
    facts = _facts(stem)
    assert _attention(facts) == Counter(ATTENTION[stem])
    assert _attention(facts) == _oracle(_case(stem))


def test_kimi_k25_mla_latent_matches_vllm() -> None:
    facts = _facts("moonshotai--Kimi-K2.5")
    layers = facts.by_role(Role.DECODER)
    assert len(layers) == 61 and {layer.kind for layer in layers} == {Kind.MLA}
    (spec,) = _case("moonshotai--Kimi-K2.5")["layer_specs"]
    assert spec["spec"] == "MLAAttentionSpec" and spec["num_layers"] == 61
    # kv_lora_rank 512 + qk_rope_head_dim 64 = 576, one latent "head".
    assert spec["head_size"] == 576
    assert {layer.bytes_per_token() for layer in layers} == {576 * 2}


def test_minicpm_v_4_6_gdn_states_match_vllm() -> None:
    facts = _facts("openbmb--MiniCPM-V-4_6")
    states = [x for x in facts.by_role(Role.DECODER) if isinstance(x, RecurrentState)]
    (spec,) = [s for s in _case("openbmb--MiniCPM-V-4_6")["layer_specs"]
               if s["spec"] == "MambaSpec"]
    assert len(states) == spec["num_layers"] == 18
    # conv: (2 × 16 key heads × 128 + 16 value heads × 128) = 6,144 channels × (kernel 4 - 1);
    # recurrent: 16 value heads × 128 × 128.
    assert [list(t.shape) for t in states[0].tensors()] == spec["shapes"] == [
        [3, 6144], [16, 128, 128]]


# -- rules of the wrapper rows ---------------------------------------------------------------
def test_text_config_wins_over_top_level_copies() -> None:
    # Qwen2_5_VLConfig builds its text config from text_config when the file has one: changing
    # the top-level copies changes nothing (vLLM reads hf_config.get_text_config()).
    raw = _raw("allenai--olmOCR-2-7B-1025")
    raw.update(num_key_value_heads=28, num_hidden_layers=2, use_sliding_window=True)
    assert derive_model(raw).bytes_per_token() == 57_344


def test_inline_text_keys_are_guarded_like_any_level() -> None:
    raw = _raw("Qwen--Qwen2-VL-2B-Instruct")
    raw["kv_sharing_layers"] = [1]
    with pytest.raises(UnknownCacheKey, match="kv_sharing_layers"):
        derive_model(raw)
    raw = _raw("Qwen--Qwen2-VL-2B-Instruct")
    raw["use_sliding_window"] = True  # Qwen2VLTextConfig would then keep the window
    with pytest.raises(UnsupportedArchitecture, match="use_sliding_window=True"):
        derive_model(raw)


def test_inline_omitted_keys_take_the_text_class_defaults() -> None:
    # Qwen2VLTextConfig: num_key_value_heads 8 when omitted (not Qwen2Config's 32). The 2B's
    # 12 query heads are no multiple of 8 (vLLM's Attention asserts it: refused at the edge),
    # so the test states 16 heads: head_dim 1,536 / 16 = 96 (qwen2 derives it),
    # 28 × 2 × 8 × 96 × 2 B (float16) = 86,016.
    raw = _raw("Qwen--Qwen2-VL-2B-Instruct")
    del raw["num_key_value_heads"]
    raw["num_attention_heads"] = 16
    assert derive_model(raw).bytes_per_token() == 86_016


def test_sparse_mistral_text_config_in_llava_takes_mistral_defaults() -> None:
    # LlavaConfig builds a "mistral" text_config with MistralConfig: 32 layers, 32 heads,
    # hidden 4096, 8 KV heads, sliding_window 4096 on every layer (no layer_types):
    # 32 × 2 × 8 × 128 × 2 B = 131,072 B/token, each layer a 4,096-token window.
    raw = _raw("llava-hf--llava-1.5-7b-hf")
    raw["text_config"] = {"model_type": "mistral", "vocab_size": 32064}
    facts = derive_model(raw)
    assert facts.bytes_per_token() == 131_072
    assert _attention(facts) == Counter({(8, 128, 4096): 32})


def test_root_dtype_wins_over_the_text_configs() -> None:
    # vLLM get_torch_dtype: hf_config.dtype first, the text config's only when the root has
    # none. llava-v1.6-mistral: float16 at the top, bfloat16 in text_config.
    raw = _raw("llava-hf--llava-v1.6-mistral-7b-hf.TEST")
    assert derive_model(raw).model_dtype == "float16"
    del raw["torch_dtype"]
    assert derive_model(raw).model_dtype == "bfloat16"


def test_idefics3_text_config_carries_its_own_training_flags() -> None:
    # qk_layer_norms is a SmolVLM/Idefics training flag vLLM's LlamaModel never reads: the
    # wrapper declares it for its text config. Any other unknown text key still fails closed.
    raw = _raw("HuggingFaceTB--SmolVLM2-500M-Video-Instruct.CONVERTED")
    raw["model_type"] = "idefics3"
    assert derive_model(raw).bytes_per_token() == 81_920
    raw["text_config"]["kv_sharing_layers"] = [1]
    with pytest.raises(UnknownCacheKey, match="kv_sharing_layers"):
        derive_model(raw)
    # The flag is the wrapper's, not llama's: a plain llama config with it is refused.
    plain = dict(_raw("HuggingFaceTB--SmolVLM2-500M-Video-Instruct.CONVERTED")["text_config"])
    with pytest.raises(UnknownCacheKey, match="qk_layer_norms"):
        derive_model(plain)


def test_llava_refuses_an_inner_type_it_was_not_checked_against() -> None:
    raw = _raw("llava-hf--llava-1.5-7b-hf")
    raw["text_config"]["model_type"] = "gemma2"
    with pytest.raises(UnsupportedArchitecture, match="llava row accepts llama, mistral, qwen2"):
        derive_model(raw)


def test_omni_talker_and_token2wav_hold_no_cache() -> None:
    # vLLM 0.32 maps Qwen2_5OmniForConditionalGeneration to the thinker alone.
    raw = _raw("Qwen--Qwen2.5-Omni-7B")
    raw["talker_config"]["num_hidden_layers"] = 240
    del raw["token2wav_config"]
    assert derive_model(raw).bytes_per_token() == 57_344


def test_nested_levels_are_each_guarded() -> None:
    raw = _raw("Qwen--Qwen2.5-Omni-7B")
    raw["thinker_config"]["kv_sharing_layers"] = [1]
    with pytest.raises(UnknownCacheKey, match="kv_sharing_layers"):
        derive_model(raw)
    raw = _raw("Qwen--Qwen2.5-Omni-7B")
    raw["thinker_config"]["text_config"]["use_sliding_window"] = True
    with pytest.raises(UnsupportedArchitecture, match="use_sliding_window=True"):
        derive_model(raw)


def test_exaone4_5_layer_types_from_an_integer_pattern() -> None:
    # Exaone4Config without layer_types: layer i is full iff (i + 1) % pattern == 0.
    # Pattern 4 over 64 layers: 48 sliding, 16 full, as the published LLLG list.
    raw = _raw("LGAI-EXAONE--EXAONE-4.5-33B")
    text = raw["text_config"]
    del text["layer_types"]
    text["sliding_window_pattern"] = 4
    assert _attention(derive_model(raw)) == Counter(ATTENTION["LGAI-EXAONE--EXAONE-4.5-33B"])
    text["sliding_window_pattern"] = "LLLG"  # the class cannot divide by a string
    with pytest.raises(ConfigError, match="sliding_window_pattern 'LLLG'"):
        derive_model(raw)


def test_exaone4_5_mtp_is_not_planned_silently() -> None:
    facts = _facts("LGAI-EXAONE--EXAONE-4.5-33B")
    assert not facts.by_role(Role.MTP)
    request = PlanRequest(engine="vllm", kv_cache_memory_bytes=16 << 30, max_model_len=32768,
                          num_speculative_tokens=1, speculative_method="mtp")
    with pytest.raises(VllmLayoutError, match="MTP layers"):
        plan_vllm(facts, request, 16 << 30)


# -- refusals: vLLM 0.32 cannot build these from a config.json ----------------------------------
REFUSED = {
    # vLLM's VoxtralForConditionalGeneration reads Mistral-format params (params.json); the HF
    # config.json alone fails in its __init__ (oracle run, tests/oracles/README-multimodal.md).
    "mistralai--Voxtral-Mini-3B-2507":
        "'VoxtralEncoderConfig' object has no attribute 'downsample_factor'",
    # Remote code only: no transformers 5.19 or vLLM config class for these model types.
    "OpenGVLab--InternVL2-2B.EDITED": "model_type 'internvl_chat'",
    "OpenGVLab--InternVL2-4B.EDITED": "model_type 'internvl_chat'",
    "allenai--Molmo-7B-D-0924": "model_type 'molmo'",
    "microsoft--Phi-3-vision-128k-instruct": "model_type 'phi3_v'",
    "microsoft--Phi-4-multimodal-instruct-1layer-TEST": "model_type 'phi4mm'",
    "openbmb--MiniCPM-V-4": "model_type 'minicpmv'",
    "openbmb--MiniCPM-V-2_6.EDITED": "model_type 'minicpmv'",
}
REMOTE = "contains custom code which must be executed to correctly load the model"


@pytest.mark.parametrize("stem", sorted(REFUSED))
def test_refused_with_vllms_reason(stem: str) -> None:
    with pytest.raises(UnsupportedArchitecture) as err:
        vllm_derive_file(stem)
    message = str(err.value)
    assert REFUSED[stem] in message
    if "model_type" in REFUSED[stem]:
        assert REMOTE in message and "--trust-remote-code" in message


@pytest.mark.parametrize(("model_type", "arch", "version"), [
    ("aya_vision", "AyaVisionForConditionalGeneration", "0.24.0"),
    ("phi4_multimodal", "Phi4MultimodalForCausalLM", "0.12.0"),
])
def test_wrappers_vllm_hands_to_its_transformers_backend_are_refused_saying_so(
    model_type: str, arch: str, version: str
) -> None:
    # vllm/model_executor/models/registry.py: both are in _PREVIOUSLY_SUPPORTED_MODELS, but
    # inspect_model_cls tries _try_resolve_transformers first, and transformers 5.19's class
    # takes vLLM's attention, so that message is never what vLLM says.
    with pytest.raises(UnsupportedArchitecture) as err:
        vllm_facts({"model_type": model_type, "architectures": [arch]})
    assert (f"vLLM 0.32 has no model of its own for model_type '{model_type}' ({arch}, served "
            f"by its own model until v{version}) and hands it to its Transformers backend "
            "(TransformersMultiModalForCausalLM)") in str(err.value)
    assert "was supported in vLLM until" not in str(err.value)


# -- kvledger inspect over every config of this group (sibling of test_inspect_every_config) --
FILES = sorted(p for p in CONFIGS.glob("*.json") if p.stem in {t[0] for t in TYPES}
               or p.stem in REFUSED)


@needs_shared
def test_every_config_of_the_group_is_classified() -> None:
    assert len(FILES) == len(TYPES) + len(REFUSED)


@needs_shared
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_inspect_derives_or_refuses(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    check_inspect(path, REFUSED.get(path.stem), capsys)
