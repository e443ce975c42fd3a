"""A seeded generator of hostile inputs for the CLI: mutated real configs and odd options.

Every case is a function of ``(seed, index)`` alone, so a failure is reproduced by its index
(``KVLEDGER_FUZZ_ONLY=<index>``). A case is some files (a config, maybe its
``hf_quant_config.json`` companion, in a model directory or as a lone file) and an argv for
``kvledger`` that names them.

The configs are real (``../shared/configs``; without it, the bundled catalog's values of its
models' configs): mutating a real config reaches the keys real families read, which random
JSON never does.
Mutations: drop a key, give it a value of another type (bool, string, list, object, NaN,
infinity, a 400-digit integer, a float), scale a count (0, negative, x1000, 2**63), nest a
value thousands of levels deep, put the wrong container where an object belongs, add an
unknown key, and corrupt the bytes (truncated, non-UTF-8, a duplicated key, a list at the
top, empty). Options: sizes in every form, GPU names, TP/PP/DP, block sizes, KV dtypes,
lengths, batch limits, speculative decoding, engines, ``--concurrency``, and vLLM serve lines.
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SHARED_CONFIGS = ROOT / ".." / "shared" / "configs"
QUANT_SUFFIX = ".hf_quant_config.json"

NAN, INF = float("nan"), float("inf")
WEIRD: tuple[Any, ...] = (
    True, False, None, 0, 1, -1, 2, 3, 7, 2**31, 2**63, 10**30, 10**400, 0.5, 32.0, 1e30,
    NAN, INF, -INF, "", "x", "32", "bfloat16", "torch.float16", "fp8", [], [1, 2], {},
    {"a": 1}, [[[]]], "full_attention",
)
SCALES = (0, -1, 2, 3, 1000, 10**6, 10**9)
CACHE_LOOKING = ("sliding_window_size", "kv_shared_layers", "num_cache_heads", "attn_window",
                 "layer_pattern", "kv_dtype", "index_cache_ratio")

# Value lists put the plausible values first: ``_pick`` draws from the first half more often.
SIZES = ("20GiB", "1GiB", "80G", "1e9", "1.5GiB", "32K", "16GB", "64MiB", "4GiB", "1000",
         "32k", "0", "1", "-1", "nan", "inf", "", "9" * 400, "10**12", "2**40", "1e30", "abc")
GPUS = ("H100", "H100-80GB", "H200", "A100-40GB", "NVIDIA H100 PCIe", "L40", "B200",
        "MI300X", "a100 80gb", "NVIDIA A100-SXM4-40GB", "A100", "Z9000", "")
PARALLEL = ("1", "2", "4", "8", "1", "2", "3", "16", "64", "1000000", "0", "-1", "x")
BLOCKS = ("auto", "16", "32", "64", "128", "256", "16", "7", "8", "24", "48", "0", "-16",
          "100000", "1048576", "x")
KV_DTYPES = ("auto", "bfloat16", "fp8", "fp8_e4m3", "float16", "auto", "float32", "fp8_e5m2",
             "nvfp4", "int4", "")
LENGTHS = ("4096", "32k", "32768", "8192", "131072", "16", "1", "131073", "1M", "10000000",
           "0", "-5", "1e9", "nan", "9" * 40)
COUNTS = ("256", "1024", "8192", "4", "1", "100000", "0", "-1", "1e3", "x")
SPEC = (("mtp", "1"), ("mtp", "2"), ("eagle3", "1"), ("ngram", "3"), ("suffix", "2"),
        ("bogus", "1"), ("mtp", "0"), ("mtp", "-1"))
SERVE_FLAGS = (
    ("--tensor-parallel-size", PARALLEL), ("--pipeline-parallel-size", ("1", "2", "4")),
    ("--max-model-len", LENGTHS), ("--block-size", BLOCKS), ("--kv-cache-dtype", KV_DTYPES),
    ("--gpu-memory-utilization", ("0.9", "0.5", "1.0", "0", "1.5", "nan")),
    ("--max-num-seqs", COUNTS), ("--max-num-batched-tokens", COUNTS),
    ("--enable-prefix-caching", ()), ("--no-enable-prefix-caching", ()),
    ("--port", ("8000",)), ("--kv-cache-memory-bytes", SIZES), ("--dtype", ("auto", "half")),
)


@dataclass
class Case:
    """One fuzz input: files to write (name -> bytes) and the argv naming them (``{dir}`` is
    replaced by the case's directory)."""

    index: int
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    what: list[str] = field(default_factory=list)  # the mutations, for a failure message
    json_out: bool = False


# (file name, config.json text, hf_quant_config.json text or None)
Source = tuple[str, str, str | None]


def config_files() -> list[Source]:
    """Every real config the generator mutates, sorted by name: ../shared/configs (each with
    its companion), else the bundled catalog's rows."""
    found: list[Source] = []
    if SHARED_CONFIGS.is_dir():
        for path in SHARED_CONFIGS.glob("*.json"):
            if path.name.endswith(QUANT_SUFFIX):
                continue
            quant = path.with_name(path.name.removesuffix(".json") + QUANT_SUFFIX)
            found.append((path.name, path.read_text(),
                          quant.read_text() if quant.is_file() else None))
        return sorted(found)
    from kvledger.source.catalog import catalog_rows

    for row in catalog_rows():
        quant = row.get("hf_quant_config")
        found.append((row["source"]["file"], json.dumps(row["config"]),
                      json.dumps(quant) if quant is not None else None))
    return sorted(found)


# -- mutating a parsed config --------------------------------------------------------------


def _containers(node: Any, depth: int = 0) -> list[Any]:
    """Every dict (and list) in the config, to pick where a mutation lands."""
    out: list[Any] = [node]
    if depth > 6:
        return out
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) \
        else ()
    for child in children:
        if isinstance(child, dict | list):
            out.extend(_containers(child, depth + 1))
    return out


