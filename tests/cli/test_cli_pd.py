"""``kvledger pd`` / ``pd-fit``: two llm-d-style pairs planned end to end — vLLM 0.33 with NIXL
and SGLang 0.5.23 with its disaggregation mode — for Llama-3.1-70B (catalog: 80 layers, 8 KV
heads, head_dim 128, bfloat16) at 1 prefill TP 4 + 1 decode TP 4 on H100-80GB.

A GPU holds 2 of the 8 KV heads: a token is 2 × 80 × 2 × 128 × 2 B = 81,920 B per GPU; a vLLM
block of 16 tokens 1,310,720 B. Each role's pool is the one ``kvledger plan`` gives for the same
line (the pool's own tests are elsewhere); what ``pd`` adds is checked by hand from it.
"""

from __future__ import annotations

import json
import math
import shlex
from typing import Any

import pytest

from kvledger.cli.main import main

M = "meta-llama/Llama-3.1-70B-Instruct"
NIXL = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
VLLM = f"vllm serve {M} --tensor-parallel-size 4 --max-model-len 32768 " \
       f"--kv-transfer-config '{NIXL}'"
SGL = f"python -m sglang.launch_server --model-path {M} --tp-size 4 --context-length 32768 " \
      "--disaggregation-transfer-backend nixl"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    got = capsys.readouterr()
    return code, got.out, got.err


def as_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    cut = argv.index("--") if "--" in argv else len(argv)
    code, out, err = run(capsys, *argv[:cut], "--json", *argv[cut:])
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def plain(capsys: pytest.CaptureFixture[str], *line: str) -> dict[str, Any]:
    # A vLLM line is planned as 0.33, whose connectors kvledger read (releases/v0_33.py).
    pin = ["--engine", "vllm==0.33"] if line[0] == "vllm" else []
    return as_json(capsys, "plan", *pin, "--gpu", "H100-80GB", "--offline", "--", *line)


def test_vllm_nixl_pair(capsys: pytest.CaptureFixture[str]) -> None:
    # engine="vllm==0.33"
    data = as_json(capsys, "pd", "--engine", "vllm==0.33", "--gpu", "H100-80GB", "--offline",
                   "--prefill", VLLM,
                   "--decode", VLLM)
    pool = plain(capsys, *VLLM.replace(f"'{NIXL}'", NIXL).split(" "))
    prefill, decode = data["roles"]
    assert data["engine_release"] == "0.33.0"
    for r in (prefill, decode):
        assert r["gpus"] == 4 and r["num_blocks"] == pool["num_blocks"]
        assert r["bytes_per_token"] == 81_920
        assert r["transfer"]["connector"] == "NixlConnector"
        assert r["gpu_bytes_beyond_pool_per_gpu"] == 0 and r["host_bytes"] == 0
    # 32,768 tokens = 2,048 blocks a request; the pool less vLLM's null block holds
    # (num_blocks - 1) // 2,048 whole requests.
    at = data["decode_requests_at_context"]
    assert at["tokens_per_request"] == 32_768
    assert at["requests_by_pool"] == (pool["num_blocks"] - 1) // 2_048


def test_vllm_pd_fit_counts_decode_instances(capsys: pytest.CaptureFixture[str]) -> None:
    data = as_json(capsys, "pd-fit", "--engine", "vllm==0.33", "--gpu", "H100-80GB",
                   "--offline", "--prefill", VLLM,
                   "--decode", VLLM, "--requests", "100", "--context", "8192")
    pool = plain(capsys, *VLLM.replace(f"'{NIXL}'", NIXL).split(" "))
    per = (pool["num_blocks"] - 1) // 512  # 8,192 tokens = 512 blocks; less the null block
    fit = data["fit"]
    assert fit["requests_per_decode_instance"] == per
    assert fit["decode_instances"] == math.ceil(100 / per)
    assert fit["decode_gpus"] == 4 * math.ceil(100 / per)
    assert fit["serve_lines"] == {"prefill": VLLM, "decode": VLLM}


def test_vllm_lmcache_decode_side(capsys: pytest.CaptureFixture[str]) -> None:
    lmcache = ('{"kv_connector":"MultiConnector","kv_role":"kv_both",'
               '"kv_connector_extra_config":{"connectors":['
               '{"kv_connector":"NixlConnector","kv_role":"kv_both"},'
               '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}]}}')
    decode = VLLM.replace(NIXL, lmcache)
    data = as_json(capsys, "pd", "--engine", "vllm==0.33", "--gpu", "H100-80GB", "--offline",
                   "--prefill", VLLM,
                   "--decode", decode)
    r = data["roles"][1]
    # one 256-token chunk per GPU: 256 × 81,920 = 20,971,520 B; 5 GiB per GPU × 4 on the host.
    assert r["gpu_bytes_beyond_pool_per_gpu"] == 20_971_520
    assert r["host_bytes"] == 4 * 5 * (1 << 30)
    assert data["host_bytes"] == 4 * 5 * (1 << 30)
    # The CPU tier: 5 GiB / 20,971,520 B = 256 chunks of 256 tokens; a 32,768-token prefix
    # takes 128 chunks: 2 whole prefixes (a capacity, not a hit rate).
    (cpu,) = r["transfer"]["tiers"]
    assert (cpu["chunks"], cpu["prefixes_at_context"]) == (256, 2)


