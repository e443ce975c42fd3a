"""KV element types: exact integer byte counts, names, torch.dtype, unknown names."""

from __future__ import annotations

import pytest

from kvledger import known_dtypes, resolve_dtype


@pytest.mark.parametrize(("name", "size"), [
    ("float32", 4), ("float16", 2), ("bfloat16", 2), ("fp8", 1), ("fp8_e4m3", 1),
    ("fp8_e5m2", 1), ("int8", 1),
])
def test_whole_byte_sizes(name: str, size: int) -> None:
    d = resolve_dtype(name)
    assert d.element_size == size
    assert d.nbytes(1000) == 1000 * size


def test_fp8_is_e4m3() -> None:
    assert resolve_dtype("fp8") is resolve_dtype("fp8_e4m3")


def test_nvfp4_exact_bytes() -> None:
    d = resolve_dtype("nvfp4")
    # 4-bit values: 32 elements → 16 B; one fp8 scale per 16 → 2 scales → 2 B; total 18 B
    assert d.nbytes(32) == 18
    # 1 element → 1 B of values (rounded up) + 1 scale = 2 B, never 0.5 + 0.0625
    assert d.nbytes(1) == 2
    # 128 elements: 64 + 8 = 72 B (= 4.5 bits per element)
    assert d.nbytes(128) == 72
    with pytest.raises(ValueError, match="no whole-byte"):
        _ = d.element_size


def test_unknown_name_lists_known() -> None:
    with pytest.raises(ValueError) as info:
        resolve_dtype("float12")
    for name in ("bfloat16", "fp8_e5m2", "nvfp4"):
        assert name in str(info.value)
    assert "nvfp4" in known_dtypes()


def test_counts_must_be_non_negative_ints() -> None:
    with pytest.raises(TypeError):
        resolve_dtype("float16").nbytes(1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        resolve_dtype("float16").nbytes(-1)


def test_torch_dtypes() -> None:
    torch = pytest.importorskip("torch")
    assert resolve_dtype(torch.bfloat16).name == "bfloat16"
    assert resolve_dtype(torch.float8_e5m2).name == "fp8_e5m2"
    assert resolve_dtype(torch.float8_e4m3fn).name == "fp8_e4m3"
    with pytest.raises(TypeError):
        resolve_dtype(3)
