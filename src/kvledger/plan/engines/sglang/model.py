"""SGLang's view of a model, built from kvledger's engine-neutral facts.

SGLang 0.5.23 does not size the KV pool layer by layer: ``ModelConfig``
(``srt/configs/model_config.py``) holds *one* KV head count, ``head_dim`` and ``v_head_dim``
(one more set for sliding-window layers of hybrid-SWA models), and the pool configurator
(``srt/model_executor/pool_configurator.py``) multiplies them by a layer count. So this module
turns the per-layer facts into that view, and refuses — naming the difference — any model
whose layers SGLang would size differently from what the facts say (a pool whose layers
differ in geometry, a layer that caches nothing where SGLang still gives it a slot, a cache
kind SGLang's pools do not hold).

What decides each pool, with where SGLang decides it:

* **hybrid sliding-window** pools exist only for the architectures ``is_hybrid_swa_model``
  lists (``configs/model_config.py``); Gemma-2/3 and Mistral's sliding layers are sized as
  full layers (``model_overrides/gemma2_gemma3.py`` even sets ``disable_hybrid_swa_memory``).
  Llama-4's chunked layers are its SWA layers (``get_hybrid_layer_ids``: every layer but each
  fourth), their window the ``attention_chunk_size`` (``resolve_sliding_window_size``).
* **MLA** is SGLang's attention arch only for the architectures ``_derive_model_shapes`` names
  (``AttentionArch.MLA``); the cell is ``kv_lora_rank + qk_rope_head_dim`` per layer.
* **DSA** (``is_deepseek_dsa``): an indexer key row per layer that computes its own top-k
  (``dsa_layer_skips_topk``); kvledger's facts mark the others ``shares_with``.
* **Mamba / linear attention** (``configs/hybrid_arch.py``: ``mambaish_config``): only the
  full-attention layers enter the KV cell (``DefaultPoolConfigurator.__init__``), and the
  recurrent states form a separate per-request pool (``configs/mamba_utils.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kvledger.derive.layers import (
    MLA,
    Attention,
    ChunkedAttention,
    Indexer,
    Kind,
    ModelFacts,
    RecurrentState,
    Role,
    SlidingAttention,
)
from kvledger.plan.engines.sglang import dsv4, encoder_decoder, hybrid_swa, served
from kvledger.plan.engines.sglang.context import context_length, text_config
from kvledger.plan.engines.sglang.releases.profile import sglang_words
from kvledger.records import record

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    from kvledger.plan.engines.sglang.releases.profile import SglangRelease


class SglangLayoutError(ValueError):
    """SGLang's layout for this model or option is not reproduced: refused, not guessed."""


