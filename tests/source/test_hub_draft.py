"""A speculative draft named by its Hub id is read as a model id is: the catalog, the local HF
cache, then the Hub (here the loopback one, ``conftest.online``). A pasted ``vllm serve`` line's
``--speculative-config`` ``model`` and kvledger's own ``--draft-config`` both take one.

The plan is tests/serve/test_serve_parallel_draft.py's, worked by hand there under vLLM 0.34:
Qwen/Qwen3-8B's 36 layers x 4,096 B + the draft's 2 layers x 4,096 B = 155,648 B a token, a
64-token block 9,961,472 B; 10 GiB -> 1,077 blocks, 68,928 tokens.
"""

from __future__ import annotations

import json

import pytest

from kvledger.cli.main import main

from .conftest import Online

SPEC = {"method": "dflash", "model": "test/qwen3-8b-dflash", "num_speculative_tokens": 15}
LINE = ["vllm", "serve", "Qwen/Qwen3-8B", "--kv-cache-memory-bytes", str(10 << 30),
        "--speculative-config", json.dumps(SPEC)]


def test_pasted_line_reads_its_hub_draft(online: Online,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--engine", "vllm==0.34", "--json", "--", *LINE])
    out, err = capsys.readouterr()
    assert code == 0, err
    plan = json.loads(out)
    assert (plan["block_size"], plan["num_blocks"], plan["kv_cache_tokens"]) == (64, 1077, 68928)


def test_draft_config_option_takes_a_hub_id(online: Online,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "Qwen/Qwen3-8B", "--engine", "vllm==0.34", "--json",
                 "--kv-cache-memory-bytes", str(10 << 30), "--speculative-method", "dflash",
                 "--num-speculative-tokens", "15", "--draft-config", "test/qwen3-8b-dflash"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["num_blocks"] == 1077


def test_a_draft_the_hub_does_not_have_is_one_line(online: Online,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    spec = {**SPEC, "model": "test/no-such-draft"}
    code = main(["plan", "--engine", "vllm==0.34", "--", *LINE[:-1], json.dumps(spec)])
    err = capsys.readouterr().err
    assert code == 2 and "--draft-config test/no-such-draft" in err
    assert len(err.strip().splitlines()) == 1


def test_an_eagle3_hub_draft_is_read_when_the_hub_answers(online: Online) -> None:
    from kvledger.cli.serve.translate import translate

    spec = {**SPEC, "method": "eagle3", "num_speculative_tokens": 3}
    out = translate([*LINE[:-1], json.dumps(spec)])
    assert out.options["--draft-config"] == "test/qwen3-8b-dflash"
