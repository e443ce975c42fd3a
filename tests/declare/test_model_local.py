"""Protocol A: ModelLocalKVSpec arithmetic, validation and spec_from_hf_config."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kvledger import ModelLocalKVScope, ModelLocalKVSpec, RowDriver, spec_from_hf_config

REQ = ModelLocalKVScope.REQUEST


def spec(**kw: object) -> ModelLocalKVSpec:
    base: dict[str, object] = dict(
        name="c", layers=2, kv_heads=2, head_dim=8, dtype="bfloat16",
        physical_capacity_positions=4, capacity_source="test", scope=REQ,
        rows=RowDriver.MAX_NUM_SEQS,
    )
    base.update(kw)
    return ModelLocalKVSpec(**base)  # type: ignore[arg-type]


# --- the reference figures of SEEDS.md A ---------------------------------------------------

def test_qwen3_tts_codec_decoder() -> None:
    # fp32: 2 (K,V) × 8 layers × 16 heads × 64 dim × 71 positions (window 72 - 1) × 4 B
    # = 2 × 8 × 16 × 64 × 71 × 4 = 4,653,056 B per row
    s = spec(name="codec", layers=8, kv_heads=16, head_dim=64, dtype="float32",
             physical_capacity_positions=71, capacity_source="sliding window 72 - 1")
    assert s.bytes_per_row == 4_653_056
    assert s.peak_bytes(max_num_seqs=3) == 3 * 4_653_056


def test_mimo_audio_captured_rows() -> None:
    # bf16: 2 × 16 × 16 × 64 × 11 × 2 B = 720,896 B per row;
    # FIXED rows = captured buckets 1+2+4+6+8+16+32+64+128 = 261 → 188,153,856 B
    s = spec(name="mimo", layers=16, kv_heads=16, head_dim=64, physical_capacity_positions=11,
             scope=ModelLocalKVScope.MODEL, rows=RowDriver.FIXED, rows_fixed=261,
             rows_reason="captured buckets 1+2+4+6+8+16+32+64+128")
    assert s.bytes_per_row == 720_896
    assert s.peak_bytes() == 188_153_856
    # FIXED ignores max_num_seqs
    assert s.peak_bytes(max_num_seqs=512) == 188_153_856


def test_minicpm_o_whisper_encoder() -> None:
    # bf16: 2 × 24 × 16 × 64 × 1500 frames × 2 B = 147,456,000 B, FIXED 1 per session
    s = spec(name="whisper", layers=24, kv_heads=16, head_dim=64,
             physical_capacity_positions=1500, scope=ModelLocalKVScope.SESSION,
             rows=RowDriver.FIXED, rows_fixed=1, rows_reason="one duplex session at a time")
    assert s.peak_bytes(max_num_seqs=256) == 147_456_000


def test_ming_talker_static_cache() -> None:
    # bf16: 2 × 24 × 2 × 64 × 2048 × 2 B = 25,165,824 B, FIXED 1 (calls are serialized)
    s = spec(name="talker", layers=24, kv_heads=2, head_dim=64,
             physical_capacity_positions=2048, rows=RowDriver.FIXED,
             rows_reason="calls are serialized")
    assert s.peak_bytes(max_num_seqs=64) == 25_165_824


# --- rows --------------------------------------------------------------------------------------

def test_row_count_max_num_seqs_floor_of_one() -> None:
    s = spec()
    assert s.row_count() == 1
    assert s.row_count(0) == 1  # max(1, max_num_seqs)
    assert s.row_count(7) == 7
    # 2 × 2 × 2 × 8 × 4 × 2 B = 512 B/row
    assert s.peak_bytes(7) == 7 * 512


def test_rows_is_required() -> None:
    with pytest.raises(TypeError):
        ModelLocalKVSpec("c", 1, 1, 1, "float16", 1, "x", REQ)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="rows is required"):
        spec(rows=None)


def test_fixed_needs_reason_and_positive_count() -> None:
    with pytest.raises(ValueError, match="rows_reason"):
        spec(rows=RowDriver.FIXED, rows_reason="   ")
    with pytest.raises(ValueError, match="rows_fixed"):
        spec(rows=RowDriver.FIXED, rows_fixed=0, rows_reason="r")
    with pytest.raises(ValueError, match="ignored"):
        spec(rows=RowDriver.MAX_NUM_SEQS, rows_fixed=4)


@pytest.mark.parametrize("field", ["layers", "kv_heads", "head_dim", "physical_capacity_positions"])
@pytest.mark.parametrize("bad", [True, 2.0, "2"])
def test_counts_reject_non_int(field: str, bad: object) -> None:
    with pytest.raises(TypeError, match=field):
        spec(**{field: bad})


@pytest.mark.parametrize("field", ["layers", "kv_heads", "head_dim", "physical_capacity_positions"])
def test_counts_reject_zero_and_negative(field: str) -> None:
    for bad in (0, -1):
        with pytest.raises(ValueError, match=field):
            spec(**{field: bad})


def test_dtype_accepts_names_and_rejects_unknown() -> None:
    assert spec(dtype="fp8").dtype == "fp8_e4m3"
    # 2 × 2 × 2 × 8 × 4 = 256 elements × 1 B (fp8)
    assert spec(dtype="fp8").bytes_per_row == 256
    with pytest.raises(ValueError, match="known"):
        spec(dtype="float12")


def test_dtype_accepts_torch_dtype() -> None:
    torch = pytest.importorskip("torch")
    s = spec(dtype=torch.float16)
    assert s.dtype == "float16"
    assert s.bytes_per_row == 512  # 256 elements × 2 B


def test_scope_and_rows_from_strings() -> None:
    s = spec(scope="session", rows="fixed", rows_reason="r")
    assert s.scope is ModelLocalKVScope.SESSION and s.rows is RowDriver.FIXED
    with pytest.raises(ValueError, match="scope"):
        spec(scope="forever")


def test_spec_is_frozen() -> None:
    s = spec()
    with pytest.raises(AttributeError):
        s.layers = 3  # type: ignore[misc]


# --- spec_from_hf_config ---------------------------------------------------------------------

COMMON = dict(name="c", physical_capacity_positions=10, capacity_source="t", scope=REQ,
              dtype="bfloat16")


def test_from_decoder_config() -> None:
    # Qwen2-like: 28 layers, 4 kv heads, head_dim = 3584 // 28 heads = 128
    cfg = SimpleNamespace(num_hidden_layers=28, num_key_value_heads=4,
                          num_attention_heads=28, hidden_size=3584)
    s = spec_from_hf_config(cfg, rows=RowDriver.MAX_NUM_SEQS, **COMMON)  # type: ignore[arg-type]
    assert (s.layers, s.kv_heads, s.head_dim) == (28, 4, 128)


def test_from_config_with_explicit_head_dim_and_dict() -> None:
    cfg = {"num_hidden_layers": 2, "num_key_value_heads": 8, "num_attention_heads": 16,
           "hidden_size": 1024, "head_dim": 256}
    s = spec_from_hf_config(cfg, rows=RowDriver.MAX_NUM_SEQS, **COMMON)  # type: ignore[arg-type]
    assert s.head_dim == 256  # head_dim wins over 1024 // 16 = 64


def test_from_whisper_encoder_naming() -> None:
    # Whisper: encoder_layers, encoder_attention_heads, d_model; head_dim = 1024 // 16 = 64
    cfg = {"encoder_layers": 24, "encoder_attention_heads": 16, "d_model": 1024}
    s = spec_from_hf_config(cfg, rows=RowDriver.FIXED, rows_reason="one session",
                            **COMMON)  # type: ignore[arg-type]
    assert (s.layers, s.kv_heads, s.head_dim) == (24, 16, 64)


def test_mha_falls_back_to_attention_heads() -> None:
    cfg = {"num_layers": 3, "num_attention_heads": 12, "hidden_size": 768}
    s = spec_from_hf_config(cfg, rows=RowDriver.MAX_NUM_SEQS, **COMMON)  # type: ignore[arg-type]
    assert (s.layers, s.kv_heads, s.head_dim) == (3, 12, 64)


def test_explicit_overrides() -> None:
    cfg = {"num_hidden_layers": 28, "num_key_value_heads": 4, "num_attention_heads": 28,
           "hidden_size": 3584}
    s = spec_from_hf_config(cfg, rows=RowDriver.MAX_NUM_SEQS, layers=5, kv_heads=2,
                            head_dim=32, **COMMON)  # type: ignore[arg-type]
    assert (s.layers, s.kv_heads, s.head_dim) == (5, 2, 32)


def test_missing_attributes_raise_naming_what_was_tried() -> None:
    with pytest.raises(ValueError, match="num_hidden_layers, encoder_layers, num_layers"):
        spec_from_hf_config({}, rows=RowDriver.MAX_NUM_SEQS, **COMMON)  # type: ignore[arg-type]
    cfg = {"num_hidden_layers": 2, "num_key_value_heads": 2}
    with pytest.raises(ValueError, match="hidden_size, d_model"):
        spec_from_hf_config(cfg, rows=RowDriver.MAX_NUM_SEQS, **COMMON)  # type: ignore[arg-type]


def test_rows_is_keyword_required_in_helper() -> None:
    cfg = {"num_hidden_layers": 2, "num_key_value_heads": 2, "head_dim": 4}
    with pytest.raises(TypeError):
        spec_from_hf_config(cfg, **COMMON)  # type: ignore[call-arg,arg-type]


def test_from_transformers_config_object() -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.WhisperConfig(encoder_layers=4, encoder_attention_heads=6, d_model=384)
    s = spec_from_hf_config(cfg, rows=RowDriver.FIXED, rows_reason="r",
                            **COMMON)  # type: ignore[arg-type]
    # WhisperConfig maps num_hidden_layers → encoder_layers; 384 // 6 = 64
    assert (s.layers, s.kv_heads, s.head_dim) == (4, 6, 64)


def test_absurd_declaration_is_refused() -> None:
    # Each count is in range, the product is not: 2 × 2**20 layers × 2**20 heads × 2**20 dims
    # × 2**10 positions × 2 B = 2**72 B for one row.
    with pytest.raises(ValueError, match="2\\*\\*60"):
        ModelLocalKVSpec("huge", layers=1 << 20, kv_heads=1 << 20, head_dim=1 << 20,
                         dtype="bfloat16", physical_capacity_positions=1 << 10,
                         capacity_source="", scope=ModelLocalKVScope.MODEL,
                         rows=RowDriver.MAX_NUM_SEQS)
    with pytest.raises(ValueError, match="layers must be <="):
        ModelLocalKVSpec("huge", layers=(1 << 60) + 1, kv_heads=1, head_dim=1,
                         dtype="bfloat16", physical_capacity_positions=1,
                         capacity_source="", scope=ModelLocalKVScope.MODEL,
                         rows=RowDriver.MAX_NUM_SEQS)
