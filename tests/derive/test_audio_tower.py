"""``derive.params.towers.has_audio_tower`` on real configs (../shared/configs): which describe
an audio / speech tower, at the top level or inside a wrapper's language-model config (their
model cards: speech or audio input). ``cli/serve/checks.py`` reads it to refuse
``--limit-mm-per-prompt`` zeros that drop the vision tower but leave an audio one."""

from __future__ import annotations

import json

import pytest

from kvledger.derive.params.towers import has_audio_tower
from oracle_cases import CONFIGS


@pytest.mark.parametrize(("name", "audio"), [
    ("google--gemma-4-E2B-it", True), ("unsloth--gemma-3n-E2B-it", True),
    ("Qwen--Qwen2.5-Omni-7B", True), ("Qwen--Qwen2-Audio-7B-Instruct", True),
    ("mistralai--Voxtral-Mini-3B-2507", True), ("Qwen--Qwen2.5-VL-7B-Instruct", False),
])
def test_audio_tower_is_found(name: str, audio: bool) -> None:
    path = CONFIGS / f"{name}.json"
    if not path.is_file():
        pytest.skip(f"{name} is in ../shared/configs")
    assert has_audio_tower(json.loads(path.read_text())) is audio