DEEP = "__kvledger_fuzz_deep_{}__"


def _nest(depth: int) -> str:
    """A placeholder ``_dump`` replaces by ``depth`` nested arrays and objects (json.dumps
    itself would recurse too deep to write them)."""
    return DEEP.format(depth)


def _deep_text(depth: int) -> bytes:
    opening = b"".join(b"[" if i % 2 else b'{"k": ' for i in range(depth))
    closing = b"".join(b"]" if i % 2 else b"}" for i in reversed(range(depth)))
    return opening + b"1" + closing


def mutate(data: Any, rng: random.Random, what: list[str]) -> Any:
    """One mutation of ``data`` (in place where it can be; the new top level is returned)."""
    dicts = [c for c in _containers(data) if isinstance(c, dict) and c]
    op = rng.random()
    if not dicts or op < 0.03:
        what.append("top level replaced")
        return rng.choice(([1, 2], "config", 3, None, []))
    target = rng.choice(dicts)
    key = rng.choice(sorted(target))
    if op < 0.18:
        what.append(f"drop {key}")
        del target[key]
    elif op < 0.55:
        value = copy.deepcopy(rng.choice(WEIRD))  # a fresh object: never shared, never cyclic
        what.append(f"{key} = {str(value)[:20]}")
        target[key] = value
    elif op < 0.78:
        ints = [k for k, v in target.items() if isinstance(v, int) and not isinstance(v, bool)]
        key = rng.choice(ints) if ints else key
        old = target[key]
        factor = rng.choice(SCALES)
        target[key] = old * factor if isinstance(old, int) and not isinstance(old, bool) \
            else factor
        what.append(f"{key} x {factor}")
    elif op < 0.84:
        depth = rng.choice((10, 70, 500, 3000))
        what.append(f"{key} nested {depth} deep")
        target[key] = _nest(depth)
    elif op < 0.92:
        value = rng.choice(([copy.deepcopy(target[key])], str(target[key])[:30],
                            list(range(3)), 5))
        what.append(f"{key} wrong container")
        target[key] = value
    else:
        new = rng.choice(CACHE_LOOKING)
        what.append(f"add {new}")
        target[new] = rng.choice((4096, True, "x", [1, 2], 0))
    return data


def corrupt(text: bytes, rng: random.Random, what: list[str]) -> bytes:
    """A byte-level corruption of a serialised config."""
    op = rng.randrange(6)
    if op == 0:
        what.append("truncated")
        return text[: rng.randrange(max(1, len(text)))]
    if op == 1:
        what.append("non-UTF-8 byte")
        at = rng.randrange(max(1, len(text)))
        return text[:at] + b"\xff\xfe" + text[at:]
    if op == 2:
        what.append("duplicate key")
        return text.replace(b"{", b'{"num_hidden_layers": 7, "num_hidden_layers": 9, ', 1)
    if op == 3:
        what.append("empty file")
        return b""
    if op == 4:
        what.append("100k-deep JSON")
        return b"[" * 100_000 + b"]" * 100_000
    what.append("UTF-8 BOM")
    return b"\xef\xbb\xbf" + text


def _dump(data: Any) -> bytes:
    text = json.dumps(data, indent=1).encode()  # NaN / Infinity as Python's json writes them
    for depth in (10, 70, 500, 3000):
        text = text.replace(json.dumps(DEEP.format(depth)).encode(), _deep_text(depth))
    return text


# -- options ---------------------------------------------------------------------------------


