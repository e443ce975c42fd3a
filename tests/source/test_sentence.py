"""A sentence-transformers config read from the Hub and the local HF cache, as vLLM 0.32 reads
it beside config.json (source/sentence.py), through the loopback Hub."""

from __future__ import annotations

import pytest

from .conftest import BUDGET, EMBED, Online, plan_json


def test_hub_then_cache_offline(online: Online, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The repository's sentence_bert_config.json says 8192 (Qwen3-0.6B's config 40960): vLLM
    starts at 8192; its tokenizer_config.json (1024) is not what vLLM's generate runner reads.
    The second run, offline, finds the file in the snapshot without a request."""
    first = plan_json(capsys, "test/qwen3-embedding", *BUDGET)
    assert first["max_model_len"] == 8192
    assert first["source"]["revision"] == EMBED
    fetched = {path.rsplit("/", 1)[1] for method, path, _ in online.hub.log if method == "GET"}
    assert "sentence_bert_config.json" in fetched and "tokenizer_config.json" not in fetched
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = len(online.hub.log)
    second = plan_json(capsys, "test/qwen3-embedding", *BUDGET)
    assert len(online.hub.log) == before
    assert second["source"]["kind"] == "hf-cache"
    assert second["max_model_len"] == 8192
    assert not any("sentence-transformers" in w for w in second["warnings"])


def test_a_repository_without_one(online: Online, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Absent is not an error: config.json's 40960; offline afterwards, the cache knows the
    files are absent (recorded as huggingface_hub records them) and says nothing."""
    assert plan_json(capsys, "Qwen/Qwen3-0.6B", *BUDGET)["max_model_len"] == 40960
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    again = plan_json(capsys, "Qwen/Qwen3-0.6B", *BUDGET)
    assert again["max_model_len"] == 40960
    assert not any("sentence-transformers" in w for w in again["warnings"])


def test_offline_cache_that_cannot_say(online: Online, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A cached config.json alone (no record of the other files): offline, the plan says it
    could not check for a sentence-transformers config rather than pretend there is none."""
    plan_json(capsys, "Qwen/Qwen3-0.6B", *BUDGET)
    repo = online.cache / "models--Qwen--Qwen3-0.6B"
    for record in (repo / ".no_exist").rglob("sentence_*"):
        record.unlink()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data = plan_json(capsys, "Qwen/Qwen3-0.6B", *BUDGET)
    assert any("sentence-transformers config" in w and "offline" in w
               for w in data["warnings"])
