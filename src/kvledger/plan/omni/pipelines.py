"""Which part of the checkpoint each vLLM-Omni stage runs: the pipelines as data.

A deploy file numbers its stages; what a stage *is* (thinker, talker, code2wav …), how it
executes and which sub-config of the checkpoint it builds from is fixed by the model's
``PipelineConfig`` in the vLLM-Omni package (``StagePipelineConfig``: ``model_stage``,
``execution_type``, ``hf_config_name``), registered by model type in
``vllm_omni/config/pipeline_registry.py`` ``OMNI_PIPELINES`` (commit
00a82c375a567d0bd44bafc2cd77ac5291619bba). Read from (commit per file):

- ``vllm_omni/model_executor/models/qwen2_5_omni/pipeline.py`` ``QWEN2_5_OMNI_PIPELINE``
  (36d8c0ec4069f9a7146d555a131c69c5a6595bc6);
- ``vllm_omni/model_executor/models/qwen3_omni/pipeline.py`` ``QWEN3_OMNI_PIPELINE``
  (04a1a2fe9877d7e2eaef8334c008f18a8208e41d);
- ``vllm_omni/model_executor/models/mimo_audio/pipeline.py`` ``MIMO_AUDIO_PIPELINE``
  (a543b6a7b545e1aa8bcdfe716be3feb4bc1a44c6; routed by ``hf_architectures`` because MiMo-Audio
  reports ``model_type`` qwen2);
- ``vllm_omni/model_executor/models/ming_flash_omni/pipeline.py``
  ``MING_FLASH_OMNI_PIPELINE`` (a543b6a7b545e1aa8bcdfe716be3feb4bc1a44c6; routed by
  ``hf_architectures``: its config reports the thinker's model type).

``execution_type`` ``llm_ar`` stages run vLLM's autoregressive runner with a paged KV cache;
``llm_generation`` stages (code2wav, Ming's CFM talker) run vLLM-Omni's generation runner
(``vllm_omni/worker/gpu_generation_model_runner.py``), which keeps vLLM's KV machinery but
has paged KV only for the vLLM Attention layers its model builds. kvledger plans no paged KV
for them; ``no_kv_basis`` says where that was read (Qwen2.5-Omni's token2wav), and a stage
without one says it was not (their model-local declarations are counted either way).
"""

from __future__ import annotations

from typing import Any

from kvledger.records import record

# Model types only a vLLM-Omni stage builds: vLLM-Omni registers their classes into vLLM's
# model registry; stock vLLM's registry has none, so vLLM's own tables (its pipeline-parallel
# verdicts, its oracle cases) have no row for them.
STAGE_ONLY_MODEL_TYPES: dict[str, str] = {
    "qwen2_5_omni_talker": "Qwen2OmniTalkerForConditionalGeneration is registered by "
                           "vLLM-Omni (model_executor/models/qwen2_5_omni/"
                           "qwen2_5_omni_talker.py), not by vLLM",
}

LLM_AR = "llm_ar"
LLM_GENERATION = "llm_generation"
DIFFUSION = "diffusion"


@record(frozen=True)
class StagePart:
    """One stage of a pipeline: its role, how it runs, and the sub-config it builds from."""

    stage_id: int
    role: str  # StagePipelineConfig.model_stage
    execution_type: str
    hf_config_name: str | None  # None: the checkpoint's whole config
    # For a stage without paged KV: where that was read ("" when it was not).
    no_kv_basis: str = ""


@record(frozen=True)
class Pipeline:
    name: str  # the OMNI_PIPELINES key
    stages: tuple[StagePart, ...]
    architectures: tuple[str, ...] = ()  # PipelineConfig.hf_architectures (routing)

    def stage(self, stage_id: int) -> StagePart | None:
        return next((s for s in self.stages if s.stage_id == stage_id), None)


def _p(name: str, *stages: tuple[Any, ...], architectures: tuple[str, ...] = ()) -> Pipeline:
    return Pipeline(name, tuple(StagePart(*s) for s in stages), architectures)


_TOKEN2WAV = ("vllm_omni/model_executor/models/qwen2_5_omni/qwen2_5_omni_token2wav.py (commit "
              "02952af3fdeeb34ca423689b15c97dd688895894): a DiT and a BigVGAN vocoder built "
              "from torch layers and QKVParallelLinear, no vLLM Attention layer, so the engine "
              "allocates no paged KV for it")


PIPELINES: dict[str, Pipeline] = {p.name: p for p in (
    _p("qwen2_5_omni", (0, "thinker", LLM_AR, "thinker_config"),
       (1, "talker", LLM_AR, "talker_config"),
       (2, "code2wav", LLM_GENERATION, "thinker_config", _TOKEN2WAV)),
    _p("qwen3_omni_moe", (0, "thinker", LLM_AR, "thinker_config"),
       (1, "talker", LLM_AR, "talker_config"),
       (2, "code2wav", LLM_GENERATION, "thinker_config")),
    _p("mimo_audio", (0, "fused_thinker_talker", LLM_AR, None),
       (1, "code2wav", LLM_GENERATION, None),
       architectures=("MiMoAudioModel", "MiMoV2ASRForCausalLM")),
    _p("ming_flash_omni", (0, "thinker", LLM_AR, "llm_config"),
       (1, "ming_tts", LLM_GENERATION, "talker_config"),
       architectures=("MingFlashOmniForConditionalGeneration",
                      "BailingMM2NativeForConditionalGeneration")),
)}


def find_pipeline(config: dict[str, object], named: str | None) -> Pipeline:
    """The pipeline a deploy file's ``pipeline:`` names, else the one the checkpoint's
    ``model_type`` (then ``architectures``) selects, as ``StageConfigFactory`` routes it.
    ``ValueError`` naming what was tried when kvledger has no such pipeline."""
    if named is not None:
        if named in PIPELINES:
            return PIPELINES[named]
        raise ValueError(f"the deploy file names pipeline {named!r}, which kvledger does not "
                         f"know (known: {', '.join(sorted(PIPELINES))})")
    model_type = config.get("model_type")
    if isinstance(model_type, str) and model_type in PIPELINES:
        return PIPELINES[model_type]
    arches = config.get("architectures") or ()
    for pipeline in PIPELINES.values():
        if isinstance(arches, list | tuple) and set(arches) & set(pipeline.architectures):
            return pipeline
    shown = list(arches) if isinstance(arches, list | tuple) else arches
    raise ValueError(f"no vLLM-Omni pipeline kvledger knows serves model_type {model_type!r} "
                     f"(architectures {shown}); known: {', '.join(sorted(PIPELINES))}")
