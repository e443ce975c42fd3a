"""MODEL resolution without a network: paths, the local HF cache, the bundled catalog.

The cache layouts here are written by hand as huggingface_hub documents and writes them
(``models--org--name/refs/<rev>`` holding a commit, ``snapshots/<commit>/<file>``,
``.no_exist/<commit>/<file>``); tests/source/test_hub.py checks the cache huggingface_hub
itself writes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvledger.cli.main import main
from kvledger.source import load_source
from kvledger.source.errors import SourceError
from kvledger.source.sentence import SENTENCE_CONFIGS

from .conftest import plan_json

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
BUDGET = ["--kv-cache-memory-bytes", "10737418240"]
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _cache(root: Path, repo_id: str, files: dict[str, bytes], *, refs: tuple[str, ...] = ("main",),
           commit: str = COMMIT, no_exist: tuple[str, ...] = ()) -> Path:
    repo = root / ("models--" + repo_id.replace("/", "--"))
    for ref in refs:
        (repo / "refs" / ref).parent.mkdir(parents=True, exist_ok=True)
        (repo / "refs" / ref).write_text(commit)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for name, data in files.items():
        (snapshot / name).write_bytes(data)
    for name in no_exist:
        (repo / ".no_exist" / commit).mkdir(parents=True, exist_ok=True)
        (repo / ".no_exist" / commit / name).touch()
    return repo


def _qwen_config() -> bytes:
    """Qwen3-8B's config as the catalog states it (a config.json of a model not bundled)."""
    return json.dumps(load_source("Qwen/Qwen3-8B").config).encode()


def _qwen_file(folder: Path) -> str:
    path = folder / "Qwen--Qwen3-8B.json"
    path.write_bytes(_qwen_config())
    return str(path)


def _fails(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.splitlines()) == 1, (code, out, err)
    return err


def test_catalog_ids_match_case_insensitively() -> None:
    source = load_source("META-LLAMA/meta-llama-3.1-8b")
    assert source.label == LLAMA
    assert source.describe() == {"kind": "catalog", "revision": None, "location":
                                 "kvledger catalog (meta-llama/Meta-Llama-3.1-8B)"}


