"""Model types kvledger derives that have not been put to SGLang 0.5.23 yet.

The breadth rows (derive/model_types.py, last block) were checked against vLLM's own numbers
only. Whether SGLang serves them, and with which pool, no SGLang oracle run has said, so the
SGLang layout refuses them as not checked (as ``served.backend`` refuses an architecture it
has no verdict for) rather than give an unchecked number. A row leaves this table with its
SGLang oracle case (tests/plan/test_sglang_every_type.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from kvledger.plan.engines.sglang.releases.profile import sglang_words

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from kvledger.plan.engines.sglang.releases.profile import SglangRelease

UNCHECKED_MODEL_TYPES: Mapping[str, str] = dict.fromkeys(
    ("glm4_moe_lite", "glm4", "apertus", "seed_oss", "granitemoeshared", "cohere2",
     "lfm2_moe", "exaone_moe", "olmo", "glm", "arcee", "jais2", "smollm3", "vaultgemma",
     "flex_olmo", "hunyuan_v1_dense", "cwm",
     # breadth round 3 (config-class defaults)
     "granite_swa", "granitemoe_swa", "cohere2_moe", "hyperclovax", "hy_v3", "mellum", "axk1",
     "longcat_flash", "llava_onevision", "llava_next_video", "internvl", "qianfan_ocr",
     "glmasr", "audioflamingo3", "cohere2_vision", "granite_speech", "granite_speech_plus",
     "granite4_vision", "blip-2", "minicpmv4_7", "nemotron_h_omni", "vibevoice_asr", "aria",
     "aria_text", "olmo_hybrid", "glm4v_moe", "glm4v_moe_text", "glm_ocr", "glm_ocr_text",
     "paddleocr_vl", "paddleocr_vl_text", "emu3", "emu3_text_model", "qwen3_omni_moe",
     "qwen3_omni_moe_thinker", "qwen3_omni_moe_text", "cohere_compass",
     "cohere_compass_text",
     # breadth round 4
     "cosmos3_edge", "cosmos3_edge_text", "hunyuan_vl", "hunyuan_vl_text", "gemma4_unified",
     "gemma4_unified_text",
     # breadth round 5
     "moss_transcribe_diarize", "beam", "kolibri1",
     # breadth round 6 (vLLM's own config classes)
     "bagel", "funaudiochat", "kimi_vl", "midashenglm", "openvla", "step3_text", "step3_vl",
     "step3p5",
     # breadth round 7
     "deepseek_vl_v2", "isaac", "moondream3", "moondream3_config", "moondream3_text"),
    "checked against vLLM's own numbers only",
)


def unchecked_reason(model_type: str, release: SglangRelease | None = None) -> str:
    """Why SGLang's answer for ``model_type`` is not reproduced ("" when it has been checked)."""
    why = UNCHECKED_MODEL_TYPES.get(model_type)
    if why is None:
        return ""
    return (f"model_type '{model_type}' has not been checked against "
            f"{sglang_words(release)} ({why}; no "
            "SGLang oracle case yet): not reproduced yet")
