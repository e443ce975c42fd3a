"""`kvledger fit` for operators: node-aware layouts, DP × EP on request, caveats, and a serve
line that — pasted back into `kvledger plan --` — plans the very numbers fit chose.
"""

from __future__ import annotations

import json
import shlex

import pytest

from kvledger.cli.main import main

DSV3 = "deepseek-ai/DeepSeek-V3"
ASK = ["fit", DSV3, "--gpu", "H200", "--concurrency", "64", "--context", "32768", "--json"]
SAME = ("kv_cache_tokens", "num_blocks", "max_concurrency", "available_bytes", "max_num_seqs",
        "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, object] = json.loads(out)
    return data


def _replan(capsys: pytest.CaptureFixture[str], gpu: str, line: str) -> dict[str, object]:
    return _run(capsys, "plan", "--gpu", gpu, "--json", "--", *shlex.split(line))


def _same_numbers(fitted: dict[str, object], replanned: dict[str, object]) -> None:
    plan = fitted["plan"]
    assert isinstance(plan, dict)
    for key in SAME:
        assert replanned[key] == plan[key], key
    assert replanned.get("totals") == plan.get("totals")
    assert replanned.get("weights_per_gpu") == plan.get("weights_per_gpu")


def test_deepseek_v3_on_h200_is_one_node_and_its_line_plans_the_same(
        capsys: pytest.CaptureFixture[str]) -> None:
    data = _run(capsys, *ASK)
    chosen = data["chosen"]
    assert isinstance(chosen, dict)
    # One node of 8 H200: TP 8 alone holds 22.68 requests of 32K (MLA's latent is replicated
    # over TP); PP inside the node is the fallback that holds 64, and fit says so.
    assert chosen["nodes"] == 1 and chosen["gpus"] == 8 and chosen["spans_nodes"] is False
    assert chosen["pipeline_parallel_size"] > 1
    caveats = data["caveats"]
    assert isinstance(caveats, list) and any("inside one node" in c for c in caveats)
    line = data["serve_line"]
    assert isinstance(line, str) and line.startswith(f"vllm serve {DSV3} ")
    assert "--max-model-len 32768" in line and "--max-num-seqs 64" in line
    _same_numbers(data, _replan(capsys, "H200", line))


def test_deepseek_v3_dp_ep_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    data = _run(capsys, *ASK, "--enable-expert-parallel")
    chosen = data["chosen"]
    assert isinstance(chosen, dict)
    # DP 8 × EP on one node: each rank holds 1/8 of the routed experts (~81.8 GB) and the
    # rest whole (TP 1), leaving ~34.6 GB of KV per GPU → ~15 requests of 32K per rank; the
    # group holds 8 × that ≥ 64, each rank admitting ⌈64 / 8⌉ = 8.
    assert (chosen["data_parallel_size"], chosen["tensor_parallel_size"],
            chosen["enable_expert_parallel"], chosen["nodes"]) == (8, 1, True, 1)
    plan = data["plan"]
    assert isinstance(plan, dict) and plan["max_num_seqs"] == 8
    line = data["serve_line"]
    assert isinstance(line, str)
    assert "--data-parallel-size 8" in line and "--enable-expert-parallel" in line
    assert "--max-num-seqs 8" in line
    _same_numbers(data, _replan(capsys, "H200", line))


def test_a_serve_line_states_the_question(capsys: pytest.CaptureFixture[str]) -> None:
    """The line's --max-model-len / --max-num-seqs are fit's --context / --concurrency; its
    -dp with --enable-expert-parallel asks for the DP × EP search; its sizes are searched."""
    from_line = _run(capsys, "fit", "--gpu", "H200", "--json", "--", "vllm", "serve", DSV3,
                     "--max-model-len", "32768", "--max-num-seqs", "64", "-dp", "8",
                     "--enable-expert-parallel")
    direct = _run(capsys, *ASK, "--enable-expert-parallel")
    assert from_line["chosen"] == direct["chosen"]
    assert from_line["serve_line"] == direct["serve_line"]
    given = from_line["from_serve_line"]
    assert isinstance(given, dict)
    assert any("--data-parallel-size 8 not kept" in n for n in given["notes"])


def test_the_line_and_the_options_must_agree(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fit", "--gpu", "H200", "--context", "8192", "--concurrency", "4", "--",
                 "vllm", "serve", DSV3, "--max-model-len", "32768"])
    err = capsys.readouterr().err
    assert code == 2 and "given twice" in err and "Traceback" not in err


