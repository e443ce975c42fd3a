"""The repr reader behind ``explain``: engine start-up lines are Python reprs, not JSON, and
nothing in them may be evaluated. Inputs are shaped like the real lines (vLLM's config line,
its non-default args, SGLang's ServerArgs); expected values are what the text spells."""

from __future__ import annotations

import pytest

from kvledger.report.pyrepr import ReprError, parse_kwargs, parse_literal


def test_dict_repr_with_nested_values() -> None:
    text = ("{'model': '~/m', 'served_model_name': ['a', 'b'], 'max_model_len': 131072, "
            "'gpu_memory_utilization': 0.92, 'enable_prefix_caching': True, 'x': None, "
            "'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 3}, "
            "'limit': {'image': 2, 'audio': 0}}")
    value = parse_literal(text)
    assert value["served_model_name"] == ["a", "b"]
    assert value["max_model_len"] == 131072
    assert value["gpu_memory_utilization"] == 0.92
    assert value["enable_prefix_caching"] is True and value["x"] is None
    assert value["speculative_config"] == {"method": "mtp", "num_speculative_tokens": 3}


def test_kwargs_with_bare_words_calls_enums_and_json() -> None:
    # The shapes of vLLM's "with config:" line (0.11-0.32): bare words, a dotted name, a
    # call, an enum repr with a tuple inside, and a JSON object.
    text = ("model='/m', speculative_config=SpeculativeConfig(method='mtp', model='/m', "
            "num_spec_tokens=3), tokenizer_mode=auto, dtype=torch.bfloat16, max_seq_len=4096, "
            "served_model_name=ibm-granite/granite-4.0-micro, "
            "compilation_config={'mode': <CompilationMode.VLLM_COMPILE: 3>, "
            "'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'sizes': [1, 2]}, "
            "cc={\"level\":3,\"use_inductor\":true,\"local_cache_dir\":null}, seed=0")
    kw = parse_kwargs(text)
    assert kw["model"] == "/m"
    assert kw["speculative_config"] == {"__class__": "SpeculativeConfig", "method": "mtp",
                                        "model": "/m", "num_spec_tokens": 3}
    assert kw["tokenizer_mode"] == "auto"
    assert kw["dtype"] == "torch.bfloat16"
    assert kw["max_seq_len"] == 4096
    assert kw["served_model_name"] == "ibm-granite/granite-4.0-micro"
    assert kw["compilation_config"]["cudagraph_mode"] == (
        "<CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>")
    assert kw["compilation_config"]["sizes"] == [1, 2]
    assert kw["cc"] == {"level": 3, "use_inductor": True, "local_cache_dir": None}
    assert kw["seed"] == 0


def test_truncated_value_is_dropped_not_guessed() -> None:
    # A paste cut mid-value: the quoted value is incomplete, so it must not become a model.
    kw = parse_kwargs("max_seq_len=8192, model='~/.cache/huggin")
    assert kw == {"max_seq_len": 8192}


def test_strings_keep_commas_brackets_and_escapes() -> None:
    kw = parse_kwargs("a='x, y=(1', b=\"it's\", c='tab\\there'")
    assert kw["a"] == "x, y=(1"
    assert kw["b"] == "it's"
    assert kw["c"] == "tab\there"


def test_not_a_literal_raises() -> None:
    with pytest.raises(ReprError):
        parse_literal("{'a': 1")
    with pytest.raises(ReprError):
        parse_literal("'a' trailing")