# configs/model_config.py: is_hybrid_swa_model lists these too, but they compress or split
# their SWA layers in ways not reproduced here (hybrid_swa.py holds the ones that are), so
# they are refused by name rather than sized plainly.
HYBRID_SWA_NOT_REPRODUCED = frozenset({
    "MiMoV2ForCausalLM", "Step3p5ForCausalLM", "Step3p7ForConditionalGeneration",
    "BeamForCausalLM", "MellumForCausalLM",
    "GraniteSWAForCausalLM", "GraniteMoeSWAForCausalLM", "IQuestQ1ForCausalLM",
    "InklingForConditionalGeneration", "EmbeddingGemma2Model",
    "Gemma4UnifiedForConditionalGeneration", "DiffusionGemmaForBlockDiffusion",
    "UnlimitedOCRForCausalLM",
})
# configs/model_config.py: _derive_model_shapes, the branches that set AttentionArch.MLA
# with kv_lora_rank + qk_rope_head_dim (the first list, and the Kimi-Linear / Kimi-K3 branch;
# GLM-5.3's KDA hybrid is refused as KDA below, MiniCPM3 sets no v_head_dim).
MLA_ARCHS = frozenset({
    "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM",
    "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM", "KimiK25ForConditionalGeneration",
    "MistralLarge3ForCausalLM", "LongcatFlashForCausalLM", "GigaChat35ForCausalLM",
    "KimiLinearForCausalLM", "KimiK3LinearForCausalLM", "KimiK3ForConditionalGeneration",
})
# configs/model_config.py: _derive_model_shapes, "MiniCPM3ForCausalLM" branch: AttentionArch.MLA
# with the config's kv_lora_rank and qk_rope_head_dim, so SGLang's pool keeps the latent row
# (kv_lora_rank + qk_rope_head_dim per layer) where kvledger's facts — vLLM's minicpm3.py,
# which caches full K/V — hold whole heads. (Oracle case cov-minicpm3: 288 × 62 × 2 = 35,712
# B/token, not the 952,320 of full K/V.)
MLA_FROM_CONFIG_ARCHS = frozenset({"MiniCPM3ForCausalLM"})
# Layers with no attention (DeciLM's no_op blocks) that SGLang still gives a pool slot:
# ModelConfig.get_total_num_kv_heads' "nemotron-nas" branch takes the one KV head count of
# the attention blocks (raising "Variable GQA (VGQA) is not yet supported" otherwise), and
# resolve_layer_indices (layer_setup.py) counts all num_hidden_layers. Oracle case
# cov-nemotron-nas: 80 layers × 8 heads × 256 × 2 B = 327,680 B/token, 31 of them no-op.
NO_OP_SLOTTED_ARCHS = frozenset({"DeciLMForCausalLM"})
# configs/model_config.py: is_deepseek_dsa (with index_topk in the config).
DSA_ARCHS = frozenset({
    "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM",
})
# configs/hybrid_arch.py: mamba2_config / hybrid_gdn_config, the config classes whose states
# are Mamba2 (Nemotron-H, Falcon-H1, Granite-4), Gated DeltaNet (Qwen3-Next, Qwen3.5) or
# LFM2's short convolution (Lfm2Config / Lfm2VlConfig, sized as a conv-only Mamba2 state).
STATE_KINDS = ("mamba2", "gated_delta_net", "short_conv", "kda", "mamba1")
# configs/hybrid_arch.py: kimi_linear_config — a KimiLinearConfig (top level or text_config)
# makes these KDA hybrids: MLA on the full-attention layers, a KDA state per linear layer
# (KimiLinearConfig.mamba2_cache_params). GLM-5.3's glm5_next_config takes the same state
# shape but adds DSA indexers and mHC; no oracle case could run it on CPU, so it stays refused.
KDA_ARCHS = frozenset({
    "KimiLinearForCausalLM", "KimiK3LinearForCausalLM", "KimiK3ForConditionalGeneration",
})
# configs/model_config.py PURE_MAMBA1_ARCHITECTURES: pure selective-scan (Mamba-1) models, no
# attention layer (AttentionArch.SSM). Their configs (configs/mamba.py: _mamba1_cache_params)
# pool one full-rank state per layer, and DefaultPoolConfigurator sizes the empty KV pool at
# the context length (pool_configurator.py: _zero_kv_max_tokens). Both of SGLang's are
# listed, each checked by an oracle case: cov-falcon-mamba, and cov-mamba
# (state-spaces/mamba-130m-hf; configs/mamba.py MambaConfig has the same hooks).
PURE_MAMBA1_ARCHS = frozenset({"FalconMambaForCausalLM", "MambaForCausalLM"})
# configs/model_config.py PURE_SSM_ARCHITECTURES: the Mamba-1 ones and Mamba2ForCausalLM
# (configs/mamba2.py Mamba2Config: Mamba2StateShape.create over every layer, as the Mamba2
# hybrids', with Mamba2CacheParams' default dtype). No attention layer: the KV pool is sized
# at the context length like Mamba-1's. Oracle case cov-mamba2 (Mamba-Codestral).
PURE_SSM_ARCHS = PURE_MAMBA1_ARCHS | {"Mamba2ForCausalLM"}
# configs/model_config.py ModelConfig.__init__: multimodal is off by default for these.
MULTIMODAL_DISABLED_ARCHS = frozenset({
    "Gemma3ForConditionalGeneration", "Llama4ForConditionalGeneration",
    "Step3VLForConditionalGeneration", "InklingForConditionalGeneration",
})
# configs/model_config.py: multimodal_breakable_cuda_graph_supported_model_archs (those of
# them kvledger has facts for): a multimodal model keeps the prefill CUDA graph only here.
MULTIMODAL_PREFILL_GRAPH_ARCHS = frozenset({
    "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
    "KimiK25ForConditionalGeneration",
})
# arg_groups/overrides.py: _MAMBA_EXTRA_BUFFER_ARCHS (supports_mamba_cache_extra_buffer,
# with the default triton linear-attention backend): "auto" resolves to extra_buffer here
# when the overlap scheduler is on or pages are > 1; the other radix archs take no_buffer.
MAMBA_EXTRA_BUFFER_ARCHS = frozenset({
    "KimiLinearForCausalLM", "KimiK3ForConditionalGeneration", "Qwen3NextForCausalLM",
    "Qwen3_5MoeForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForCausalLM", "Qwen3_5ForCausalLM",
    "MiniCPMV4_6ForConditionalGeneration", "NemotronHForCausalLM", "FalconH1ForCausalLM",
    "GraniteMoeHybridForCausalLM",
})
# arg_groups/overrides.py: _DEEPSEEK_FAMILY_ARCHS in arg_groups/overrides.py — these use
# trtllm_mla (page 64) on Blackwell (model_overrides/deepseek_v2.py).
DEEPSEEK_FAMILY_ARCHS = frozenset({
    "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "KimiK25ForConditionalGeneration",
    "GlmMoeDsaForCausalLM",
})


