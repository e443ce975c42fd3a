"""``kvledger plan --engine atom``: the machine interface, ATOM's numbers and ATOM's refusals.

Every expected number is worked from the config and ROCm/ATOM ffdf3bb5d's source (the file and
function named beside it); tests/oracles/atom/cases.jsonl has the same numbers from ATOM's own
code run on CPU (cases ``deepseek-v3``, ``qwen3-next``).
"""

from __future__ import annotations

import json

import pytest

from kvledger.cli.main import main

V3 = "deepseek-ai/DeepSeek-V3"
QWEN_NEXT = "Qwen/Qwen3-Next-80B-A3B-Thinking"
# MI300X: rocminfo 201,310,208 KiB = 206,141,652,992 B (kvledger.plan.gpus).
MI300X_TOTAL = 206141652992


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["plan", *argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert isinstance(out, dict)
    return out


def test_deepseek_v3_mla_class_with_atoms_entry_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    # aiter_mla.py AiterMLAMetadataBuilder.sub_pool_specs: 61 layers × 16 × 576 × 2 B
    # = 1,124,352 B a block (no TP split: MLA's latent is replicated); ModelRunner.get_num_blocks
    # → plan_pools: 68,719,476,736 // 1,124,352 = 61,119 blocks. max_num_seqs: ATOM's 512.
    out = _json(capsys, V3, "--engine", "atom", "--kv-cache-memory-bytes", "64GiB")
    assert out["pools"] == [{"name": "kv", "pool": "page", "entries": 61119,
                             "entry_bytes": 1124352, "entries_per_req": 0,
                             "reserved_bytes": 61119 * 1124352, "source": "engine"}]
    assert (out["num_blocks"], out["block_size"], out["max_num_seqs"]) == (61119, 16, 512)
    assert out["atom_log_line"] == ("available_for_kv=64.00GB, block_bytes=1124352, "
                                    "num_kvcache_blocks=61119")
    assert out["atom_log_lines"][0] == ("sub-pool kv: entries=61119, entry_bytes=1124352, "
                                        "reserved=64.00GB")
    # ATOM's capacity line at 100 %: ceil(163,840 / 16) = 10,240 blocks a request;
    # 61,119 // 10,240 = 5.
    assert out["max_concurrency"] == 5.0
    assert out["atom_capacity_lines"][-1].endswith("max_concurrent=5     (bound by blocks)")


def test_deepseek_v3_text_shows_the_class(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", V3, "--engine", "atom", "--kv-cache-memory-bytes", "64GiB"]) == 0
    text = capsys.readouterr().out
    assert "1,124,352" in text and "61,119" in text


def test_a_type_atom_does_not_serve_is_one_line_exit_2(
        capsys: pytest.CaptureFixture[str]) -> None:
    # support_model_arch_dict (atom/model_engine/model_runner.py) has no DeepseekV2ForCausalLM.
    assert main(["plan", "deepseek-ai/DeepSeek-V2-Lite", "--engine", "atom",
                 "--kv-cache-memory-bytes", "16GiB"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "does not serve model type 'deepseek_v2'" in err
    assert "'DeepseekV2ForCausalLM'" in err


def test_state_floor_too_big_gives_atoms_min_utilization(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Qwen3-Next at TP 4: STATE slot (gdn_attn.py GDNStateMixin.state_spec) per GDN layer
    # conv (4 − 1) × 8,192 // 4 × 2 B = 12,288 + temporal 32 // 4 × 128 × 128 × 2 B = 262,144
    # → 274,432 × 36 = 9,879,552 B; × 512 = 5,058,330,624 B reserved.
    # Budget (ModelRunner.get_num_blocks) at utilization 0.25 on an MI300X:
    #   non_kv = weights + 4e9 activation + 0.2 × 4e9 graphs + 1e9 non-torch
    #            + int(206,141,652,992 × 0.02) = 4,122,833,059
    #   min_util = (non_kv + 5,058,330,624) / 206,141,652,992, printed rounded up to 0.01.
    flags = ["--engine", "atom", "--gpu", "MI300X", "--tensor-parallel-size", "4",
             "--activation-peak-bytes", "4000000000", "--non-torch-bytes", "1000000000"]
    fits = _json(capsys, QWEN_NEXT, *flags)
    lines = {ln["key"]: ln["bytes"] for ln in fits["budget"]}  # type: ignore[union-attr]
    assert lines["safety_margin"] == 4122833059
    assert lines["cuda_graphs"] == 800000000
    assert lines["kv_budget"] == (int(MI300X_TOTAL * 0.9) - lines["weights"] - 4000000000
                                  - 800000000 - 1000000000 - 4122833059)
    non_kv = lines["weights"] + 4000000000 + 800000000 + 1000000000 + 4122833059
    need = (non_kv + 5058330624) / MI300X_TOTAL
    hint = f"{-(-need * 100 // 1) / 100:.2f}"
    assert main(["plan", QWEN_NEXT, *flags, "--gpu-memory-utilization", "0.25"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "Per-request cache tensor (4.71GB for 512 slots) exceeds available KV budget" in err
    assert "at --gpu-memory-utilization 0.25." in err
    assert f"Set --gpu-memory-utilization >= {hint} (this only zeroes out the deficit" in err
    assert "reduce --max-num-seqs (currently 512)" in err


def test_no_block_fits_is_atoms_assertion(capsys: pytest.CaptureFixture[str]) -> None:
    # Llama-3.1-8B's block is 2,129,920 B (2.03 MB); a 1,000,000 B budget (0.95 MB) holds none:
    # get_num_blocks' `assert num_kvcache_blocks > 0`.
    assert main(["plan", "meta-llama/Meta-Llama-3.1-8B", "--engine", "atom",
                 "--kv-cache-memory-bytes", "1000000"]) == 2
    err = capsys.readouterr().err
    assert ("Not enough memory for KV cache with block size(16). At least 1 block (2.03MB) is "
            "required, but available_for_kv=0.95MB") in err


def test_atom_runs_on_amd_gpus_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "meta-llama/Meta-Llama-3.1-8B", "--engine", "atom", "--gpu",
                 "H100-80GB"]) == 2
    assert "runs on AMD Instinct GPUs" in capsys.readouterr().err


def test_kv_dtypes_atom_does_not_take_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # arg_utils.py: --kv_cache_dtype choices ["bf16", "fp8"].
    assert main(["plan", V3, "--engine", "atom", "--kv-cache-memory-bytes", "64GiB",
                 "--kv-cache-dtype", "float16"]) == 2
    assert "takes bf16 or fp8" in capsys.readouterr().err


def test_concurrency_and_fit_work_for_atom(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, V3, "--engine", "atom", "--kv-cache-memory-bytes", "64GiB",
                "--concurrency", "4")
    assert out["answers"]["max_concurrency_at_max_model_len"] == 5.0  # type: ignore[index]
    assert main(["fit", "meta-llama/Meta-Llama-3.1-8B", "--engine", "atom", "--gpu", "MI300X",
                 "--concurrency", "8", "--context", "8192", "--json"]) == 0
