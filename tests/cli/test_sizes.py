"""Sizes in vLLM's forms (and byte units) for every size-like option; one-line refusals.

Expected values are worked by hand from vLLM 0.32's ``human_readable_int`` rules
(``vllm/utils/argparse_utils.py``): lower-case k/m/g/t are powers of 1000 computed as
``int(float(number) * 10**n)``, upper-case K/M/G/T powers of 1024 on integers only.
"""

from __future__ import annotations

import json

import pytest

from kvledger.cli.main import main
from kvledger.sizes import MAX_SIZE, SizeError, size, vllm_int, vllm_int_or_auto

GIB = 1 << 30


@pytest.mark.parametrize(("text", "expected"), [
    ("32k", 32 * 1000),
    ("32K", 32 * 1024),
    ("8G", 8 * GIB),
    ("25.6k", 25600),           # 25.6 * 1000
    ("1.005k", 1004),           # float(1.005) * 1000 = 1004.999… → int() truncates, as vLLM
    ("0.5m", 500_000),
    ("1T", 1 << 40),
    (" 32k ", 32000),           # vLLM strips
    ("1_000", 1000),            # int() accepts underscores
    ("+2", 2),
    ("-1", -1),                 # the parser keeps it; callers range-check
])
def test_vllm_int_matches_vllms_rules(text: str, expected: int) -> None:
    assert vllm_int(text) == expected


@pytest.mark.parametrize("text", ["1.5K", "10GiB", "1e9", "16GB", "", "abc", "0x10"])
def test_vllm_int_refuses_what_vllm_refuses(text: str) -> None:
    with pytest.raises(SizeError):
        vllm_int(text)


def test_vllm_auto_forms() -> None:
    assert vllm_int_or_auto("auto") == -1
    assert vllm_int_or_auto("AUTO") == -1
    assert vllm_int_or_auto("-1") == -1
    assert vllm_int_or_auto("4k") == 4000


@pytest.mark.parametrize(("text", "expected"), [
    ("17179869184", 17179869184),
    ("10GiB", 10 * GIB),
    ("1.5GiB", 3 * GIB // 2),   # 1,610,612,736
    ("512MiB", 512 << 20),
    ("8G", 8 * GIB),            # vLLM's binary G
    ("16GB", 16 * 10**9),       # SI: gigabytes are 10**9
    ("1e9", 10**9),
    ("2.5e9", 2_500_000_000),
    ("32k", 32000),
])
def test_byte_sizes(text: str, expected: int) -> None:
    assert size(text, unit="bytes") == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("32k", 32000), ("32K", 32768), ("131072", 131072), ("1e5", 100_000), ("128K", 131072),
])
def test_token_counts(text: str, expected: int) -> None:
    assert size(text, unit="tokens", minimum=1) == expected


@pytest.mark.parametrize(("text", "fragment"), [
    ("", "empty"),
    ("   ", "empty"),
    ("-5", ">= 0"),
    ("-1", ">= 0"),
    ("nan", "finite"),
    ("NaN", "finite"),
    ("inf", "finite"),
    ("-inf", "finite"),
    ("9" * 400, "400-digit"),
    ("1e30", r"2\*\*60"),
    (str(MAX_SIZE + 1), r"2\*\*60"),
    ("1e-3", "whole number"),
    ("1.5", "such as"),
    ("abc", "such as"),
    ("1.5K", "decimals are not allowed"),
    ("10 parsecs", "such as"),
])
def test_bad_byte_sizes_are_one_line_value_errors(text: str, fragment: str) -> None:
    with pytest.raises(SizeError, match=fragment) as info:
        size(text, unit="bytes")
    assert "\n" not in str(info.value)


def test_byte_units_are_not_token_counts() -> None:
    with pytest.raises(SizeError, match="byte size"):
        size("32GiB", unit="tokens", minimum=1)


def test_zero_tokens_refused() -> None:
    with pytest.raises(SizeError, match=">= 1"):
        size("0", unit="tokens", minimum=1)


def _plan_json(capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, object]:
    code = main(["plan", "meta-llama/Meta-Llama-3.1-8B", "--engine", "vllm", *flags, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    data: dict[str, object] = json.loads(captured.out)
    return data


def test_cli_max_model_len_32k_is_32000(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan_json(capsys, "--kv-cache-memory-bytes", "10GiB", "--max-model-len", "32k")
    assert data["max_model_len"] == 32000
    assert data["available_bytes"] == 10 * GIB


def test_cli_max_model_len_32K_is_32768(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan_json(capsys, "--kv-cache-memory-bytes", "1e10", "--max-model-len", "32K")
    assert data["max_model_len"] == 32768
    assert data["available_bytes"] == 10**10


@pytest.mark.parametrize(("flag", "value"), [
    ("--kv-cache-memory-bytes", "9" * 400),
    ("--kv-cache-memory-bytes", "nan"),
    ("--kv-cache-memory-bytes", "inf"),
    ("--kv-cache-memory-bytes", "-1GiB"),
    ("--kv-cache-memory-bytes", ""),
    ("--max-model-len", "1.5K"),
    ("--max-model-len", "0"),
    ("--max-model-len", "32GiB"),
    ("--max-num-batched-tokens", "1e400"),
    ("--activation-peak-bytes", "-5"),
    ("--gpu-total-bytes", "0"),
])
def test_cli_bad_sizes_exit_2_with_one_line(capsys: pytest.CaptureFixture[str], flag: str,
                                            value: str) -> None:
    code = main(["plan", "meta-llama/Meta-Llama-3.1-8B", "--kv-cache-memory-bytes", "1GiB",
                 flag, value])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and flag in err
    assert "Traceback" not in err and "unexpected" not in err