@record(frozen=True)
class Heads:
    """One pool's K/V geometry as SGLang's ModelConfig holds it (whole model, before TP)."""

    kv_heads: int
    head_dim: int
    v_head_dim: int
    dtype: str


@record(frozen=True)
class MlaDims:
    kv_lora_rank: int
    qk_rope_head_dim: int
    dtype: str


@record(frozen=True)
class DsaIndexer:
    index_head_dim: int
    index_kpool: int
    layers: tuple[int, ...]  # layers that keep their own index keys


@record(frozen=True)
class SglangModel:
    """What SGLang's pool configurators read, for one model."""

    model: str
    architecture: str
    attention_arch: str  # "MHA", "MLA" or "SSM" (no attention cache)
    num_layers: int  # num_hidden_layers (the decoder), as ModelLayerInfo counts it
    full_layers: tuple[int, ...]  # layer ids in the full (or only) KV pool
    swa_layers: tuple[int, ...]  # hybrid SWA only
    hybrid_swa: bool
    sliding_window: int | None  # what the model reports to SGLang (hybrid SWA only)
    heads: Heads | None  # MHA full layers
    swa_heads: Heads | None
    mla: MlaDims | None
    dsa: DsaIndexer | None
    states: tuple[RecurrentState, ...]  # recurrent layers (Mamba2 / GDN), whole model
    nextn_layers: int  # num_nextn_predict_layers (MTP), 0 when the config has none
    context_len: int  # get_context_length (before --context-length)
    model_dtype: str  # ModelConfig.dtype as SGLang resolves "auto"
    checkpoint_kv_fp8: bool  # the checkpoint's quant config says FP8 KV (kv_cache_quant_algo)
    multimodal: bool
    config: Mapping[str, Any]
    backend: str = "native"  # the class SGLang's loader builds: "native" or "transformers"
    # Pool entries each request's encoder input takes beside its tokens (Whisper's audio
    # frames: encoder_decoder.encoder_tokens); 0 for decoder-only models.
    encoder_tokens: int = 0

    @property
    def mambaish(self) -> bool:
        return bool(self.states)

    @property
    def kda(self) -> bool:
        return any(s.state_kind == "kda" for s in self.states)


_text = text_config  # SGLang's get_hf_text_config (context.py)


def model_dtype(config: Mapping[str, Any], architecture: str) -> str:
    """``_get_and_verify_dtype(…, "auto")`` (configs/model_config.py): the config's dtype;
    a float32 (or missing) one serves in float16, except Gemma (bfloat16). gpt-oss is set
    to bfloat16 by its model override (``model_overrides/gpt_oss.py``)."""
    if architecture == "GptOssForCausalLM":
        return "bfloat16"
    text = _text(config)
    views: list[Mapping[str, Any]] = [text, config]
    thinker = config.get("thinker_config")
    if isinstance(thinker, Mapping):
        # get_hf_text_config overwrites the thinker's text_config dtype with the thinker's
        # own (itself the top level's when unset).
        views = [thinker, config]
    stated = next((v.get("dtype") or v.get("torch_dtype") for v in views
                   if v.get("dtype") or v.get("torch_dtype")), None)
    names = {"float32": "float32", "float": "float32", "float16": "float16",
             "half": "float16", "bfloat16": "bfloat16"}
    dtype = names.get(str(stated).lower(), "float32") if stated else "float32"
    if dtype == "float32":
        model_type = str(text.get("model_type") or config.get("model_type") or "")
        return "bfloat16" if model_type.startswith("gemma") else "float16"
    return dtype


