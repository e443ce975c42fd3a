"""A checkpoint's MTP (next-n) layers in the weights line: vLLM 0.32's model skips them when it
loads the checkpoint, and only its MTP drafter loads them (``--speculative-method mtp``).

vLLM's rule: models/utils.py ``get_spec_layer_idx_from_weight_name`` — for a config with
``num_nextn_predict_layers`` n, the weights ``model.layers.<num_hidden_layers + i>.*`` (i < n)
belong to the MTP layers; deepseek_v2.py ``load_weights`` skips them ("skip spec decode layers
for main model"), glm4_moe.py through ``skip_spec_layers``. Qwen3-Next / Qwen3.5 drop ``mtp.*``
(their WeightsMapper), MiMo ``model.mtp_layers.*``, MiMo-V2 and ERNIE-4.5 any name holding
``mtp``. Byte counts below are worked by hand from the tensors written.
"""

from __future__ import annotations

import json
from pathlib import Path

from kvledger.plan.api import plan_model
from kvledger.plan.request import PlanRequest
from kvledger.plan.weights import estimate_total_bytes, model_weights
from kvledger.source.resolve import load_source
from plan.tiny_safetensors import write_safetensors

# DeepSeek-V3's names (61 decoder layers, one MTP layer: model.layers.61.*), fp8 weights with
# float32 block scales as its checkpoint stores them, at toy sizes:
#   embed 16 × 8 BF16 = 256 B; layers 0 and 60: 8 × 8 F8 = 64 B + one F32 scale 4 B each;
#   MTP layer 61: eh_proj 8 × 16 BF16 = 256 B, 8 × 8 F8 = 64 B, its F32 scale 4 B = 324 B;
#   lm_head 16 × 8 BF16 = 256 B. Stored: 256 + 2 × 68 + 324 + 256 = 972 B; without the MTP
#   layer 648 B. Served in bfloat16 (the config's dtype) every tensor keeps its bytes: BF16 is
#   the serving dtype, F8 weights and (in a quantized checkpoint) their F32 scales load as
#   stored.
DEEPSEEK_TENSORS = {
    "model.embed_tokens.weight": ("BF16", [16, 8]),
    "model.layers.0.mlp.down_proj.weight": ("F8_E4M3", [8, 8]),
    "model.layers.0.mlp.down_proj.weight_scale_inv": ("F32", [1, 1]),
    "model.layers.60.mlp.down_proj.weight": ("F8_E4M3", [8, 8]),
    "model.layers.60.mlp.down_proj.weight_scale_inv": ("F32", [1, 1]),
    "model.layers.61.eh_proj.weight": ("BF16", [8, 16]),
    "model.layers.61.mlp.down_proj.weight": ("F8_E4M3", [8, 8]),
    "model.layers.61.mlp.down_proj.weight_scale_inv": ("F32", [1, 1]),
    "lm_head.weight": ("BF16", [16, 8]),
}


def _deepseek_dir(tmp_path: Path) -> Path:
    model = tmp_path / "deepseek-v3"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(load_source("deepseek-ai/DeepSeek-V3").config))
    write_safetensors(model / "model.safetensors", DEEPSEEK_TENSORS)
    return model


def _weights_line(model: Path, request: PlanRequest) -> dict[str, object]:
    budget = plan_model(str(model), request).to_json()["budget"]
    [line] = [b for b in budget if b["key"] == "weights"]
    return line


def test_deepseek_mtp_layer_left_out_unless_speculating(tmp_path: Path) -> None:
    model = _deepseek_dir(tmp_path)
    plain = _weights_line(model, PlanRequest(gpu="H200", max_model_len=4096))
    assert plain["bytes"] == 648 and plain["basis"] == "exact"
    assert "without its MTP layers' 324 B stored" in str(plain["label"])
    mtp = _weights_line(model, PlanRequest(gpu="H200", max_model_len=4096,
                                           num_speculative_tokens=1, speculative_method="mtp"))
    assert mtp["bytes"] == 972 and mtp["basis"] == "exact"
    assert "MTP layers' 324 B stored included" in str(mtp["label"])
    # A draft-model method does not load them either.
    eagle = _weights_line(model, PlanRequest(gpu="H200", max_model_len=4096,
                                             num_speculative_tokens=1,
                                             speculative_method="eagle3"))
    assert eagle["bytes"] == 648


