"""The entry point: ``count_parameters(config)`` picks the family of the config's model-type
row and counts the decoder, its MTP layers and towers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvledger.derive.config import Config
from kvledger.derive.errors import ConfigError
from kvledger.derive.params.afmoe import _afmoe
from kvledger.derive.params.base import (
    _PROFILES,
    ALIASES,
    MAX_PARAMETERS,
    Parameters,
    _Count,
    minicpmv_profile,
)
from kvledger.derive.params.decoder import _decoder, _mtp
from kvledger.derive.params.draft import _eagle3
from kvledger.derive.params.dsv4 import _dsv4, _dsv4_mtp
from kvledger.derive.params.encdec import _mllama_text, _whisper
from kvledger.derive.params.legacy import _legacy, _mpt
from kvledger.derive.params.linear_attention import _gdn, _gdn_mtp, _lfm2, _minimax_linear
from kvledger.derive.params.nas import _nas
from kvledger.derive.params.ssm import (
    _falcon_h1,
    _granite_hybrid,
    _jamba,
    _mamba1,
    _mamba2,
    _nemotron_h,
    _nemotron_h_mtp,
    _zamba2,
)
from kvledger.derive.params.towers import towers, towers_unused

_FAMILIES = {"nas:derive": "nas", "ssm_hybrids:jamba": "jamba", "mamba:nemotron_h": "nemotron_h",
             "gdn:derive": "gdn", "legacy_schemas:bloom": "legacy",
             "legacy_schemas:falcon": "legacy", "legacy_schemas:gpt_bigcode": "legacy",
             "dense:gpt2": "legacy", "mla:derive": "mla", "mtp_decoder:derive": "mla",
             "mamba:mamba1": "mamba1", "mamba:mamba2": "mamba2",
             "ssm_hybrids:lfm2": "lfm2", "falcon_h1:derive": "falcon_h1",
             "ssm_hybrids:granitemoehybrid": "granite_hybrid", "minimax:m1": "minimax_linear",
             "mamba:zamba2": "zamba2", "encdec:whisper": "whisper", "dense:eagle3": "eagle3",
             "encdec:mllama": "mllama", "afmoe:derive": "afmoe",
             "deepseek_v4:derive": "dsv4"}


def _text_level(config: Mapping[str, Any], model: str) -> tuple[Config, str, str]:
    """(text config with its class defaults, its model_type, the handler of its row): the
    language model's config as derive reads it (``Config.text()``, and the row defaults
    ``derive/__init__.py``'s ``_inner`` applies)."""
    from kvledger.derive.model_types import resolve
    from kvledger.derive.registry import row_for

    top = Config(config, model=model)
    try:
        row = row_for(top.model_type, top.architectures)
    except Exception:  # an unknown or refused wrapper: its language model's row, if any
        text = top.text()
        text_type = text.model_type or top.model_type
        if text is top:
            return text, text_type, ""
        try:
            inner_row = resolve(text_type)
        except KeyError:
            return text, text_type, ""
        if not inner_row.derivable or inner_row.is_wrapper:
            return text, text_type, ""
        out = Config(text.raw, model=model, parent=text.parent, defaults=inner_row.defaults,
                     model_type=text_type)
        out.path = text.path
        return out, text_type, inner_row.handler
    text = top.text()
    text_type = text.model_type if text is not top else top.model_type
    defaults = dict(row.defaults)
    handler = row.handler
    if row.is_wrapper:
        inner = text_type if text is not top and text_type in row.inner else row.inner[0]
        try:
            wrapped = resolve(inner)
        except KeyError:
            wrapped = None
        if wrapped is not None:
            defaults = {**wrapped.defaults, **row.text_defaults.get(inner, {})}
            handler = wrapped.handler
        text_type = inner
    out = Config(text.raw, model=model, parent=text.parent, defaults=defaults,
                 model_type=text_type)
    out.path = text.path
    return out, text_type, handler


# Sizes a config class fills in that the model-type table's defaults do not hold (they matter to
# the weight count only): transformers 5.19 Gemma3TextConfig's vocab_size.
_WEIGHT_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "gemma3_text": {"vocab_size": 262208},
    "gemma3": {"vocab_size": 262208},
}

