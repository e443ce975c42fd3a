"""``--language-model-only`` and ``--mm-encoder-tp-mode data`` (vllm==0.33): the towers leave
the weights line, or every TP rank holds them whole. Worked by hand on Qwen2-VL-7B's vision
tower (../shared/configs, Qwen--Qwen2-VL-7B-Instruct.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.plan.weights import tower_bytes

CONFIG = Path(__file__).resolve().parents[2].parent / "shared" / "configs" / \
    "Qwen--Qwen2-VL-7B-Instruct.json"
# Qwen2-VL's vision tower (vLLM qwen2_vl.py Qwen2VisionTransformer): patch conv 3 · 2 · 14²
# · 1,280 = 1,505,280 (no bias); a block: two LayerNorms 2 · 2,560 = 5,120, qkv 1,280 · 3,840
# + 3,840 = 4,919,040, proj 1,280² + 1,280 = 1,639,680, fc1 1,280 · 5,120 + 5,120 = 6,558,720,
# fc2 5,120 · 1,280 + 1,280 = 6,554,880 → 19,677,440, × 32 = 629,678,080; merger LayerNorm
# 2,560 + Linear(5,120, 5,120) 26,219,520 + Linear(5,120, 3,584) 18,353,664 = 44,575,744.
# 675,759,104 parameters × 2 B (bfloat16) = 1,351,518,208 B.
TOWER = 1_351_518_208

pytestmark = pytest.mark.skipif(not CONFIG.is_file(), reason="../shared/configs not present")


def test_tower_bytes_by_hand() -> None:
    assert tower_bytes(json.loads(CONFIG.read_text()), "bfloat16") == TOWER


def plan(capsys: pytest.CaptureFixture[str], tmp_path: Path, *flags: str) -> dict[str, Any]:
    model = tmp_path / "qwen2-vl"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text(CONFIG.read_text())
    code = main(["plan", str(model), "--gpu", "H100-80GB", "--engine", "vllm==0.33",
                 "--max-model-len", "8192", "--json", *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def line(data: dict[str, Any], key: str) -> dict[str, Any]:
    rows = [row for row in data["budget"] if row["key"] == key]
    assert len(rows) == 1
    return rows[0]


def test_language_model_only_drops_the_tower_and_its_profiling(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plain = plan(capsys, tmp_path, "-tp", "2")
    text = plan(capsys, tmp_path, "-tp", "2", "--language-model-only")
    # Per GPU the tower was 1,351,518,208 / 2 = 675,759,104 B of the weights line.
    assert line(plain, "weights")["bytes"] - line(text, "weights")["bytes"] == 675_759_104
    # No encoder is profiled (get_limit_per_prompt is 0 for every modality).
    assert "encoder cache" in json.dumps(line(plain, "activation_peak"))
    assert "encoder cache" not in json.dumps(line(text, "activation_peak"))


def test_encoder_data_mode_holds_the_whole_tower_per_rank(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plain = plan(capsys, tmp_path, "-tp", "4")
    data = plan(capsys, tmp_path, "-tp", "4", "--mm-encoder-tp-mode", "data")
    # Qwen2-VL supports it (qwen2_vl.py supports_encoder_tp_data): each of 4 ranks holds
    # 1,351,518,208 B instead of 337,879,552: 1,013,638,656 B more.
    assert line(data, "weights")["bytes"] - line(plain, "weights")["bytes"] == 1_013_638_656


def test_serve_line_flags_reach_the_plan(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    model = tmp_path / "qwen2-vl"
    model.mkdir()
    (model / "config.json").write_text(CONFIG.read_text())
    code = main(["plan", "--gpu", "H100-80GB", "--json", "--", "vllm", "serve", str(model),
                 "-tp", "2", "--max-model-len", "8192", "--language-model-only"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "--language-model-only" in json.loads(out)["serve_line"]["kvledger_argv"]