def _fp8_scheme(scheme: Any, *, static_per_tensor: bool) -> bool:
    if not isinstance(scheme, Mapping):
        return False
    fp8 = scheme.get("type") == "float" and scheme.get("num_bits") == 8
    if not static_per_tensor:
        return fp8
    # CompressedTensorsKVCacheMethod.is_supported_scheme: static symmetric per-tensor only.
    return fp8 and scheme.get("strategy") == "tensor" and bool(scheme.get("symmetric", True)) \
        and not scheme.get("dynamic", False)


def _checkpoint_kv_fp8(facts: ModelFacts) -> bool:
    """``configure_kv_cache_dtype`` with ``auto`` (mem_cache/kv_cache_dtype.py) stores fp8 when
    the loaded quant config's ``kv_cache_quant_algo`` is "FP8". Which config SGLang loads
    (``model_loader/weight_utils.get_quant_config``): config.json's ``quantization_config``
    when there is one — ModelOpt's flat form reads ``kv_cache_scheme`` only as a dict
    (``ModelOptQuantConfig``), else its ``kv_cache_quant_algo`` key; Fp8Config the same key;
    compressed-tensors a static per-tensor fp8 ``kv_cache_scheme`` — and only without one,
    ``hf_quant_config.json``'s ``quantization.kv_cache_quant_algo``. (So a ModelOpt config.json
    whose ``kv_cache_scheme`` is the bare string "FP8" serves bf16 KV: SGLang's oracle agrees.)
    """
    for view in (_text(facts.config), facts.config):
        qc = view.get("quantization_config")
        if not isinstance(qc, Mapping):
            continue
        method = str(qc.get("quant_method") or "").lower()
        if method == "compressed-tensors":
            return _fp8_scheme(qc.get("kv_cache_scheme"), static_per_tensor=True)
        if isinstance(qc.get("kv_cache_scheme"), Mapping):
            return _fp8_scheme(qc.get("kv_cache_scheme"), static_per_tensor=False)
        return str(qc.get("kv_cache_quant_algo") or "").upper() == "FP8"
    return facts.kv_dtype_source == "hf_quant_config" and facts.kv_dtype == "fp8_e4m3"


def _multimodal(config: Mapping[str, Any], arch: str) -> bool:
    """``ModelConfig.is_multimodal``: a vision or audio tower, unless the architecture is one
    SGLang serves text-only by default (``enable_multimodal`` off). Whisper has no tower key
    but is in SGLang's ``multimodal_model_archs`` (``is_multimodal_model``)."""
    if arch == encoder_decoder.WHISPER:
        return True
    tower = any(isinstance(config.get(k), Mapping) for k in ("vision_config", "audio_config"))
    return tower and arch not in MULTIMODAL_DISABLED_ARCHS


def vision_tower(config: Mapping[str, Any]) -> tuple[int, int] | None:
    """(layers, hidden size) of the vision tower as ``adjust_mem_fraction_for_vlm`` reads
    them: ``num_hidden_layers`` (24 when the config names it otherwise — SGLang's default, which
    is what it reads for Qwen3.5's ``depth``), ``hidden_size`` (default 1024)."""
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        return None
    return int(vision.get("num_hidden_layers") or 24), int(vision.get("hidden_size") or 1024)


def _uniform_heads(layers: Sequence[Attention], what: str, model: str,
                   release: SglangRelease | None = None) -> Heads:
    shapes = {(a.k_heads, a.k_dim, a.v_heads, a.v_dim) for a in layers}
    if len(shapes) > 1:
        raise SglangLayoutError(
            f"{model}: its {what} layers differ in K/V heads or dims ({sorted(shapes)}); "
            f"{sglang_words(release)} sizes every layer of a pool with one head count and dim "
            "(ModelConfig), so its number for this model is not reproduced"
        )
    k_heads, k_dim, v_heads, v_dim = shapes.pop()
    if k_heads != v_heads:
        raise SglangLayoutError(
            f"{model}: K and V head counts differ ({k_heads} vs {v_heads}); SGLang's "
            "MHA pool has one head count for both"
        )
    return Heads(k_heads, k_dim, v_dim, layers[0].dtype)


