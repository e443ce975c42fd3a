"""Vision / audio towers and their projectors, counted from the towers' own configs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.derive.config import TEXT_CONFIG_KEYS
from kvledger.derive.params.towers_named import minicpmv_resampler, named_tower, named_towers
from kvledger.derive.params.vit import _tv, _vit

_TOWER_KEYS = ("vision_config", "audio_config", "speech_config", "audio_tower_config")
# Keys that name a tower whose sizes the config does not give.
_UNSIZED_TOWER_KEYS = ("img_processor", "mm_vision_tower", "vision_backbone", "vision_tower",
                       "embd_layer", "visual")
_UNCOUNTED_PARTS = ("talker_config", "token2wav_config")


_AUDIO_TOWER_KEYS = ("audio_config", "speech_config", "audio_tower_config")


def has_audio_tower(config: Mapping[str, Any]) -> bool:
    """Whether the config describes an audio / speech tower, at its top level or inside a
    wrapper's language-model config (Qwen2.5-Omni's thinker), as ``towers`` counts them."""
    if any(isinstance(config.get(key), Mapping) for key in _AUDIO_TOWER_KEYS):
        return True
    return any(isinstance(config.get(key), Mapping) and has_audio_tower(config[key])
               for key in TEXT_CONFIG_KEYS)


def towers(config: Mapping[str, Any], text_hidden: int) -> tuple[int, list[str]]:
    """(parameters, warnings) of the vision / audio towers and projectors a multimodal
    config describes. Counted for the tower types below from their own config keys and their
    config classes' defaults (transformers 5.19); another tower is counted by a generic ViT
    formula with a warning, or, where its config states no sizes, not counted, with a warning
    naming its likely size."""
    total = 0
    warnings: list[str] = []
    for key in TEXT_CONFIG_KEYS:  # a wrapper inside the wrapper (Qwen2.5-Omni's thinker)
        inner = config.get(key)
        if isinstance(inner, Mapping) and any(
                isinstance(inner.get(t), Mapping) for t in (*_TOWER_KEYS, *TEXT_CONFIG_KEYS)):
            n, warn = towers(inner, text_hidden)
            total += n
            warnings.extend(warn)
    for key in _UNSIZED_TOWER_KEYS:
        if config.get(key) and not isinstance(config.get("vision_config"), Mapping):
            warnings.append(f"the config names a tower ({key}) without a vision_config to size "
                            "it: not counted (vision towers hold 0.3–0.7 B parameters: the "
                            "estimate is low by that)")
            break
    for key in _UNCOUNTED_PARTS:
        if isinstance(config.get(key), Mapping):
            warnings.append(f"{key}: a part the checkpoint stores beside the language model "
                            "(a speech generator / vocoder) is not counted; a thinker-only model "
                            "does not load it; the stored bytes are low by its size")
    n, warn = named_towers(config, text_hidden)
    total += n
    warnings.extend(warn)
    vision = config.get("vision_config")
    if isinstance(vision, Mapping):
        n, warn = _vision(config, vision, text_hidden)
        total += n
        warnings.extend(warn)
    for key in _AUDIO_TOWER_KEYS:
        sub = config.get(key)
        if isinstance(sub, Mapping):
            h, n = _vit(sub, gated=False, ln=True)
            if n:
                total += n + h * text_hidden
                warnings.append(f"{key} ({sub.get('model_type', '?')}): counted by a generic "
                                f"encoder formula, {n / 1e6:,.0f} M parameters; likely error "
                                "±10 % of the tower")
            else:
                warnings.append(f"{key} ({sub.get('model_type', '?')}) states no sizes: its "
                                "tower is not counted (audio encoders hold 0.3–0.7 B "
                                "parameters)")
    return total, warnings


def towers_unused(config: Mapping[str, Any]) -> int:
    """Tower parameters the model never uses: a LLaVA-style wrapper feeds its projector from
    ``vision_feature_layer`` (negative: counted from the end), so the CLIP / SigLIP layers
    after it and the encoder's post-LayerNorm take no part in the forward pass (transformers
    llava ``get_image_features`` reads ``hidden_states[vision_feature_layer]``). An engine
    may leave them unloaded (plan/weights.py says which)."""
    v = config.get("vision_config")
    layer = config.get("vision_feature_layer")
    if not isinstance(v, Mapping) or isinstance(layer, bool) or not isinstance(layer, int) or \
            layer >= -1:
        return 0
    mt = str(v.get("model_type") or "")
    if mt not in ("clip_vision_model", "siglip_vision_model"):
        return 0
    h = _tv(v, "hidden_size", 768)
    depth = _tv(v, "num_hidden_layers", 12)
    _, one = _vit({"hidden_size": h, "num_hidden_layers": 1,
                   "intermediate_size": v.get("intermediate_size", 3072)}, gated=False, ln=True)
    dropped = min(depth, -layer - 1)
    return dropped * one + 2 * h


def _vision(config: Mapping[str, Any], v: Mapping[str, Any],
            text_hidden: int) -> tuple[int, list[str]]:
    mt = str(v.get("model_type") or config.get("model_type") or "")
    top = str(config.get("model_type") or "")
    named = named_tower(config, v, text_hidden)
    if named is not None:
        return named
    if top == "qwen2_vl" or mt == "qwen2_vl":
        # Qwen2VisionTransformer (qwen2_vl.py): Conv3d patch embed (no bias), LayerNorm blocks
        # with fused biased qkv and a plain GELU MLP (embed_dim × mlp_ratio), the patch merger
        # (LayerNorm, 4·e → 4·e → hidden). Qwen2VLVisionConfig defaults: depth 32,
        # embed_dim 1280, mlp_ratio 4, in_chans 3, patch 14, temporal 2, merge 2.
        e = _tv(v, "embed_dim", 1280)
        d = {"hidden_size": e, "depth": _tv(v, "depth", 32),
             "mlp_ratio": v.get("mlp_ratio", 4)}
        _, blocks = _vit(d, gated=False, ln=True)
        patch = _tv(v, "in_chans", v.get("in_channels", 3)) * \
            _tv(v, "temporal_patch_size", 2) * _tv(v, "spatial_patch_size",
                                                         v.get("patch_size", 14)) ** 2 * e
        merge = _tv(v, "spatial_merge_size", 2) ** 2 * e
        out = _tv(v, "hidden_size", text_hidden)
        merger = 2 * e + merge * merge + merge + merge * out + out
        return patch + blocks + merger, []
    if top == "qwen2_5_vl" or mt == "qwen2_5_vl":
        # Qwen2_5_VisionTransformer (qwen2_5_vl.py): RMSNorm blocks, biased qkv/proj, gated
        # biased MLP (intermediate_size), merger RMSNorm + 4·e → 4·e → out_hidden_size.
        e = _tv(v, "hidden_size", 1280)
        inter = _tv(v, "intermediate_size", 3420)
        d = {"hidden_size": e, "depth": _tv(v, "depth", 32), "intermediate_size": inter}
        _, blocks = _vit(d, gated=True, ln=False)
        patch = _tv(v, "in_chans", v.get("in_channels", 3)) * \
            _tv(v, "temporal_patch_size", 2) * _tv(v, "patch_size", 14) ** 2 * e
        merge = _tv(v, "spatial_merge_size", 2) ** 2 * e
        out = _tv(v, "out_hidden_size", text_hidden)
        return patch + blocks + e + merge * merge + merge + merge * out + out, []
    if mt == "mllama_vision_model" or top == "mllama":
        return _mllama_vision(v, text_hidden), []
    if mt == "gemma4_vision":
        # Gemma4VisionModel (transformers gemma4): patch Linear(3·p², h), a 2-D position
        # table (2 × position_embedding_size × h), gated MLP layers with q/k/v norms and four
        # norms a layer, no biases; the projector RMSNorm-free Linear(h, text hidden).
        h = _tv(v, "hidden_size", 1152)
        p = _tv(v, "patch_size", 16)
        heads = _tv(v, "num_attention_heads", 16)
        hd = _tv(v, "head_dim", h // heads)
        d = {"hidden_size": h, "num_hidden_layers": v.get("num_hidden_layers", 27),
             "intermediate_size": v.get("intermediate_size", 4304)}
        _, blocks = _vit(d, gated=True, ln=False, qkv_bias=False, mlp_bias=False,
                         qk_norm=2 * hd, norms=4)
        pos = 2 * _tv(v, "position_embedding_size", 10240) * h
        return 3 * p * p * h + pos + blocks + h * text_hidden, [
            "gemma4_vision tower: counted from its config (patch, positions, layers, "
            "projector); small norms not checked, likely error under 0.1 % of the tower"]
    if mt in ("siglip_vision_model", "siglip2_vision_model", "clip_vision_model", "siglip"):
        # SigLIP / CLIP vision (siglip.py, clip.py): Conv2d patch embed with bias, learned
        # positions ((image/patch)² [+1 class token for CLIP]), LayerNorm blocks with biased
        # attention and plain MLP, post LayerNorm; the wrapper's projector (Gemma 3:
        # RMSNorm + hidden × text hidden; LLaVA: two biased linears).
        h = _tv(v, "hidden_size", 768)
        p = _tv(v, "patch_size", 16 if "siglip" in mt else 32)
        img = _tv(v, "image_size", 224)
        d = {"hidden_size": h, "num_hidden_layers": v.get("num_hidden_layers", 12),
             "intermediate_size": v.get("intermediate_size", 3072)}
        _, blocks = _vit(d, gated=False, ln=True)
        clip = mt.startswith("clip")
        positions = (img // p) ** 2 + (1 if clip else 0)
        # CLIP's patch conv has no bias; it adds a class embedding and a pre-LayerNorm.
        n = 3 * p * p * h + (0 if clip else h) + positions * h + blocks + 2 * h
        if clip:
            n += h + 2 * h
        if top in ("gemma3",):
            n += h + h * text_hidden  # mm_soft_emb_norm, mm_input_projection_weight
            return n, []
        if top == "minicpmv":
            # vLLM minicpmv.py: the SigLIP tower is Idefics2VisionTransformer (the same
            # tensors, post-LayerNorm kept), its projector the resampler.
            q = _tv(config, "query_num", 64)
            return n + minicpmv_resampler(h, text_hidden, q), _minicpmv_extra(config)
        if top == "paligemma":
            n += h * text_hidden + text_hidden  # multi_modal_projector.linear with its bias
            return n, []
        n += h * text_hidden + text_hidden + text_hidden * text_hidden + text_hidden
        return n, [f"{mt} tower with a {top} projector: counted as LLaVA's two-layer MLP "
                   "projector; likely error under 1 % of the tower"]
    h, n = _vit(v, gated=False, ln=True)
    if n:
        return n + h * text_hidden, [
            f"vision tower {mt or '?'}: counted by a generic ViT formula ({n / 1e6:,.0f} M "
            "parameters: attention, MLP, norms; patch embedding and projector approximate): "
            "likely error ±10 % of the tower"]
    return 0, [f"vision tower {mt or '?'}: its vision_config states no sizes, so it is not "
               "counted (vision towers hold 0.3–0.7 B parameters: the estimate is low by that)"]


def _mllama_vision(v: Mapping[str, Any], text_hidden: int) -> int:
    """Llama 3.2 Vision's tower (transformers ``modeling_mllama.py`` ``MllamaVisionModel``,
    ``MllamaVisionConfig`` defaults): a bias-free patch Conv2d, the class embedding, the gated
    position embedding (gate, (image/patch)² + 1 positions, a tile table of
    (max_aspect_ratio_id + 1) × tiles × positions × hidden), gated pre- and post-tile
    aspect-ratio tables ((max_aspect_ratio_id + 1) × tiles × hidden each), two LayerNorms;
    ``num_hidden_layers`` encoder layers and ``num_global_layers`` gated ones (two more
    scalars each) of bias-free attention, a biased GELU MLP and two LayerNorms; the projector
    a biased Linear(vision_output_dim, text hidden)."""
    h = _tv(v, "hidden_size", 1280)
    p = _tv(v, "patch_size", 14)
    img = _tv(v, "image_size", 448)
    tiles = _tv(v, "max_num_tiles", 4)
    ratios = v.get("supported_aspect_ratios")
    ratio_ids = len(ratios) if isinstance(ratios, list) else 8
    positions = (img // p) ** 2 + 1
    inter = _tv(v, "intermediate_size", 5120)
    per = 4 * h * h + 2 * h * inter + inter + h + 4 * h
    layers = _tv(v, "num_hidden_layers", 32)
    global_layers = _tv(v, "num_global_layers", 8)
    out_dim = _tv(v, "vision_output_dim", 7680)
    n = _tv(v, "num_channels", 3) * p * p * h + h
    n += 1 + positions * h + (ratio_ids + 1) * tiles * positions * h
    n += 2 * ((ratio_ids + 1) * tiles * h + 1)
    n += 4 * h + layers * per + global_layers * (per + 2)
    return n + out_dim * text_hidden + text_hidden


def _minicpmv_extra(config: Mapping[str, Any]) -> list[str]:
    """A MiniCPM-V derivative's parts vLLM's MiniCPMV does not build (Scicore-Omics' gene
    module, ``use_gene_module`` with ``gene_config``): named, not counted."""
    if config.get("use_gene_module") or isinstance(config.get("gene_config"), Mapping):
        return ["minicpmv: the config adds a gene module (gene_config: an encoder, a Q-Former "
                "and a projector) that vLLM's MiniCPMV does not build: not counted; the "
                "stored bytes are higher by its size (92.4 M parameters, by elimination, in "
                "OpenBMB/Scicore-Omics: 1.1 % of that checkpoint)"]
    return []