def test_sglang_pair(capsys: pytest.CaptureFixture[str]) -> None:
    # engine="sglang==0.5.23"
    data = as_json(capsys, "pd", "--gpu", "H100-80GB", "--offline",
                   "--prefill", f"{SGL} --disaggregation-mode prefill",
                   "--decode", f"{SGL} --disaggregation-mode decode")
    prefill, decode = data["roles"]
    assert data["engine_release"] == "0.5.23"
    tokens = decode["kv_cache_tokens"]  # the plain plan's pool: the next test
    assert decode["bytes_per_token"] == 81_920
    # Retraction host pool: int(tokens × 0.2) + 1 page, × 81,920 B per GPU.
    host = decode["transfer"]["host_pool"]
    assert host["tokens"] == int(tokens * 0.2) + 1
    assert host["bytes_per_gpu"] == (int(tokens * 0.2) + 1) * 81_920
    assert host["prefixes_at_context"] == host["tokens"] // 32_768
    rows = decode["transfer"]["metadata_rows"]
    assert decode["host_bytes"] == 4 * (host["bytes_per_gpu"] + rows * 1_600)
    assert prefill["transfer"]["host_pool"] is None
    assert prefill["host_bytes"] == 4 * prefill["transfer"]["metadata_rows"] * 1_600
    # Page 1: a request of 32,768 tokens takes 32,768 tokens.
    assert data["decode_requests_at_context"]["requests_by_pool"] == tokens // 32_768


def test_sglang_decode_pool_is_the_plain_plan_without_radix_cache(
        capsys: pytest.CaptureFixture[str]) -> None:
    data = as_json(capsys, "pd", "--gpu", "H100-80GB", "--offline",
                   "--prefill", f"{SGL} --disaggregation-mode prefill",
                   "--decode", f"{SGL} --disaggregation-mode decode")
    pool = plain(capsys, *SGL.replace(" --disaggregation-transfer-backend nixl", "").split(" "),
                 "--disable-radix-cache")
    assert data["roles"][1]["kv_cache_tokens"] == pool["kv_cache_tokens"]
    assert data["roles"][1]["transfer"]["metadata_rows"] == 2 * pool["max_running_requests"]


@pytest.mark.parametrize(("prefill", "decode", "named"), [
    (VLLM.replace(f" --kv-transfer-config '{NIXL}'", ""), VLLM, "no --kv-transfer-config"),
    (VLLM.replace("kv_both", "kv_consumer"), VLLM, "kv_role is kv_consumer"),
    (VLLM, f"{SGL} --disaggregation-mode decode", "KV moves between instances of one engine"),
    (f"{SGL} --disaggregation-mode decode", f"{SGL} --disaggregation-mode decode",
     "--disaggregation-mode prefill"),
    (f"{SGL} --disaggregation-mode prefill",
     f"{SGL} --disaggregation-mode decode".replace("nixl", "mooncake"),
     "sends KV with nixl and the decode line receives with mooncake"),
    (VLLM.replace(NIXL, '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}'), VLLM,
     "the prefill line moves no KV between instances"),
    (f"{SGL} --disaggregation-mode prefill --hicache-storage-backend file",
     f"{SGL} --disaggregation-mode decode", "--hicache-storage-backend"),
    (VLLM.replace(NIXL, '{"kv_connector":"P2pNcclConnector","kv_role":"kv_producer"}'), VLLM,
     "P2pNcclConnector"),
])
def test_refusals_are_one_line_naming_the_setting(capsys: pytest.CaptureFixture[str],
                                                 prefill: str, decode: str,
                                                 named: str) -> None:
    code, out, err = run(capsys, "pd", "--engine", "vllm==0.33", "--gpu", "H100-80GB",
                         "--offline", "--prefill", prefill,
                         "--decode", decode)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and named in err, err
    assert "Traceback" not in err


def test_sglang_dsa_roles_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # SGLang sizes the DSA indexer's KV by the role's own backend: not modelled.
    line = SGL.replace(M, "deepseek-ai/DeepSeek-V3.2").replace("--tp-size 4", "--tp-size 8")
    code, out, err = run(capsys, "pd", "--gpu", "H200", "--offline",
                         "--prefill", f"{line} --disaggregation-mode prefill",
                         "--decode", f"{line} --disaggregation-mode decode")
    assert code == 2 and out == "" and "indexer layers" in err and err.count("\n") == 1


def test_pd_text_fits_80_columns_and_its_lines_still_paste(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run(capsys, "pd", "--engine", "vllm==0.33", "--gpu", "H100-80GB",
                         "--offline", "--prefill", VLLM, "--decode", VLLM)
    assert code == 0, err
    lines = out.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    # The prefill serve line, cut at flags with " \": joined, it is the line given.
    start = lines.index("prefill: 4 GPU(s):") + 1
    cut = []
    for line in lines[start:]:
        cut.append(line.strip().removesuffix("\\").strip())
        if not line.endswith("\\"):
            break
    assert shlex.split(" ".join(cut)) == shlex.split(VLLM)
