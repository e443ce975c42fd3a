"""Towers whose layout a generic ViT formula misses, counted from the modules that build them:
DeepSeek-OCR (SAM ViT-B + CLIP-L) and DeepSeek-OCR-2 (SAM ViT-B + a Qwen2 encoder), RiceViT
(LLaVA-OneVision-1.5), MoonViT (LocateAnything, Kimi-VL), MiniCPM-V's resampler and
VideoLLaMA3's SigLIP encoder. Each function names the file it was read from; every count was
checked against a real checkpoint's stored total (README, "Weights against real checkpoints")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.derive.params.vit import _tv, _vit


def named_tower(config: Mapping[str, Any], v: Mapping[str, Any],
                text_hidden: int) -> tuple[int, list[str]] | None:
    """(parameters, warnings) of a ``vision_config`` tower of a type counted here, None for
    another type."""
    mt = str(v.get("model_type") or "")
    top = str(config.get("model_type") or "")
    arch = " ".join(str(a) for a in config.get("architectures") or ())
    if mt == "vision" and ("DeepseekOCR" in arch or v.get("model_name") in
                           ("deeplip_b_l", "deepencoderv2")):
        return _deepseek_ocr(config, v)
    if mt == "rice_vit":
        return _rice_vit(v, text_hidden), []
    if mt == "moonvit":
        return _moonvit(v, top, text_hidden)
    if mt in ("qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe"):
        return _qwen3_vision(v, text_hidden), []
    return None


def named_towers(config: Mapping[str, Any], text_hidden: int) -> tuple[int, list[str]]:
    """Towers described under a key other than ``vision_config``: VideoLLaMA3's
    ``vision_encoder_config``."""
    enc = config.get("vision_encoder_config")
    if not isinstance(enc, Mapping) or \
            str(enc.get("model_type") or "") != "videollama3_vision_encoder":
        return 0, []
    return _videollama3(config, enc, text_hidden), []


# -- DeepSeek-OCR / OCR-2 ------------------------------------------------------------------

def _sam_vit_b(last_conv: int) -> int:
    """vLLM deepencoder.py ``build_sam_vit_b`` / ``ImageEncoderViT`` (sizes fixed in the code,
    not read from the config): a biased Conv2d(3, 768, 16) patch embedding, an absolute
    position table 64 × 64 × 768, 12 blocks (LayerNorms, biased qkv and proj, a biased
    768 → 3072 → 768 MLP, decomposed relative positions 2 × (2·s − 1) × 64 with s = 14 for
    the windowed blocks and 64 for the global ones 2, 5, 8, 11), the neck (1×1 conv
    768 → 256, LayerNorm2d, 3×3 conv 256 → 256, LayerNorm2d) and two 3×3 convs 256 → 512 →
    ``last_conv`` (1024; 896 in deepseek_ocr2.py), convs without biases."""
    e, head_dim = 768, 64
    n = 3 * 16 * 16 * e + e + 64 * 64 * e
    for i in range(12):
        side = 64 if i in (2, 5, 8, 11) else 14
        n += 4 * e + 3 * e * e + 3 * e + e * e + e + 2 * e * 4 * e + 4 * e + e
        n += 2 * (2 * side - 1) * head_dim
    n += e * 256 + 2 * 256 + 9 * 256 * 256 + 2 * 256
    return n + 9 * 256 * 512 + 9 * 512 * last_conv


def _clip_l() -> int:
    """vLLM deepseek_ocr.py: ``DeepCLIPVisionTransformer`` on a ``CLIPVisionConfig`` fixed in
    the code (hidden 1024, MLP 4096, 24 layers, image 224, patch 14): the class embedding,
    a bias-free patch Conv2d, 257 positions, the pre-LayerNorm and CLIPEncoder layers (biased
    fused qkv and out_proj, biased fc1/fc2, two LayerNorms); no post-LayerNorm."""
    h, inter = 1024, 4096
    n = h + 3 * 14 * 14 * h + 257 * h + 2 * h
    return n + 24 * (4 * h + 4 * h * h + 4 * h + 2 * h * inter + inter + h)


def _qwen2_encoder() -> int:
    """vLLM deepencoder2.py ``build_qwen2_decoder_as_encoder``: a Qwen2Model (hidden 896, 24
    layers, 14 heads, 2 KV heads of 64, MLP 4864, q/k/v biases) without its token embedding,
    its final RMSNorm, and the learned queries ``query_768`` (144 × 896) and ``query_1024``
    (256 × 896)."""
    h, kv = 896, 2 * 64
    per = h * h + h + 2 * (h * kv + kv) + h * h + 3 * h * 4864 + 2 * h
    return 24 * per + h + (144 + 256) * h


def _deepseek_ocr(config: Mapping[str, Any], v: Mapping[str, Any]) -> tuple[int, list[str]]:
    """DeepSeek-OCR (vLLM deepseek_ocr.py ``DeepseekOCRForCausalLM``: ``sam_model``,
    ``vision_model``, ``projector``, ``image_newline`` and ``view_seperator`` of n_embed each)
    or DeepSeek-OCR-2 (deepseek_ocr2.py: ``sam_model`` ending in 896 channels,
    ``qwen2_model``, ``projector``, ``view_seperator``); the projector is deepseek_vl2.py
    ``MlpProjector`` from ``projector_config``."""
    arch = " ".join(str(a) for a in config.get("architectures") or ())
    two = "OCR2" in arch or v.get("model_name") == "deepencoderv2"
    proj = config.get("projector_config")
    pc: Mapping[str, Any] = proj if isinstance(proj, Mapping) else {}
    n_embed = _tv(pc, "n_embed", 2048)
    projector, warnings = _mlp_projector(pc)
    if two:
        return _sam_vit_b(896) + _qwen2_encoder() + projector + n_embed, warnings
    return _sam_vit_b(1024) + _clip_l() + projector + 2 * n_embed, warnings


def _mlp_projector(pc: Mapping[str, Any]) -> tuple[int, list[str]]:
    """vLLM deepseek_vl2.py ``MlpProjector`` (``MlpProjectorConfig`` defaults: type
    downsample_mlp_gelu, input 1152, n_embed 2048, depth 2, mlp_ratio 1, downsample 2):
    ``linear`` one biased Linear(input, n_embed); ``downsample_mlp_gelu`` biased
    Linear(input · r², n_embed · ratio), depth − 2 of (n_embed · ratio)², one to n_embed."""
    kind = str(pc.get("projector_type") or "downsample_mlp_gelu")
    i, n = _tv(pc, "input_dim", 1152), _tv(pc, "n_embed", 2048)
    if kind == "linear":
        return i * n + n, []
    if kind == "downsample_mlp_gelu":
        r, depth, ratio = _tv(pc, "downsample_ratio", 2), _tv(pc, "depth", 2), \
            _tv(pc, "mlp_ratio", 1)
        w = n * ratio
        return i * r * r * w + w + max(depth - 2, 0) * (w * w + w) + w * n + n, []
    return i * n + n, [f"projector_type {kind!r}: vLLM's MlpProjector builds no such "
                       "projector; counted as one linear layer"]


# -- RiceViT, MoonViT, VideoLLaMA3, MiniCPM-V ------------------------------------------------

def _rice_vit(v: Mapping[str, Any], text_hidden: int) -> int:
    """LLaVA-OneVision-1.5's RiceViT (the checkpoint's own modelling_llavaonevision1_5.py
    ``RiceTransformer``; no vLLM model): a bias-free Conv2d(in_channels, h, patch) patch
    embedding, ``class_embedding`` (h) and ``class_pos_emb`` (head_dim / 2), a pre-LayerNorm,
    ``depth`` LayerNorm blocks with biased fused qkv and proj and a biased fc1/fc2 MLP, the
    merger (LayerNorm over h, biased Linear(4h, 4h) and Linear(4h, text_hidden_size))."""
    h = _tv(v, "hidden_size", 0) or _tv(v, "embed_dim", 1024)
    heads = _tv(v, "num_heads", 16) or 1
    d = {"hidden_size": h, "depth": _tv(v, "depth", 24),
         "intermediate_size": _tv(v, "intermediate_size", 4096)}
    _, blocks = _vit(d, gated=False, ln=True)
    p = _tv(v, "patch_size", 14)
    merged = _tv(v, "spatial_merge_size", 2) ** 2 * h
    out = _tv(v, "text_hidden_size", text_hidden)
    n = _tv(v, "in_channels", 3) * p * p * h + h + (h // heads) // 2 + 2 * h + blocks
    return n + 2 * h + merged * merged + merged + merged * out + out


def _moonvit(v: Mapping[str, Any], top: str, text_hidden: int) -> tuple[int, list[str]]:
    """MoonViT (vLLM moonvit.py ``MoonVitPretrainedModel``): a biased Conv2d(3, h, patch), the
    learned position table ``init_pos_emb_height`` × ``init_pos_emb_width`` × h, layers of
    two LayerNorms, biased wqkv / wo and a biased fc0/fc1 MLP, a final LayerNorm. Its
    projector: LocateAnything's ``mlp1`` (the checkpoint's modeling_locateanything.py:
    LayerNorm(4h), biased Linear(4h, text) and Linear(text, text)); Kimi-VL's (vLLM
    kimi_vl.py ``KimiVLMultiModalProjector``: LayerNorm(h), biased Linear(4h, 4h) and
    Linear(4h, text))."""
    h = _tv(v, "hidden_size", 1152)
    d = {"hidden_size": h, "num_hidden_layers": _tv(v, "num_hidden_layers", 27),
         "intermediate_size": _tv(v, "intermediate_size", 4304)}
    _, blocks = _vit(d, gated=False, ln=True)
    p = _tv(v, "patch_size", 14)
    table = _tv(v, "init_pos_emb_height", 64) * _tv(v, "init_pos_emb_width", 64) * h
    kernel = v.get("merge_kernel_size")
    merge = 4
    if isinstance(kernel, list) and len(kernel) == 2:
        merge = _tv({"k": kernel[0]}, "k", 2) * _tv({"k": kernel[1]}, "k", 2)
    m = merge * h
    n = 3 * p * p * h + h + table + blocks + 2 * h
    if top == "locateanything":
        return n + 2 * m + m * text_hidden + text_hidden + text_hidden * text_hidden + \
            text_hidden, []
    if top == "kimi_vl":
        return n + 2 * h + m * m + m + m * text_hidden + text_hidden, []
    return n + 2 * h + m * m + m + m * text_hidden + text_hidden, [
        f"moonvit tower with a {top or '?'} projector: counted with Kimi-VL's projector; "
        "likely error under 1 % of the tower"]


def _videollama3(config: Mapping[str, Any], enc: Mapping[str, Any], text_hidden: int) -> int:
    """VideoLLaMA3's vision encoder (no vLLM model; the checkpoint's tensors
    ``model.vision_encoder.*``): a SigLIP NaViT with a biased Conv2d(3, h, patch) and no
    position table (2-D rotary), LayerNorm layers with biased q/k/v/o and fc1/fc2, a
    post-LayerNorm; ``mm_projector_type`` mlp2x_gelu: biased Linear(h, text) and
    Linear(text, text)."""
    h = _tv(enc, "hidden_size", 1152)
    d = {"hidden_size": h, "num_hidden_layers": _tv(enc, "num_hidden_layers", 27),
         "intermediate_size": _tv(enc, "intermediate_size", 4304)}
    _, blocks = _vit(d, gated=False, ln=True)
    p = _tv(enc, "patch_size", 14)
    n = 3 * p * p * h + h + blocks + 2 * h
    depth = 2
    kind = str(config.get("mm_projector_type") or "mlp2x_gelu")
    if kind.startswith("mlp") and kind.endswith("x_gelu") and kind[3:-6].isdigit():
        depth = max(int(kind[3:-6]), 1)
    return n + h * text_hidden + text_hidden + (depth - 1) * (text_hidden * text_hidden +
                                                              text_hidden)


def _qwen3_vision(v: Mapping[str, Any], text_hidden: int) -> int:
    """Qwen3-VL's and Qwen3.5's vision tower (vLLM qwen3_vl.py ``Qwen3_VisionTransformer``,
    which qwen3_5.py builds too): a biased Conv3d(in_channels, h, (temporal, patch, patch)),
    the position table ``num_position_embeddings`` × h, ``depth`` blocks (two LayerNorms,
    qwen2_5_vl.py's biased qkv and proj, a biased linear_fc1 / linear_fc2 MLP), the merger
    (LayerNorm over h, biased Linear(4h, 4h) and Linear(4h, out_hidden_size)) and one more
    merger per ``deepstack_visual_indexes`` entry, its LayerNorm over 4h
    (``use_postshuffle_norm``)."""
    h = _tv(v, "hidden_size", 1152)
    d = {"hidden_size": h, "depth": _tv(v, "depth", 27),
         "intermediate_size": _tv(v, "intermediate_size", 4304)}
    _, blocks = _vit(d, gated=False, ln=True)
    p = _tv(v, "patch_size", 16)
    patch = _tv(v, "in_channels", 3) * _tv(v, "temporal_patch_size", 2) * p * p * h + h
    m = _tv(v, "spatial_merge_size", 2) ** 2 * h
    out = _tv(v, "out_hidden_size", text_hidden)
    fcs = m * m + m + m * out + out
    stack = v.get("deepstack_visual_indexes")
    extra = len(stack) if isinstance(stack, list) else 0
    pos = _tv(v, "num_position_embeddings", 2304) * h
    return patch + pos + blocks + 2 * h + fcs + extra * (2 * m + fcs)


def minicpmv_resampler(vision_hidden: int, text_hidden: int, queries: int) -> int:
    """MiniCPM-V 2.5 / 2.6 / 4.x's projector (vLLM minicpmv.py ``init_resampler``,
    layers/resampler.py ``BaseResampler`` / ``Resampler2_5``, embed_dim = the text hidden
    size e): ``query`` (query_num × e), a bias-free ``kv_proj`` (vision → e; none when they
    are equal), ``nn.MultiheadAttention`` (in_proj 3e² + 3e, out_proj e² + e), ``ln_q``,
    ``ln_kv``, ``ln_post`` LayerNorms and ``proj`` (e × e)."""
    e = text_hidden
    kv = vision_hidden * e if vision_hidden != e else 0
    return queries * e + kv + 4 * e * e + 4 * e + 6 * e + e * e