def test_source_in_inspect_json_and_plan_table(capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # wide: every column shown, each sentence one line
    assert main(["inspect", LLAMA, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["source"]["kind"] == "catalog"
    assert main(["plan", LLAMA, *BUDGET]) == 0
    table = capsys.readouterr().out
    assert "kvledger catalog (meta-llama/Meta-Llama-3.1-8B)" in table


def test_offline_miss_suggests_and_names_the_way_out(capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(capsys, "plan", "meta-llama/Meta-Llama-3.1-8C", *BUDGET)
    assert "did you mean meta-llama/Meta-Llama-3.1-8B?" in line
    assert "HF_HUB_OFFLINE=1" in line and "kvledger models" in line
    line = _fails(capsys, "inspect", "zzz/nothing-like-it")
    assert "did you mean" not in line


def test_catalog_id_at_a_revision_is_not_suggested_to_itself(
        capsys: pytest.CaptureFixture[str]) -> None:
    # The bundled copy is not any revision, so offline the id misses; suggesting that very id
    # back ("did you mean meta-llama/Meta-Llama-3.1-8B?") helped nobody.
    line = _fails(capsys, "plan", LLAMA, "--revision", "abc123", *BUDGET)
    assert "did you mean" not in line
    assert "drop --revision" in line


def test_mistyped_path_is_not_sent_to_the_hub(capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(capsys, "plan", "./configs/llama.json", *BUDGET)
    assert "no such file or directory" in line


def test_revision_does_not_apply_to_a_path(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    line = _fails(capsys, "plan", _qwen_file(tmp_path), "--revision", "main", *BUDGET)
    assert "--revision main does not apply" in line


def test_hf_cache_is_read_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = Path(os.environ["HF_HUB_CACHE"])
    _cache(cache, "Qwen/Qwen3-8B-Base", {"config.json": _qwen_config()},
           no_exist=("hf_quant_config.json", *SENTENCE_CONFIGS))
    cached = plan_json(capsys, "Qwen/Qwen3-8B-Base", *BUDGET)
    bundled = plan_json(capsys, "Qwen/Qwen3-8B", *BUDGET)  # the same config, from the catalog
    assert {k: v for k, v in cached.items() if k not in ("model", "source")} == \
        {k: v for k, v in bundled.items() if k not in ("model", "source")}
    assert cached["source"]["kind"] == "hf-cache" and cached["source"]["revision"] == COMMIT
    assert cached["warnings"] == []  # .no_exist says: no hf_quant_config.json, no sentence_*


def test_hf_cache_comes_before_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    """A cached copy of a catalog model is the user's own: it wins (and it has weights)."""
    config = load_source(LLAMA).config
    config["num_hidden_layers"] = 16  # so the two can be told apart: half the KV per token
    _cache(Path(os.environ["HF_HUB_CACHE"]), LLAMA, {"config.json": json.dumps(config).encode()},
           no_exist=("hf_quant_config.json",))
    data = plan_json(capsys, LLAMA, *BUDGET)
    assert data["source"]["kind"] == "hf-cache"
    # 16 layers × 8 KV heads × 128 dims × 2 (K and V) × 2 B = 65,536 B per token.
    assert data["layers"][0]["bytes_per_token"] * data["layers"][0]["count"] == 65_536


def test_unknown_companion_file_is_a_warning_offline(
        capsys: pytest.CaptureFixture[str]) -> None:
    _cache(Path(os.environ["HF_HUB_CACHE"]), "Qwen/Qwen3-8B-Base", {"config.json": _qwen_config()})
    data = plan_json(capsys, "Qwen/Qwen3-8B-Base", *BUDGET)
    assert any("hf_quant_config.json" in w and "offline" in w for w in data["warnings"])


def test_cache_folder_and_revisions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = "fedcba9876543210fedcba9876543210fedcba98"
    root = tmp_path / "hub"
    folder = _cache(root, "Qwen/Qwen3-8B-Base", {"config.json": _qwen_config()},
                    no_exist=("hf_quant_config.json",))
    _cache(root, "Qwen/Qwen3-8B-Base", {"config.json": _qwen_config()}, refs=("v1",),
           commit=other, no_exist=("hf_quant_config.json",))
    def revision(*argv: str) -> str:
        return str(plan_json(capsys, str(folder), *argv, *BUDGET)["source"]["revision"])

    assert revision() == COMMIT
    assert revision("--revision", "v1") == other
    assert revision("--revision", other) == other
    line = _fails(capsys, "plan", str(folder), "--revision", "v2", *BUDGET)
    assert "'v2'" in line and "refs: main, v1" in line


def test_cached_model_at_another_revision(capsys: pytest.CaptureFixture[str]) -> None:
    _cache(Path(os.environ["HF_HUB_CACHE"]), "Qwen/Qwen3-8B-Base", {"config.json": _qwen_config()})
    line = _fails(capsys, "plan", "Qwen/Qwen3-8B-Base", "--revision", "v9", *BUDGET)
    assert "no revision 'v9'" in line and "main" in line and "did you mean" not in line


def test_snapshot_path_knows_its_commit(tmp_path: Path) -> None:
    folder = _cache(tmp_path / "hub", "Qwen/Qwen3-8B-Base", {"config.json": _qwen_config()})
    source = load_source(str(folder / "snapshots" / COMMIT))
    assert (source.kind, source.repo_id, source.revision) == ("path", "Qwen/Qwen3-8B-Base",
                                                              COMMIT)


def test_derive_source_still_exports() -> None:
    from kvledger.derive.source import ModelSource, catalog_ids
    from kvledger.derive.source import load_source as old

    assert old is load_source and LLAMA in catalog_ids()
    assert isinstance(old(LLAMA), ModelSource)


def test_errors_are_config_errors() -> None:
    from kvledger.derive.errors import ConfigError

    with pytest.raises(ConfigError):
        load_source("no-org/no-model", offline=True)
    with pytest.raises(SourceError):
        load_source("no-org/no-model", offline=True)


@pytest.mark.parametrize("model", [LLAMA, "CATALOG_FILE", "CACHED"])
def test_no_huggingface_hub_import_without_the_hub(model: str, tmp_path: Path) -> None:
    """A catalog id, a config file and a cached model plan without importing huggingface_hub
    (~0.2 s) — and without the network: HF_HUB_OFFLINE is not set in this child."""
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    if model == "CATALOG_FILE":
        model = _qwen_file(tmp_path)
    elif model == "CACHED":
        _cache(Path(env["HF_HUB_CACHE"]), "Qwen/Qwen3-8B-Base", {"config.json": _qwen_config()},
               no_exist=("hf_quant_config.json", *SENTENCE_CONFIGS))
        model = "Qwen/Qwen3-8B-Base"
    code = (
        "import sys; from kvledger.cli.main import main; "
        f"rc = main(['plan', {model!r}, '--kv-cache-memory-bytes', '10737418240', '--json']); "
        "assert rc == 0, rc; "
        "assert not [m for m in sys.modules if m.startswith('huggingface_hub')], 'imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