def test_64_l4s_fit_only_with_a_multi_node_caveat(capsys: pytest.CaptureFixture[str]) -> None:
    data = _run(capsys, "fit", DSV3, "--gpu", "L4", "--concurrency", "1", "--context", "4096",
                "--json")
    chosen = data["chosen"]
    assert isinstance(chosen, dict)
    # ~690 GB of weights over 24 GB L4s: TP 8 (the node) × PP 8 = 64 GPUs, 8 nodes.
    assert (chosen["tensor_parallel_size"], chosen["pipeline_parallel_size"]) == (8, 8)
    assert chosen["spans_nodes"] is True and chosen["nodes"] == 8
    caveats = data["caveats"]
    assert isinstance(caveats, list) and any("spans 8 nodes of 8 GPUs" in c for c in caveats)
    # Every tried layout over a node is TP 8: TP never spans nodes, PP does.
    attempts = data["attempts"]
    assert isinstance(attempts, list)
    assert all(a["tensor_parallel_size"] == 8 for a in attempts if a["nodes"] > 1)
    line = data["serve_line"]
    assert isinstance(line, str)
    # fit plans with vllm serve's own tier for an L4 (< 70 GiB: 2,048 batched tokens;
    # kvledger.plan.engines.vllm.batch_defaults), so the line need not say it.
    assert "--max-num-batched-tokens" not in line
    _same_numbers(data, _replan(capsys, "L4", line))


def test_max_gpus_caps_the_search(capsys: pytest.CaptureFixture[str]) -> None:
    data = _run(capsys, "fit", DSV3, "--gpu", "L4", "--concurrency", "1", "--context", "4096",
                "--max-gpus", "16", "--json")
    assert data["fits"] is False and data.get("serve_line") is None
    attempts = data["attempts"]
    assert isinstance(attempts, list) and max(a["gpus"] for a in attempts) == 16
    reason = data["reason"]
    assert isinstance(reason, str) and "up to 16 GPUs" in reason


def test_gpus_per_node_keeps_tp_inside_a_node(capsys: pytest.CaptureFixture[str]) -> None:
    data = _run(capsys, *ASK, "--gpus-per-node", "4")
    attempts = data["attempts"]
    assert isinstance(attempts, list)
    assert max(a["tensor_parallel_size"] for a in attempts) == 4
    chosen = data["chosen"]
    assert isinstance(chosen, dict) and chosen["nodes"] == chosen["gpus"] // 4


def test_expert_parallel_needs_a_moe_model(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fit", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H200", "--concurrency", "4",
                 "--context", "8192", "--enable-expert-parallel"])
    err = capsys.readouterr().err
    assert code == 2 and "no routed experts" in err
    assert len(err.strip().splitlines()) <= 2 and "Traceback" not in err


def test_fit_needs_its_question(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fit", DSV3, "--gpu", "H200", "--context", "8192"])
    err = capsys.readouterr().err
    assert code == 2 and "--concurrency" in err and "Traceback" not in err


def test_the_sglang_line_plans_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    data = _run(capsys, "fit", "meta-llama/Meta-Llama-3.1-8B", "--engine", "sglang", "--gpu",
                "H100-80GB", "--concurrency", "8", "--context", "8192", "--json")
    line = data["serve_line"]
    assert isinstance(line, str)
    assert line.startswith("python -m sglang.launch_server --model-path "
                           "meta-llama/Meta-Llama-3.1-8B")
    assert "--context-length 8192" in line
    replanned = _replan(capsys, "H100-80GB", line)
    plan = data["plan"]
    assert isinstance(plan, dict)
    for key in ("kv_cache_tokens", "num_blocks", "available_bytes"):
        assert replanned[key] == plan[key], key


def test_the_human_output_ends_with_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ASK[:-1], "--enable-expert-parallel"]) == 0
    out = capsys.readouterr().out
    assert "TP 1 × DP 8 with EP: 8 GPUs, 1 node" in out
    # The line is cut at flags with " \\" to fit the terminal: joined, it is one command.
    lines = out.strip().splitlines()
    start = max(i for i, text in enumerate(lines) if text.strip().startswith("vllm serve"))
    last = " ".join(text.strip().removesuffix("\\").strip() for text in lines[start:])
    assert last.startswith(f"vllm serve {DSV3} --data-parallel-size 8")
    assert all(len(text) <= 100 for text in lines[start:])  # a pipe: 100 columns