# The generic decoder's error where a published parameter count shows it (the model card's
# total against this count of the config in ../shared/configs).
_GENERIC_ERROR: Mapping[str, str] = {
    "dense:minimax_m2": "-0.6 % against MiniMax-M2's published 230B",
    "mimo_v2:derive": "+2.2 % against MiMo-V2-Flash's published 309B",
    # Kimi-K3: the experts (latent MoE, counted exactly) hold 99 % of it; its KDA layers are
    # counted as MLA ones, its MLA output gate and attention-residual projections are not:
    # the whole attention is 0.7 % of the count, the output gate about 0.1 %.
    # MiniMax-M3: dense and expert widths, its MTP modules counted; the sparse layers' index
    # q/k projections (about 4 M parameters a layer) and the MTP modules' own embedding not.
    "minimax:m3": "the sparse-attention index projections and the MTP modules' embedding "
                  "copy not modelled: likely error under 1 %",
    "kda:kimi": "KDA layers counted as MLA attention, the MLA output gate and attention "
                "residuals not modelled; the experts are counted exactly: likely error under 1 %",
    # GLM-5.3-Flash: experts 95 % of the count; its 34 KDA layers (about 170 M parameters each)
    # counted as MLA ones (about 117 M): 0.6 %; its hyper-connection mixers not modelled.
    "kda:glm": "KDA layers counted as MLA attention, hyper-connections not modelled; the "
               "experts are counted exactly: likely error under 2 %",
}

# Handlers whose layers the generic decoder describes (attention + MLP per layer).
_DECODER_HANDLERS = ("standard:", "layer_patterns:", "interleaved:", "gemma4:", "gemma3n:",
                     "legacy_schemas:chatglm", "dbrx:", "dense:phi3small", "mtp_decoder:",
                     "mla:", "minicpm3:")


