"""Walk the model-type table (derive/model_types.py): every row resolves, every handler
imports and accepts its row's options, wrappers point at real inner rows, and no key list is
dead — each checked key is named by its handler's code, each harmless key says why and is one
the guard would otherwise stop on, each default belongs to a key the row reads.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from derive.coverage import vllm_facts
from kvledger.derive import UnknownCacheKey, UnsupportedArchitecture, derive_model
from kvledger.derive.guard import CACHE_AFFECTING
from kvledger.derive.model_types import (
    ARCHITECTURES,
    CORE_KEYS,
    HARMLESS,
    MODEL_TYPES,
    WEIGHT_KEYS,
    resolve,
    supported_types,
)
from kvledger.derive.registry import HANDLER_PACKAGE, handler_for

ROWS = sorted(MODEL_TYPES)
CORE_MODULES = ("kvledger.derive", "kvledger.derive.kvdtype", "kvledger.derive.config")


def _is_docstring(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    parent = parents.get(node)
    if not isinstance(parent, ast.Expr):
        return False
    owner = parents.get(parent)
    body = getattr(owner, "body", None)
    return bool(body) and body[0] is parent


@cache
def _strings(module_name: str) -> frozenset[str]:
    """String constants in a module's code (not its docstrings), plus those of the
    kvledger.derive.families modules it imports: the keys that code can look up."""
    module = importlib.import_module(module_name)
    tree = ast.parse(Path(inspect.getfile(module)).read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = {
        node.value for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and not _is_docstring(node, parents)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(HANDLER_PACKAGE):
            found |= _strings(node.module or "")
    return frozenset(found)


def _read_by(row_name: str) -> frozenset[str]:
    row = resolve(row_name)
    module = f"{HANDLER_PACKAGE}.{row.handler.split(':')[0]}"
    core = frozenset().union(*(_strings(m) for m in CORE_MODULES))
    # a key an option names is read through that option (standard's layers_key="num_layers")
    named = frozenset(v for v in row.options.values() if isinstance(v, str))
    return _strings(module) | core | named


@pytest.mark.parametrize("name", ROWS)
def test_row_resolves(name: str) -> None:
    row = resolve(name)
    assert row.chain[0] == name
    for link in row.chain[1:]:
        assert link in MODEL_TYPES, f"{name}: like={link!r} is not a row"
    if not row.derivable:
        # A type kvledger recognizes but does not derive: the default engine says why it
        # does not serve it (derive itself knows no engine).
        from kvledger.plan.engines.vllm.releases import vllm_release

        why = vllm_release("0.32").not_served.get(name, "")
        assert len(why) > 40, f"{name}: a refusal says why"
        return
    if row.is_wrapper:
        assert not row.handler, f"{name}: a wrapper's handler is its inner row's"
        assert row.inner, f"{name}: a wrapper lists the inner types it accepts"
        for inner in row.inner:
            # An inner row may itself be a wrapper (Qwen2.5-Omni's thinker); the chain must
            # end in a language model.
            seen, level = {name}, resolve(inner)
            while level.is_wrapper:
                assert level.name not in seen, f"{name}: wrapper cycle through {level.name}"
                seen.add(level.name)
                level = resolve(level.inner[0])
            assert level.handler, f"{name}: {inner} leads to no handler"
        for inner, defaults in row.text_defaults.items():
            assert inner in row.inner, f"{name}: text_defaults for {inner}, not an inner type"
            stray = sorted(set(defaults) - resolve(inner).keys - CORE_KEYS - WEIGHT_KEYS)
            assert not stray, f"{name}: text_defaults for keys {inner} never reads: {stray}"
        assert not row.keys, f"{name}: a wrapper level reads no keys of its own"
        return
    assert not row.text_defaults and not row.text_inline, f"{name}: wrapper fields on a model"
    fn = handler_for(row)
    assert callable(fn)
    # Options are the handler's keyword arguments: they must bind.
    inspect.signature(fn).bind(None, "bfloat16", **row.options)


@pytest.mark.parametrize("name", [n for n in ROWS if resolve(n).handler])
def test_every_checked_key_is_read_by_its_handler(name: str) -> None:
    row = resolve(name)
    dead = sorted(row.keys - _read_by(name))
    assert not dead, f"{name}: keys its handler ({row.handler}) never names: {dead}"


@pytest.mark.parametrize("name", ROWS)
def test_harmless_keys_say_why_and_would_otherwise_stop_the_guard(name: str) -> None:
    row = resolve(name)
    for key, why in {**HARMLESS, **row.harmless}.items():
        assert isinstance(why, str) and len(why) > 10, f"{name}: {key} has no reason"
        # A key the guard would never stop on needs no entry: listing it is dead weight.
        assert re.search(CACHE_AFFECTING, key, re.IGNORECASE), f"{key} is listed for nothing"
    both = sorted(set(row.harmless) & row.keys)
    assert not both, f"{name}: keys both read and declared harmless: {both}"
    assert not (row.off & row.keys), f"{name}: an off key is not read"


@pytest.mark.parametrize("name", ROWS)
def test_defaults_belong_to_keys_the_row_reads(name: str) -> None:
    row = resolve(name)
    stray = sorted(set(row.defaults) - row.keys - CORE_KEYS - WEIGHT_KEYS)
    assert not stray, f"{name}: defaults for keys no handler reads: {stray}"
    if row.defaults:
        assert row.config_class, f"{name}: defaults cite their config class"


def test_weight_keys_are_read_by_the_weights_estimate() -> None:
    # WEIGHT_KEYS may carry class defaults only because the weight count (derive/params/)
    # reads them.
    from kvledger.derive import params

    package = Path(inspect.getfile(params)).parent
    source = "".join(f.read_text() for f in sorted(package.glob("*.py")))
    assert all(f'"{key}"' in source for key in WEIGHT_KEYS)


def test_architecture_rows_exist() -> None:
    for arch, name in ARCHITECTURES.items():
        assert name in MODEL_TYPES, arch


def test_like_cycle_is_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    from kvledger.derive import model_types

    rows = dict(model_types.MODEL_TYPES)
    rows["a"] = model_types.T(like="b")
    rows["b"] = model_types.T(like="a")
    monkeypatch.setattr(model_types, "MODEL_TYPES", rows)
    monkeypatch.setattr(model_types, "_RESOLVED", {})
    with pytest.raises(ValueError, match="cycle"):
        model_types.resolve("a")


def test_supported_types_exclude_refusals() -> None:
    names = supported_types()
    assert "llama" in names and "qwen3_vl" in names
    assert "mimo" not in names and "deepseek_ref" not in names


# -- the guard is the same at every level --------------------------------------------------
def _qwen3_vl() -> dict:
    return {
        "model_type": "qwen3_vl", "architectures": ["Qwen3VLForConditionalGeneration"],
        "text_config": {
            "model_type": "qwen3_vl_text", "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 64, "hidden_size": 256, "dtype": "bfloat16",
        },
        "vision_config": {"depth": 2},
    }


def test_unknown_key_in_a_wrapper_text_config_fails_closed() -> None:
    raw = _qwen3_vl()
    raw["text_config"]["kv_sharing_layers"] = [1]
    with pytest.raises(UnknownCacheKey, match="kv_sharing_layers"):
        derive_model(raw)


def test_unknown_key_on_a_wrapper_top_level_fails_closed() -> None:
    raw = _qwen3_vl()
    raw["sliding_window"] = 512
    with pytest.raises(UnknownCacheKey, match="sliding_window"):
        derive_model(raw)


def test_wrapper_refuses_an_inner_type_it_does_not_hold() -> None:
    raw = _qwen3_vl()
    raw["text_config"]["model_type"] = "qwen3_moe"
    with pytest.raises(UnsupportedArchitecture, match="qwen3_vl_text"):
        derive_model(raw)


def test_off_key_on_an_inner_level_is_refused_naming_it() -> None:
    raw = {
        "model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
        "text_config": {"model_type": "qwen3_5_text", "use_sliding_window": True},
    }
    with pytest.raises(UnsupportedArchitecture, match="use_sliding_window=True"):
        derive_model(raw)


def test_refused_model_type_says_why() -> None:
    with pytest.raises(UnsupportedArchitecture, match="Transformers does not recognize"):
        vllm_facts({"model_type": "mimo", "num_hidden_layers": 2})


def test_unknown_model_type_lists_the_table() -> None:
    with pytest.raises(UnsupportedArchitecture, match="no row in kvledger's model-type table"):
        derive_model({"model_type": "no_such_model"})


def test_class_default_fills_an_omitted_key() -> None:
    # Qwen3Config (transformers 5.19) defaults head_dim to 128 whatever hidden_size says:
    # hidden 256 / 4 heads = 64 would be the guess; vLLM sees 128.
    # per layer 2 (K,V) × 2 kv heads × 128 × 2 B = 1,024 B/token.
    raw = {"model_type": "qwen3", "num_hidden_layers": 1, "num_attention_heads": 4,
           "num_key_value_heads": 2, "hidden_size": 256, "torch_dtype": "bfloat16"}
    facts = derive_model(raw)
    assert facts.bytes_per_token() == 1_024
    # Stated null is not omitted: the class keeps None and vLLM's fallback (64) applies.
    facts = derive_model({**raw, "head_dim": None})
    assert facts.bytes_per_token() == 512  # 2 × 2 × 64 × 2 B


def test_classification_head_options_do_not_block(config_copy: Any) -> None:
    # WhisperForAudioClassification's options (transformers WhisperConfig): vLLM serves
    # Whisper for transcription and never builds that head, so they change no cache.
    raw = config_copy("openai/whisper-tiny")
    plain = derive_model(raw).bytes_per_token()
    raw.update({"use_weighted_layer_sum": True, "classifier_proj_size": 256, "num_labels": 3,
                "id2label": {"0": "a", "1": "b", "2": "c"}, "classifier_dropout": 0.1})
    assert derive_model(raw).bytes_per_token() == plain


# -- one wording per kind of refusal ---------------------------------------------------------
# Each row keeps its own facts (its model_type, the architecture, the last vLLM release that
# served it, a note of its own after "; "); the sentence around them is the same for every row
# of a kind, so a reader (and a script reading `kvledger models --json`) sees one refusal per
# reason, not one per engineer who wrote a row.
REMOTE_CODE = re.compile(
    r"model_type '(?P<type>[^']+)'(?: \([^()]+\))? has no transformers 5\.19 or vLLM 0\.32 "
    r"config class, so vLLM 0\.32 serves (?P<arch>\w+) only with --trust-remote-code, running "
    r"the checkpoint's own configuration code, which kvledger does not run\. Without the flag "
    r"vLLM stops at config loading: 'The repository \.\.\. contains custom code which must be "
    r"executed to correctly load the model' when the config carries an auto_map, 'The "
    r"checkpoint you are trying to load has model type `(?P=type)` but Transformers does not "
    r"recognize this architecture' when it does not(?:; .+)?"
)
DROPPED = re.compile(
    r"vLLM 0\.32 has no model for model_type '(?P<type>[^']+)' \('Model architecture "
    r"(?P<arch>\w+) was supported in vLLM until v(?P<last>[0-9.]+), and is not supported "
    r"anymore'\)(?:; .+)?"
)
TRANSFORMERS_BACKEND = re.compile(
    r"vLLM 0\.32 has no model of its own for model_type '(?P<type>[^']+)' \((?P<arch>\w+), "
    r"[^()]+ v(?P<last>[0-9.]+)[^()]*\) and hands it to its Transformers backend "
    r"\(Transformers\w+\): .+"
)
KINDS = {"only with --trust-remote-code, running": REMOTE_CODE,
         "was supported in vLLM until": DROPPED,
         "hands it to its Transformers backend": TRANSFORMERS_BACKEND}


@pytest.mark.parametrize("name", ROWS)
def test_each_kind_of_refusal_has_one_wording(name: str) -> None:
    from kvledger.plan.engines.vllm.releases import vllm_release

    for reason in (vllm_release("0.32").not_served.get(name, ""),):
        for marker, wording in KINDS.items():
            if marker in reason:
                found = wording.fullmatch(reason)
                assert found, reason
                assert found["type"] == name