def _refuse(facts: ModelFacts, why: str) -> SglangLayoutError:
    arch = facts.architectures[0] if facts.architectures else facts.model_type
    return SglangLayoutError(f"{facts.model} ({arch}): {why}")


def _mla_from_config(facts: ModelFacts, text: Mapping[str, Any],
                     attention: Sequence[Attention]) -> list[Any]:
    """The decoder attention layers of an ``MLA_FROM_CONFIG_ARCHS`` model, which SGLang stores
    as latent rows (its ModelConfig reads the two dims straight from the config)."""
    for key in ("kv_lora_rank", "qk_rope_head_dim"):
        value = text.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise _refuse(facts, f"SGLang sizes this architecture's KV as MLA from the config's "
                                 f"{key}, which is {value!r}")
    return list(attention)


def _slot_pool_model(facts: ModelFacts, arch: str, text: Mapping[str, Any],
                     decoder: Sequence[Any], loader: str) -> SglangModel:
    """Mllama / Whisper: one token pool with a slot per self- *and* cross-attention layer
    (and, for Whisper, per encoder layer), all of ModelConfig's one geometry
    (``encoder_decoder.py`` cites the rule)."""
    attention = [layer for layer in decoder if isinstance(layer, Attention)]
    others = [layer for layer in decoder
              if not isinstance(layer, Attention) and layer.kind is not Kind.NONE]
    if others or not attention:
        raise _refuse(facts, "encoder-decoder caches other than self- and cross-attention "
                             "are not reproduced for SGLang")
    try:
        pool = encoder_decoder.slot_pool(arch, text, attention)
        encoder = encoder_decoder.encoder_tokens(arch, text)
    except encoder_decoder.Unreproduced as exc:
        raise _refuse(facts, str(exc)) from None
    config = facts.config
    return SglangModel(
        model=facts.model, architecture=arch, attention_arch="MHA",
        num_layers=pool.slots, full_layers=tuple(range(pool.slots)), swa_layers=(),
        hybrid_swa=False, sliding_window=None,
        heads=Heads(pool.kv_heads, pool.head_dim, pool.head_dim, attention[0].dtype),
        swa_heads=None, mla=None, dsa=None, states=(), nextn_layers=0,
        context_len=context_length(text), model_dtype=model_dtype(config, arch),
        checkpoint_kv_fp8=_checkpoint_kv_fp8(facts), multimodal=_multimodal(config, arch),
        config=config, backend=loader, encoder_tokens=encoder)


def _dsv4_model(facts: ModelFacts, arch: str, text: Mapping[str, Any],
                loader: str) -> SglangModel:
    """DeepSeek-V4: ``dsv4.py`` sizes its pools from the config (``DSV4PoolConfigurator``);
    this view carries what the rest of the layout reads (``attention_arch`` MHA, as
    ``_derive_model_shapes``' V4 branch sets it)."""
    try:
        geo = dsv4.geometry(text)
    except dsv4.Unreproduced as exc:
        raise _refuse(facts, f"SGLang's DeepSeek-V4 pool: {exc}") from None
    config = facts.config
    return SglangModel(
        model=facts.model, architecture=arch, attention_arch="MHA",
        num_layers=geo.num_layers, full_layers=tuple(range(geo.num_layers)), swa_layers=(),
        hybrid_swa=False, sliding_window=geo.window, heads=None, swa_heads=None, mla=None,
        dsa=None, states=(), nextn_layers=0, context_len=context_length(text),
        model_dtype=model_dtype(config, arch), checkpoint_kv_fp8=False,
        multimodal=_multimodal(config, arch), config=config, backend=loader)