def test_mtp_named_tensors_left_out(tmp_path: Path) -> None:
    # Qwen3-Next's layout: MTP tensors under "mtp." (qwen3_next.py drops that prefix).
    # 16 × 8 BF16 = 256 B of embeddings + 8 × 8 BF16 = 128 B of mtp.fc: 128 B left out.
    write_safetensors(tmp_path / "model.safetensors",
                      {"model.embed_tokens.weight": ("BF16", [16, 8]),
                       "mtp.fc.weight": ("BF16", [8, 8])})
    cfg = {"num_hidden_layers": 2, "mtp_num_hidden_layers": 1}
    plain = model_weights(cfg, model_dtype="bfloat16", directory=tmp_path)
    assert (plain.total_bytes, plain.stored_bytes) == (256, 384)
    both = model_weights(cfg, model_dtype="bfloat16", directory=tmp_path, speculative_mtp=True)
    assert both.total_bytes == 384


def test_estimate_adds_the_mtp_layers_only_when_speculating() -> None:
    # hidden 8, 2 layers, vocab 10, 2 heads of 4 (2 KV heads), MLP 16, one next-n layer:
    # embed = lm_head = 80; a layer: attention 8 × (2 + 2 × 2) × 4 + 2 × 4 × 8 = 256, MLP
    # 3 × 8 × 16 = 384, two RMSNorms 2 × 8 = 16 → 656; the final norm 8. Without MTP:
    # 160 + 2 × 656 + 8 = 1,480 parameters × 2 B = 2,960 B.
    # With its MTP layer: + 656 + eh_proj 2 × 8 × 8 = 128 + enorm, hnorm and the shared head's
    # norm 3 × 8 = 24 → 2,288 × 2 B = 4,576 B (embedding and head shared, not loaded twice).
    cfg = {"hidden_size": 8, "num_hidden_layers": 2, "vocab_size": 10,
           "num_attention_heads": 2, "num_key_value_heads": 2, "intermediate_size": 16,
           "num_nextn_predict_layers": 1}
    plain, how = estimate_total_bytes(cfg, "bfloat16")
    assert plain == 2_960 and "without its 1 MTP layer" in how
    spec, how = estimate_total_bytes(cfg, "bfloat16", speculative_mtp=True)
    assert spec == 4_576 and "with its 1 MTP layer" in how


def test_header_cache_keeps_the_layer_groups(tmp_path: Path) -> None:
    # Hub headers are cached by repository and commit (source/weights.py, format 3): a second,
    # offline run must tell the MTP layers apart as the first did. A format-2 entry has no
    # groups: its MTP layers are counted, and the line says it cannot tell them apart.
    from kvledger.source import weights as cache
    from kvledger.source.headers import local_totals

    totals = local_totals(str(_deepseek_dir(tmp_path)))
    assert totals is not None and totals.groups is not None
    assert totals.groups["layer:61"] == {"BF16": 256, "F8_E4M3": 64, "F32": 4}
    commit = "a" * 40
    cache._store("deepseek-ai/DeepSeek-V3", commit, totals)
    assert cache._load_cached("deepseek-ai/DeepSeek-V3", commit) == totals
    path = Path(cache._cache_path("deepseek-ai/DeepSeek-V3", commit))
    data = json.loads(path.read_text())
    data["format"] = 2
    del data["groups"], data["group_aux"]
    path.write_text(json.dumps(data))
    old = cache._load_cached("deepseek-ai/DeepSeek-V3", commit)
    assert old is not None and old.groups is None
    cfg = load_source("deepseek-ai/DeepSeek-V3").config
    weights = model_weights(cfg, model_dtype="bfloat16", exact=old)
    assert weights.total_bytes == 972 and "cannot tell apart" in weights.detail