def count_parameters(config: Mapping[str, Any], *, model: str = "config") -> Parameters:
    """The checkpoint's parameters from its (whole) config.json: the decoder by category,
    its MTP layers and towers apart, and warnings where the count is not exact."""
    text, model_type, handler = _text_level(config, model)
    more = _WEIGHT_DEFAULTS.get(model_type)
    if more:
        text = Config(text.raw, model=model, parent=text.parent,
                      defaults={**more, **text.defaults}, model_type=model_type)
    profile = _PROFILES.get(model_type, {})
    if model_type == "minicpmv":
        profile = minicpmv_profile(config)
    k = _Count(text, model_type, profile)
    family = _FAMILIES.get(handler, "")
    if model_type in ("nemotron-nas", "deci") or (not handler and "block_configs" in text):
        family = "nas"
    if model_type == "mpt":
        family = "mpt"
    if not handler and ("hybrid_override_pattern" in text or "mamba_num_heads" in text):
        family = "nemotron_h"  # a config without a model_type: its keys say the layout
    mla = text.get("kv_lora_rank") is not None and text.get("qk_nope_head_dim") is not None
    if family == "mla" and not mla:
        family = ""
    # A KDA hybrid's full-attention layers are MLA (Kimi-Linear, GLM-5-Next): its layers are
    # counted as MLA ones (closer than a GQA with the config's head_dim, 0 in GLM-5.3).
    if family == "" and mla and (text.get("linear_attn_config") is None
                                 or handler.startswith("kda:")):
        family = "mla"
    if (family == "" or handler.startswith("kda:")) and handler and \
            not handler.startswith(_DECODER_HANDLERS):
        k.warnings.append(
            f"model_type {model_type!r} ({handler}): its mixer or layer layout has no exact "
            "weight formula here; counted as a generic decoder (attention + MLP per layer): "
            + _GENERIC_ERROR.get(handler, "likely error up to ±20 %"))
    if not handler:
        k.warnings.append(
            f"model_type {model_type or '(none)'!r} has no row in the model-type table: counted "
            "as a generic decoder from its keys; likely error under 1 % for a Llama-like "
            "layout, more for another")
    encoder = 0
    if family == "whisper":
        encoder = _whisper(k)
    elif family == "eagle3":
        _eagle3(k)
    elif family == "mllama":
        _mllama_text(k)
    elif family == "afmoe":
        _afmoe(k)
    elif family == "dsv4":
        _dsv4(k)
        k.warnings.append(
            "deepseek_v4: counted from vLLM's DeepSeek-V4 modules (low-rank q and grouped "
            "output projections, compressors, indexers, hyper-connection mixers, experts); "
            "the hash layers' integer routing tables are not counted and no checkpoint has "
            "checked it: likely error under 1 %")
    elif family == "nas":
        _nas(k)
    elif family == "jamba":
        _jamba(k)
    elif family == "nemotron_h":
        _nemotron_h(k)
    elif family == "gdn":
        _gdn(k)
    elif family == "legacy":
        _legacy(k)
    elif family == "lfm2":
        _lfm2(k)
    elif family == "falcon_h1":
        _falcon_h1(k)
    elif family == "granite_hybrid":
        _granite_hybrid(k)
    elif family == "minimax_linear":
        _minimax_linear(k)
    elif family == "mpt":
        _mpt(k)
    elif family == "zamba2":
        _zamba2(k)
    elif family in ("mamba1", "mamba2"):
        hidden, layers, vocab = k.alias("hidden"), k.alias("layers"), k.alias("vocab")
        k.head(hidden, vocab, model_type)
        for _ in range(layers):
            if family == "mamba1":
                _mamba1(k, hidden, jamba=False)
            else:
                _mamba2(k, hidden)
            k.add("other", hidden)
        k.add("other", hidden)
    else:
        _decoder(k, mla=family == "mla")
    mtp_keys = ALIASES["mtp"]
    if model_type in ("minimax_m3", "minimax_m3_text"):
        # models/minimax_m3 MiniMaxM3MultiTokenPredictor builds num_mtp_modules layers, whatever
        # num_nextn_predict_layers says.
        mtp_keys = ("num_mtp_modules", *mtp_keys)
    mtp_count = next((k.num(key) for key in mtp_keys if k.num(key, default=0)), 0)
    mtp: dict[str, int] = {}
    if mtp_count:
        if family == "nemotron_h":
            mtp = _nemotron_h_mtp(k, mtp_count)
        elif family == "gdn":
            mtp = _gdn_mtp(k, mtp_count)
        elif family == "dsv4":
            mtp = _dsv4_mtp(k, mtp_count)
        else:
            mtp = _mtp(k, mtp_count)
        if family not in ("mla", "nemotron_h", "gdn", "dsv4") and \
                model_type not in ("glm4_moe", "mimo"):
            k.warnings.append(f"{mtp_count} MTP layer(s) of model_type {model_type!r} counted "
                              "as decoder layers with DeepSeek's eh_proj and norms: likely "
                              "error ±1 % of the MTP part")
    tower, tower_warnings = towers(config, k.alias("hidden"))
    if config.get("model_type") == "locateanything" and not k.c["lm_head"]:
        # LocateAnything's checkpoints (oguzaybilir/LocateAnything-3B-FineTuning @1f55ca04)
        # hold language_model.lm_head.weight although text_config ties it: that copy is
        # stored, and a tied model does not use it.
        k.warnings.append(
            "locateanything: its checkpoints store an lm_head although the config ties it "
            f"to the embedding: the stored bytes are higher by {k.c['embed']:,} parameters "
            "(vocab × hidden), which a tied model does not load")
    tower += encoder
    total = sum(k.c.values()) + sum(mtp.values()) + tower
    if total > MAX_PARAMETERS or any(n < 0 for n in (*k.c.values(), *mtp.values())):
        raise ConfigError(f"{model}: the config describes {total:.3g} parameters; kvledger "
                          f"sizes at most {MAX_PARAMETERS:.3g} (far above any released model)")
    return Parameters(model_type=model_type, categories=dict(k.c), mtp=mtp,
                      mtp_layers=mtp_count, towers=tower, unsharded_attention=k.unsharded,
                      towers_unused=towers_unused(config) if tower else 0,
                      warnings=(*k.warnings, *tower_warnings))