def build(facts: ModelFacts, release: SglangRelease | None = None) -> SglangModel:
    """SGLang's view of ``facts`` (whole model, before parallelism), or a named refusal."""
    arch = facts.architectures[0] if facts.architectures else ""
    config = facts.config
    text = _text(config)
    try:
        loader = served.backend(facts.architectures, facts.model_type, release)
    except served.NotServed as exc:
        raise _refuse(facts, f"{sglang_words(release)} cannot load this model: {exc}") from None
    if arch in HYBRID_SWA_NOT_REPRODUCED:
        raise _refuse(facts, f"{sglang_words(release)} gives this architecture a hybrid "
                             "sliding-window "
                             "pool whose layout kvledger does not reproduce yet")
    if arch == dsv4.ARCH:
        return _dsv4_model(facts, arch, text, loader)
    decoder = [layer for layer in facts.layers if layer.role is Role.DECODER]
    if any(layer.role is Role.DRAFT for layer in facts.layers):
        raise _refuse(facts, "a speculative draft model alone; SGLang serves it only beside "
                             "its target (plan the target with --speculative-method)")
    if arch in encoder_decoder.ARCHS:
        return _slot_pool_model(facts, arch, text, decoder, loader)
    if any(layer.role is Role.ENCODER for layer in facts.layers) or any(
            layer.kind is Kind.CROSS for layer in decoder):
        raise _refuse(facts, "encoder / cross-attention caches are not reproduced for SGLang")
    if any(layer.kind is Kind.COMPRESSED for layer in decoder):
        raise _refuse(facts, "compressed attention (DeepSeek-V4) pools are not reproduced "
                             "for SGLang")
    states = tuple(layer for layer in decoder if isinstance(layer, RecurrentState))
    odd = sorted({s.state_kind for s in states} - set(STATE_KINDS))
    if not odd and arch not in KDA_ARCHS and any(s.state_kind == "kda" for s in states):
        raise _refuse(facts, "recurrent state kind kda is not reproduced for SGLang outside "
                             "its Kimi-Linear architectures (GLM-5.3's KDA + DSA pool: "
                             "SGLang's own sizing of it could not be run)")
    if odd:
        raise _refuse(facts, f"recurrent state kind {', '.join(odd)} is not reproduced for "
                             f"SGLang (reproduced: {', '.join(STATE_KINDS)})")
    attention = [layer for layer in decoder if isinstance(layer, Attention)]
    mla = [layer for layer in decoder if isinstance(layer, MLA)]
    latent_from_config = arch in MLA_FROM_CONFIG_ARCHS
    if latent_from_config:
        attention, mla = [], _mla_from_config(facts, text, attention)
    indexers = [layer for layer in decoder if isinstance(layer, Indexer)]
    others = [layer for layer in decoder if not isinstance(layer, Attention | MLA | Indexer)
              and not isinstance(layer, RecurrentState) and layer.kind is not Kind.NONE]
    if others:
        raise _refuse(facts, f"layer {others[0].index} caches {others[0].kind} "
                             f"({type(others[0]).__name__}), which SGLang's pools do not hold "
                             "in a way kvledger reproduces")
    shared = [layer for layer in attention + mla if not layer.owns_memory]
    if shared and arch not in hybrid_swa.SLOTTED_SHARED_KV_ARCHS:
        raise _refuse(facts, f"layer {shared[0].index} reads another layer's KV; SGLang's "
                             "sharing of KV between layers is not reproduced")
    indices = sorted({layer.index for layer in decoder})
    num_layers = len(indices)
    hybrid = hybrid_swa.is_hybrid_swa(arch, text)
    if text.get("is_hybrid_swa") and not hybrid:
        raise _refuse(facts, "the config opts into SGLang's hybrid SWA pool "
                             "(is_hybrid_swa), which is not reproduced for it")
    if mla and attention:
        raise _refuse(facts, "MLA and standard attention layers in one model")
    if mla and arch not in MLA_ARCHS and not latent_from_config:
        raise _refuse(facts, f"MLA layers, but {sglang_words(release)} does not treat this "
                             "architecture as MLA (AttentionArch.MLA) in a way reproduced here")
    if indexers and arch not in DSA_ARCHS:
        raise _refuse(facts, "sparse-attention indexer caches outside SGLang's DSA "
                             "architectures are not reproduced")
    if states and not (attention or mla) and arch not in PURE_SSM_ARCHS:
        raise _refuse(facts, "a pure state-space model (no attention KV); SGLang's pure-SSM "
                             "pools are not reproduced")
    if any(s.state_kind == "mamba1" for s in states) and arch not in PURE_MAMBA1_ARCHS:
        raise _refuse(facts, "Mamba-1 states outside SGLang's PURE_MAMBA1_ARCHITECTURES "
                             "checked here are not reproduced")
    if mla and states and arch not in KDA_ARCHS:
        raise _refuse(facts, "MLA with recurrent layers outside SGLang's Kimi-Linear KDA "
                             "hybrids is not reproduced for SGLang")
    # Which attention layers go where.
    if hybrid:
        swa = [a for a in attention if isinstance(a, SlidingAttention | ChunkedAttention)]
        full = [a for a in attention if not isinstance(a, SlidingAttention | ChunkedAttention)]
    else:
        swa, full = [], list(attention)
    caching = {layer.index for layer in decoder if layer.kind is not Kind.NONE}
    empty = [i for i in indices if i not in caching]
    slotted_empty = bool(empty) and arch in NO_OP_SLOTTED_ARCHS and bool(full) and not swa
    if empty and not states and not slotted_empty:
        raise _refuse(facts, f"layer {empty[0]} caches nothing in the model, but SGLang's "
                             "pool gives every layer a slot of the model's one geometry; not "
                             "reproduced")
    heads = _uniform_heads(full, "full-attention", facts.model, release) if full else None
    swa_heads = _uniform_heads(swa, "sliding-window", facts.model, release) if swa else None
    window: int | None = None
    if swa:
        windows = {a.window if isinstance(a, SlidingAttention) else a.chunk
                   for a in swa if isinstance(a, SlidingAttention | ChunkedAttention)}
        if len(windows) > 1:
            raise _refuse(facts, f"sliding layers with different windows {sorted(windows)}")
        window = hybrid_swa.reported_window(arch, windows.pop())
        theirs = hybrid_swa.sglang_swa_layers(arch, text, num_layers)
        ours = tuple(sorted(a.index for a in swa))
        if theirs != ours:
            raise _refuse(facts, f"SGLang's get_hybrid_layer_ids puts layers {list(theirs)} in "
                                 f"its SWA pool, kvledger's facts slide layers {list(ours)}; "
                                 "not reproduced")
    mla_dims: MlaDims | None = None
    if mla:
        dims = {(int(text["kv_lora_rank"]), int(text["qk_rope_head_dim"]))} \
            if latent_from_config else {(m.latent_dim, m.rope_dim) for m in mla}
        if len(dims) > 1:
            raise _refuse(facts, f"MLA layers with different dims {sorted(dims)}")
        latent, rope = dims.pop()
        mla_dims = MlaDims(latent, rope, mla[0].dtype)
    dsa: DsaIndexer | None = None
    if indexers:
        owned = [ix for ix in indexers if ix.owns_memory]
        head_dims = {ix.head_dim for ix in indexers}
        if len(head_dims) > 1:
            raise _refuse(facts, f"indexer layers with different head dims {sorted(head_dims)}")
        kpool = int(getattr(indexers[0], "pool", 1) or 1)
        dsa = DsaIndexer(head_dims.pop(), kpool, tuple(ix.index for ix in owned))
    nextn = text.get("num_nextn_predict_layers")
    return SglangModel(
        model=facts.model,
        architecture=arch,
        attention_arch="MLA" if mla else ("MHA" if attention else "SSM"),
        num_layers=num_layers,
        full_layers=tuple(indices) if slotted_empty else
        tuple(sorted({layer.index for layer in (full or mla)})),
        swa_layers=tuple(sorted({a.index for a in swa})),
        hybrid_swa=bool(swa),
        sliding_window=window,
        heads=heads,
        swa_heads=swa_heads,
        mla=mla_dims,
        dsa=dsa,
        states=states,
        nextn_layers=nextn if isinstance(nextn, int) and not isinstance(nextn, bool) and
        nextn > 0 else 0,
        context_len=context_length(text),
        model_dtype=model_dtype(config, arch),
        checkpoint_kv_fp8=_checkpoint_kv_fp8(facts),
        multimodal=_multimodal(config, arch),
        config=config,
        backend=loader,
    )
