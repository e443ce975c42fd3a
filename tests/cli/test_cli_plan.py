"""`kvledger plan` and `kvledger fit` through the CLI: the machine interface's keys, the issue's
headline numbers, per-stage pools, the GPU budget lines, answers, and one real subprocess run
of the installed console script. Expected numbers are worked by hand from the configs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.source.resolve import load_source

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
TEN_GIB = str(10 * 2**30)  # 10,737,418,240

# Llama-3.1-8B: 32 layers × 2 (K,V) × 8 KV heads × 128 head_dim × 2 B (bf16) = 131,072 B/token.
LLAMA_BYTES_PER_TOKEN = 32 * 2 * 8 * 128 * 2


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main(["plan", *argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)  # exactly one JSON object on stdout
    return data


def test_issue_headline_numbers_vllm(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(capsys, LLAMA, "--engine", "vllm==0.33", "--kv-cache-memory-bytes", TEN_GIB,
                 "--max-model-len", "32768")
    # block = 16 tokens × 131,072 B = 2,097,152 B; 10 GiB / 2 MiB = 5,120 blocks;
    # 5,120 × 16 = 81,920 tokens; 81,920 / 32,768 = 2.5 requests of max_model_len.
    assert LLAMA_BYTES_PER_TOKEN == 131_072
    assert data["num_blocks"] == 5_120
    assert data["kv_cache_tokens"] == 81_920
    assert data["max_concurrency"] == 2.5
    assert data["block_size"] == 16
    assert data["vllm_refuses_to_start"] is False


def test_machine_interface_keys(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(capsys, LLAMA, "--engine", "vllm==0.33", "--kv-cache-memory-bytes", TEN_GIB)
    for key in ("model", "engine", "block_size", "num_blocks", "kv_cache_tokens",
                "max_concurrency", "max_model_len", "available_bytes", "reserved_bytes",
                "pools", "layers", "warnings", "vllm_refuses_to_start"):
        assert key in data, key
    assert data["model"] == LLAMA and data["engine"] == "vllm"
    assert isinstance(data["max_concurrency"], float)
    assert isinstance(data["warnings"], list)
    for pool in data["pools"]:
        assert {"name", "pool", "entries", "entry_bytes", "entries_per_req",
                "reserved_bytes"} <= set(pool)
    # The config's max_position_embeddings (131,072) is the default max_model_len.
    assert data["max_model_len"] == 131_072
    assert data["available_bytes"] == 10 * 2**30


def test_vllm_is_the_default_engine(capsys: pytest.CaptureFixture[str]) -> None:
    # Without --engine, the numbers are the newest vLLM release's own (0.33.0). The oracle
    # case (0.32's ../shared/oracles/vllm-0.32/cases.jsonl and 0.33's
    # tests/oracles/vllm-0.33/cases.jsonl agree) for Mistral-7B at
    # 8 GiB and 32,768 tokens: 32 layers × 2 × 8 × 128 × 2 B = 131,072 B/token, 2 MiB blocks,
    # 8 GiB / 2 MiB = 4,096 blocks; vLLM logs 104,775 tokens and 3.1975x (the 4,096-token
    # sliding window bounds each request's blocks). The native layout said 39 requests here.
    # vLLM 0.34 (the newest) starts --block-size auto from 64 (CacheConfig.DEFAULT_BLOCK_SIZE):
    # 8 GiB / 8 MiB = 1,024 blocks; its own answer (tests/oracles/vllm-0.34/
    # block-auto-cases.jsonl) is 104,530 tokens.
    data = _plan(capsys, "mistralai/Mistral-7B-v0.1", "--kv-cache-memory-bytes",
                 str(8 * 2**30), "--max-model-len", "32768")
    assert data["engine"] == "vllm" and data["vllm_refuses_to_start"] is False
    assert (data["num_blocks"], data["kv_cache_tokens"]) == (1_024, 104_530)
    assert data["engine_label"].startswith("vLLM 0.34.0")
    assert data["engine_release"] == "0.34.0"
    pinned = _plan(capsys, "mistralai/Mistral-7B-v0.1", "--engine", "vllm==0.33",
                   "--kv-cache-memory-bytes", str(8 * 2**30), "--max-model-len", "32768")
    assert (pinned["num_blocks"], pinned["kv_cache_tokens"]) == (4_096, 104_775)
    assert round(pinned["max_concurrency"], 4) == 3.1975


def test_native_is_labelled_as_kvledgers_layout(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(capsys, LLAMA, "--engine", "native", "--kv-cache-memory-bytes", TEN_GIB,
                 "--max-model-len", "32768")
    assert data["engine"] == "native"
    assert "kvledger's byte-exact layout" in data["engine_label"]
    assert "vllm_refuses_to_start" not in data
    # One PAGE class "kv", one entry = one 16-token block over all 32 layers = 2,097,152 B;
    # no state pools, so the whole 10 GiB pages: 10,737,418,240 / 2,097,152 = 5,120 entries.
    (kv,) = data["pools"]
    assert (kv["name"], kv["pool"]) == ("kv", "page")
    assert kv["entry_bytes"] == 16 * LLAMA_BYTES_PER_TOKEN == 2_097_152
    assert kv["entries"] == 5_120
    assert data["kv_cache_tokens"] == 81_920


def test_help_labels_both_engines(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "native: kvledger's byte-exact layout, for engine builders" in text
    assert "default: vllm" in text or "(the default)" in text


def test_concurrency_answers_max_context(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(capsys, LLAMA, "--engine", "vllm==0.33", "--kv-cache-memory-bytes", TEN_GIB,
                 "--max-model-len", "32768", "--concurrency", "4")
    # 81,920 tokens shared by 4 requests: 20,480 tokens each (1,280 blocks of 16).
    assert data["answers"]["concurrency"] == 4
    assert data["answers"]["max_context_at_concurrency"] == 20_480


@pytest.mark.parametrize("engine", ["native", "vllm"])
def test_tp2_pp2_has_per_stage_pools(capsys: pytest.CaptureFixture[str], engine: str) -> None:
    engine = "vllm==0.33" if engine == "vllm" else engine
    data = _plan(capsys, LLAMA, "--engine", engine, "--kv-cache-memory-bytes", TEN_GIB,
                 "--max-model-len", "32768", "--tensor-parallel-size", "2",
                 "--pipeline-parallel-size", "2")
    # PP 2: layers [0, 16) and [16, 32). TP 2: 8 KV heads → 4 per rank.
    # per GPU: 16 layers × 2 × 4 × 128 × 2 B = 32,768 B/token; block of 16 = 524,288 B;
    # 10 GiB / 524,288 B = 20,480 blocks = 327,680 tokens; / 32,768 = 10.0 requests.
    ranks = data["ranks"]
    assert [r["layers_range"] for r in ranks] == [[0, 16], [16, 32]]
    for rank in ranks:
        assert rank["num_blocks"] == 20_480
        (kv,) = [p for p in rank["pools"] if p["pool"] == "page"]
        assert kv["entry_bytes"] == 524_288
        assert kv["entries"] == 20_480
    assert data["num_blocks"] == 20_480
    assert data["kv_cache_tokens"] == 327_680
    assert data["max_concurrency"] == 10.0


def test_gpu_budget_lines(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(capsys, LLAMA, "--engine", "vllm==0.33", "--gpu", "H100-80GB",
                 "--max-model-len", "32768")
    lines = data["budget"]
    # H100-80GB as nvidia-smi reports it: 81,559 MiB = 81,559 × 1,048,576 = 85,520,809,984 B;
    # × 0.92 (vLLM 0.33.0's default, as 0.32.0's: CacheConfig.gpu_memory_utilization in
    # vllm/config/cache.py), truncated: 85,520,809,984 × 0.92 = 78,679,145,185.28 →
    # 78,679,145,185 B.
    assert lines[0]["bytes"] == 85_520_809_984
    assert lines[1]["bytes"] == 78_679_145_185
    # Not given by the user: the label says whose default, and the basis is the total's
    # (a device-reported preset: exact), never "given".
    assert lines[1]["key"] == "utilization"
    assert "0.92 (vLLM 0.33's default; not given)" in lines[1]["label"]
    assert lines[1]["basis"] == lines[0]["basis"] == "exact"
    # Every line is shown, and they add up: usable − weights − reserves = KV budget.
    assert lines[-1]["bytes"] == lines[1]["bytes"] - sum(ln["bytes"] for ln in lines[2:-1])
    assert data["available_bytes"] == lines[-1]["bytes"]
    assert {ln["basis"] for ln in lines} <= {"given", "exact", "estimated"}
    # Catalog ids have no safetensors: the weights line is an estimate and says so.
    assert any("weights" in ln["label"] and ln["basis"] == "estimated" for ln in lines)


def test_reserve_options_are_given_lines(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(capsys, LLAMA, "--gpu", "H100-80GB", "--max-model-len", "32768",
                 "--activation-peak-bytes", "0", "--cuda-graph-bytes", "1073741824",
                 "--non-torch-bytes", "0", "--gpu-memory-utilization", "0.5")
    lines = {ln["label"]: ln for ln in data["budget"]}
    graphs = next(ln for label, ln in lines.items() if "CUDA graphs" in label)
    assert graphs == {**graphs, "bytes": 1_073_741_824, "basis": "given"}
    # 85,520,809,984 × 0.5 = 42,760,404,992 usable.
    assert data["budget"][1]["bytes"] == 42_760_404_992
    # Given by the user: basis given, and the label claims no default.
    assert data["budget"][1]["basis"] == "given"
    assert data["budget"][1]["label"] == "× gpu_memory_utilization 0.5"


def test_default_utilization_on_a_datasheet_gpu_is_estimated(
    capsys: pytest.CaptureFixture[str]
) -> None:
    # B300 has no device report (datasheet 288 GB): whoever gave the fraction, the product
    # is as uncertain as the total. 288e9 × 0.92 = 264,960,000,000 B; × 0.8 = 230,400,000,000.
    default = _plan(capsys, LLAMA, "--engine", "vllm==0.33", "--gpu", "B300",
                    "--max-model-len", "32768")["budget"][1]
    given = _plan(capsys, LLAMA, "--engine", "vllm==0.33", "--gpu", "B300",
                  "--max-model-len", "32768",
                  "--gpu-memory-utilization", "0.8")["budget"][1]
    assert (default["bytes"], default["basis"]) == (264_960_000_000, "estimated")
    assert "default" in default["label"]
    assert (given["bytes"], given["basis"]) == (230_400_000_000, "estimated")


def test_default_utilization_on_a_given_total_is_given(
    capsys: pytest.CaptureFixture[str]
) -> None:
    # --gpu-total-bytes 80,000,000,000 × the default 0.92 = 73,600,000,000 B: computed from a
    # number the user gave, with the engine's default fraction.
    line = _plan(capsys, LLAMA, "--engine", "vllm==0.33", "--gpu", "H100-80GB",
                 "--gpu-total-bytes", "80000000000", "--max-model-len", "32768")["budget"][1]
    assert (line["bytes"], line["basis"]) == (73_600_000_000, "given")
    assert "not given" in line["label"]


def test_model_directory_picks_up_hf_quant_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    model_id = "nvidia/Qwen3-32B-NVFP4"  # its catalog values, as a model directory
    with_quant = tmp_path / "with"
    without = tmp_path / "without"
    for d in (with_quant, without):
        d.mkdir()
        (d / "config.json").write_text(json.dumps(load_source(model_id).config))
    quant = load_source(model_id).hf_quant_config
    (with_quant / "hf_quant_config.json").write_text(json.dumps(quant))
    # The native layout follows the checkpoint's KV scheme (vLLM's --kv-cache-dtype auto
    # does not; its layout warns instead).
    budget = ["--engine", "native", "--kv-cache-memory-bytes", TEN_GIB, "--max-model-len", "4096"]
    # Qwen3-32B: 64 layers × 2 × 8 KV heads × 128 = 131,072 KV elements per token.
    # bf16 (config dtype): 262,144 B/token → 16-token entry 4,194,304 B.
    # hf_quant_config.json kv_cache_quant_algo FP8: 131,072 B/token → entry 2,097,152 B.
    plain = _plan(capsys, str(without), *budget)
    quant = _plan(capsys, str(with_quant), *budget)
    assert plain["pools"][0]["entry_bytes"] == 4_194_304
    assert quant["pools"][0]["entry_bytes"] == 2_097_152
    assert quant["kv_cache_dtype"] == "fp8_e4m3"


def test_block_size_auto_and_prefix_caching_flags(capsys: pytest.CaptureFixture[str]) -> None:
    data = _plan(capsys, LLAMA, "--engine", "vllm==0.33", "--kv-cache-memory-bytes", TEN_GIB,
                 "--block-size", "auto", "--no-enable-prefix-caching", "--max-model-len", "8192")
    # vLLM's auto block size for full attention on an H100 backend is 16.
    assert data["block_size"] == 16
    assert data["num_blocks"] == 5_120


def test_plan_table_for_people(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", LLAMA, "--engine", "vllm==0.33", "--kv-cache-memory-bytes", TEN_GIB,
                 "--max-model-len", "32768"])
    out, err = capsys.readouterr()
    assert code == 0, err
    for text in ("5,120", "81,920", "2.50", "pools", "budget", "layers", "kv"):
        assert text in out, text
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


def test_insufficient_budget_is_one_line_with_hint(capsys: pytest.CaptureFixture[str]) -> None:
    # Qwen3-Next: 36 Gated DeltaNet layers keep a fixed state per request; 1,000,000 B cannot
    # hold even one request's states (each layer's recurrent state alone is 32 heads × 128 ×
    # 128 × 2 B = 1,048,576 B), so nothing is left to page with.
    code = main(["plan", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--engine", "native",
                 "--kv-cache-memory-bytes", "1000000"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "--max-num-seqs" in err and "hint:" in err


def test_fit_two_catalog_models(capsys: pytest.CaptureFixture[str]) -> None:
    # Llama-3.1-8B, 8 × 32,768 tokens × 131,072 B = 32 GiB of KV, weights ~16 GB: one H100.
    code = main(["fit", LLAMA, "--gpu", "H100-80GB", "--concurrency", "8", "--context",
                 "32768", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    small = json.loads(out)
    assert small["fits"] is True
    assert small["chosen"]["gpus"] == 1
    assert small["plan"]["max_concurrency"] >= 8
    # Llama-3.1-70B: 70.6B parameters × 2 B ≈ 141 GB of weights > one 80 GB GPU.
    code = main(["fit", "meta-llama/Meta-Llama-3.1-70B", "--gpu", "H100-80GB",
                 "--concurrency", "8", "--context", "32768", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    big = json.loads(out)
    assert big["fits"] is True
    assert big["chosen"]["gpus"] >= 2
    first = big["attempts"][0]
    assert (first["tensor_parallel_size"], first["pipeline_parallel_size"]) == (1, 1)
    assert first["fits"] is False
    assert big["plan"]["max_concurrency"] >= 8


def test_fit_table_for_people(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fit", LLAMA, "--gpu", "H100-80GB", "--concurrency", "8", "--context",
                 "32768"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "layouts tried" in out and "H100-80GB" in out


def test_console_script_main_job() -> None:
    """The README's main job, as a real process through the installed console script."""
    script = shutil.which("kvledger", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("console script not installed (pip install -e .)")
    proc = subprocess.run(
        [script, "plan", LLAMA, "--engine", "vllm", "--kv-cache-memory-bytes", TEN_GIB,
         "--max-model-len", "32768", "--json"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    # The README's command plans the newest release, 0.34: blocks of 64 (1,280 of 8 MiB).
    assert (data["num_blocks"], data["kv_cache_tokens"], data["max_concurrency"]) == (
        1_280, 81_920, 2.5)


def test_stage_table_for_people(capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # wide: every column shown, each sentence one line
    code = main(["plan", LLAMA, "--engine", "vllm==0.33", "--kv-cache-memory-bytes", TEN_GIB,
                 "--max-model-len", "32768", "-tp", "2", "-pp", "2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "pipeline stages" in out
    assert "[0, 16)" in out and "[16, 32)" in out
    assert "kv 20,480 × 524,288" in out  # per-stage pool: entries × bytes per entry


def test_vllm_refusal_is_said_to_people(capsys: pytest.CaptureFixture[str]) -> None:
    # 1 GiB holds 512 blocks of 2 MiB = 8,192 tokens < one 131,072-token request.
    code = main(["plan", LLAMA, "--engine", "vllm==0.33", "--kv-cache-memory-bytes", str(2**30)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "vLLM would refuse to start" in out
