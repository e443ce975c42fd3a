"""What a person reads fits the terminal: at ``COLUMNS=80`` no line of ``plan``, ``fit``,
``inspect`` or ``explain`` is longer than 80 characters, over the catalog's first ten models
(``kvledger models``), and the first line is the answer. A pipe without ``COLUMNS`` gets 100
columns (not the 140 it was forced to), and no number is split over two lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kvledger.cli.main import main
from kvledger.plan.engines.vllm.releases import NEWEST
from kvledger.source.catalog import catalog_ids

LOG = str(Path(__file__).parents[1] / "explain" / "logs" / "vllm-0.10-pr20707-llama31-8b.log")
FIRST_TEN = catalog_ids()[:10]  # `kvledger models` lists the catalog in this order


def _lines(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str] | None:
    """stdout's lines, or None when the command refused (exit 2: one line on stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    if code == 2:
        assert out == "" and len(err.strip().splitlines()) == 1, err
        return None
    assert code == 0, err
    return out.splitlines()


def _too_long(lines: list[str], width: int) -> list[str]:
    return [line for line in lines if len(line) > width]


def test_first_ten_is_the_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    listed = [line.strip() for line in capsys.readouterr().out.splitlines()[1:11]]
    assert listed == FIRST_TEN


@pytest.mark.parametrize("model", FIRST_TEN)
def test_80_columns(model: str, capsys: pytest.CaptureFixture[str],
                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    plan = _lines(capsys, "plan", model, "--gpu", "H100-80GB")
    if plan is not None:
        assert _too_long(plan, 80) == []
        assert plan[0].startswith(f"{model} on vllm {NEWEST} (TP 1): ")
        assert re.search(r": (fits|does not fit)", plan[0])
    asked = _lines(capsys, "plan", model, "--gpu", "H100-80GB", "--concurrency", "8")
    if asked is not None:
        assert _too_long(asked, 80) == []
        assert asked[0].startswith("8 requests at once: ")
    fit = _lines(capsys, "fit", model, "--gpu", "H100-80GB", "--concurrency", "16",
                 "--context", "8192")
    assert fit is not None and _too_long(fit, 80) == []
    assert fit[0].startswith("16 requests × 8,192 tokens on H100-80GB: ")
    assert re.search(r": (fits on TP|nothing fits)", fit[0])
    inspected = _lines(capsys, "inspect", model)
    assert inspected is not None and _too_long(inspected, 80) == []
    assert inspected[0].startswith(model)
    explained = _lines(capsys, "explain", LOG, "--model", model)
    assert explained is not None and _too_long(explained, 80) == []
    assert explained[0].startswith("vllm ") and " checks match" in " ".join(explained[:2])


def test_a_pipe_gets_100_columns_and_columns_wins(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    argv = ("plan", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100-80GB")
    piped = _lines(capsys, *argv)
    assert piped is not None
    assert max(map(len, piped)) == 100  # the tables fill the width; never past it
    monkeypatch.setenv("COLUMNS", "132")
    wide = _lines(capsys, *argv)
    assert wide is not None and max(map(len, wide)) <= 132 and max(map(len, wide)) > 100


def test_no_number_is_split(capsys: pytest.CaptureFixture[str],
                            monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM 0.33, Llama-3.1-8B on an H100 (engine="vllm==0.33"): every figure of the plan
    JSON prints whole at 80 columns."""
    argv = ["plan", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H100-80GB"]
    assert main([*argv, "--json"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    monkeypatch.setenv("COLUMNS", "80")
    lines = _lines(capsys, *argv)
    assert lines is not None
    # 32 layers × 2 (K, V) × 8 KV heads × 128 × 2 B = 131,072 B per token.
    assert data["bytes_per_token"] == 131_072
    figures = [f"{data[key]:,}" for key in ("num_blocks", "kv_cache_tokens", "max_model_len",
                                           "available_bytes", "bytes_per_token")]
    figures += [f"{line['bytes']:,}" for line in data["budget"]]
    for figure in figures:
        assert any(figure in line for line in lines), figure


def test_an_omni_deployment_at_80_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from cli.test_cli_omni import TINY, TINY_YAML

    config, deploy = tmp_path / "config.json", tmp_path / "deploy.yaml"
    config.write_text(json.dumps(TINY))
    deploy.write_text(TINY_YAML)
    monkeypatch.setenv("COLUMNS", "80")
    lines = _lines(capsys, "plan", str(config), "--omni-deploy", str(deploy),
                   "--gpu-total-bytes", "16GiB", "--concurrency", "2")
    assert lines is not None and _too_long(lines, 80) == []
    # The admission sum's figures stay whole when its line is cut.
    assert any("17,179,869,184 B" in line for line in lines)