def _pick(rng: random.Random, values: tuple[str, ...]) -> str:
    """Mostly a plausible value (the first half of the list), sometimes any."""
    if rng.random() < 0.65:
        return rng.choice(values[: max(1, len(values) // 2)])
    return rng.choice(values)


def _options(rng: random.Random, what: list[str]) -> list[str]:
    argv: list[str] = []
    budget = rng.random()
    if budget < 0.7:
        argv += ["--kv-cache-memory-bytes", rng.choice(SIZES) if rng.random() < 0.25
                 else rng.choice(("20GiB", "80GiB", "4GiB"))]
    elif budget < 0.95:
        argv += ["--gpu", _pick(rng, GPUS)]
    menu: list[tuple[str, tuple[str, ...]]] = [
        ("--engine", ("vllm", "vllm", "native", "sglang", "bogus")),
        ("--tensor-parallel-size", PARALLEL), ("--pipeline-parallel-size", PARALLEL),
        ("--data-parallel-size", ("1", "2", "0")), ("--block-size", BLOCKS),
        ("--kv-cache-dtype", KV_DTYPES), ("--max-model-len", LENGTHS),
        ("--max-num-seqs", COUNTS), ("--max-num-batched-tokens", COUNTS),
        ("--gpu-memory-utilization", ("0.9", "0.5", "1", "0", "1.5", "nan", "-0.1")),
        ("--concurrency", ("1", "8", "0", "100000")),
        ("--activation-peak-bytes", SIZES), ("--cuda-graph-bytes", SIZES),
    ]
    for _ in range(rng.randint(0, 3)):
        flag, values = rng.choice(menu)
        argv += [flag, _pick(rng, values)]
    if rng.random() < 0.1:
        method, tokens = rng.choice(SPEC)
        argv += ["--speculative-method", method, "--num-speculative-tokens", tokens]
    if rng.random() < 0.1:
        argv.append(rng.choice(("--enable-prefix-caching", "--no-enable-prefix-caching",
                                "--allow-long-max-model-len")))
    what.append(" ".join(argv))
    return argv


def _serve_line(model: str, rng: random.Random, what: list[str]) -> list[str]:
    words = ["vllm", "serve", model]
    if rng.random() < 0.2:
        words.insert(0, "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")
    for _ in range(rng.randint(0, 5)):
        flag, values = rng.choice(SERVE_FLAGS)
        words += [flag, _pick(rng, values)] if values else [flag]
    what.append("serve: " + " ".join(words))
    return words


# -- a case --------------------------------------------------------------------------------


def make_case(seed: int, index: int, configs: list[Source]) -> Case:
    rng = random.Random(seed * 1_000_003 + index)
    name, text, companion = configs[rng.randrange(len(configs))]
    case = Case(index=index, argv=[], what=[name])
    data: Any = json.loads(text)
    quant: Any = json.loads(companion) if companion else None
    clean = rng.random() < 0.4
    if not clean:
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            data = mutate(data, rng, case.what)
        if quant is not None and rng.random() < 0.3:
            quant = mutate(quant, rng, case.what)
        elif rng.random() < 0.05:
            quant = rng.choice(({"quantization": "FP8"}, {"quantization": {"quant_algo": "Q7"}},
                                [], {"producer": {"name": "modelopt"}, "quantization": {
                                    "quant_algo": "FP8", "kv_cache_quant_algo": 7}}))
            case.what.append(f"hf_quant_config {str(quant)[:40]}")
    text = _dump(data)
    if not clean and rng.random() < 0.08:
        text = corrupt(text, rng, case.what)
    as_directory = quant is not None or rng.random() < 0.3
    if as_directory:
        case.files["model/config.json"] = text
        if quant is not None:
            case.files["model/hf_quant_config.json"] = _dump(quant)
        model = "{dir}/model"
    else:
        case.files["config.json"] = text
        model = "{dir}/config.json"
    command = rng.random()
    if command < 0.08:
        case.argv = ["inspect", model, "--json"]
        case.json_out = True
        return case
    if command < 0.11:
        case.argv = ["fit", model, "--gpu", rng.choice(("H100", "H200")), "--concurrency",
                     rng.choice(("1", "8")), "--context", rng.choice(("4096", "32k")), "--json"]
        case.json_out = True
        return case
    json_out = rng.random() < 0.85
    head = ["plan"] + (["--json"] if json_out else [])
    if command < 0.22:
        budget = ["--gpu", "H100"] if rng.random() < 0.5 else []
        case.argv = [*head, *budget, "--", *_serve_line(model, rng, case.what)]
    else:
        case.argv = [*head, model, *_options(rng, case.what)]
    case.json_out = json_out
    return case
