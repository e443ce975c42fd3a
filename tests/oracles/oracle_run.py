"""What the oracle-runner scripts (``run_*.py`` here) share: asking the vLLM oracle tool about
one config, picking runs by substring, turning its answer into the parts of a case line, and
merging lines into a ``.jsonl`` file by command.

A research helper, never imported by the package or the tests. One copy, so that a new field of
the oracle's answer (or a fix to how a part is copied) reaches every group's runner at once;
each runner still assembles its own line, so every file keeps the exact format it has.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / ".." / "shared"
TOOL = SHARED / "oracles" / "tool" / "vllm_oracle.py"
GIB16 = "17179869184"
# What every line keeps of the oracle's ``resolved`` (run_oracle.py adds kv_cache_layout).
RESOLVED_KEYS = ("architecture", "model_dtype", "cache_dtype", "async_scheduling",
                 "max_in_flight_tokens", "mamba_cache_mode", "mamba_ssm_cache_dtype",
                 "mamba_cache_dtype", "mamba_block_size", "mamba_page_size_padded",
                 "is_hybrid", "use_mla", "tp_kv_heads_per_rank")
GROUP_KEYS = ("spec", "num_layers", "block_size", "page_size_bytes",
              "max_memory_usage_bytes_per_request", "blocks_per_request_at_max_model_len")

Run = TypeVar("Run", bound=tuple[Any, ...])


# The vLLM releases a runner can ask (``--vllm 0.33``; 0.32 without it): the shared oracle tool
# of that release, the oracle venv's interpreter, and the folder its answers go to (a 0.32 file
# beside the runners, a 0.33 one under vllm-0.33/, as make_vllm_033_cases.py writes).
ORACLE_RELEASES: dict[str, tuple[Path, str, Path]] = {
    "0.32": (SHARED / "oracles" / "tool" / "vllm_oracle.py", "/work/venvs/vllm032/bin/python",
             HERE),
    "0.33": (SHARED / "oracles" / "tool-0.33" / "vllm_oracle.py",
             "/work/venvs/vllm033/bin/python", HERE / "vllm-0.33"),
}
RELEASE_ENV = "KVLEDGER_ORACLE_VLLM"  # the release, passed on to a runner's child processes


def take_release(argv: list[str]) -> tuple[str, list[str]]:
    """(release, the other arguments) from ``--vllm X`` anywhere in ``argv``; without it the
    release a parent runner chose (``RELEASE_ENV``), else 0.32. The choice is put in the
    environment, so the ``--one K`` children of ``run_each`` ask the same release."""
    rest = list(argv)
    release = os.environ.get(RELEASE_ENV, "0.32")
    if "--vllm" in rest:
        at = rest.index("--vllm")
        release = rest[at + 1] if at + 1 < len(rest) else ""
        del rest[at:at + 2]
    if release not in ORACLE_RELEASES:
        raise SystemExit(f"--vllm: one of {', '.join(ORACLE_RELEASES)}")
    os.environ[RELEASE_ENV] = release
    return release, rest


def release_tool(release: str) -> Path:
    """The shared oracle tool that asks ``release``."""
    return ORACLE_RELEASES[release][0]


def release_file(release: str, stem: str) -> Path:
    """Where a runner writes its answers for ``release``: ``vllm-<release>-<stem>``."""
    return ORACLE_RELEASES[release][2] / f"vllm-{release}-{stem}"


def oracle_python() -> str:
    """The oracle venv's interpreter (``ORACLE_PY`` overrides it)."""
    return os.environ.get("ORACLE_PY", "/work/oracle/vllm-venv/bin/python")


def config_path(name: str) -> Path:
    """A config of ../shared/configs (the real ones and those derived from them)."""
    return SHARED / "configs" / name


def ask(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the oracle tool with ``args``; its one JSON object is the result's stdout (its log,
    on stderr, is dropped)."""
    return subprocess.run([oracle_python(), str(TOOL), *args], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, check=False, cwd=cwd)


def selected(runs: Iterable[Run], wanted: list[str]) -> Iterator[Run]:
    """The runs whose config (first item) or reason (last item) contains one of ``wanted``;
    every run when ``wanted`` is empty."""
    for run in runs:
        name, why = run[0], run[-1]
        if not wanted or any(w in name or w in why for w in wanted):
            yield run


def inputs_of(r: dict[str, Any], *, batched_from: str = "resolved") -> dict[str, Any]:
    """The case's ``inputs``: what was asked, with the length and prefix caching vLLM
    resolved; ``max_num_batched_tokens`` from ``batched_from`` ("resolved" or "inputs")."""
    i, res = r["inputs"], r["resolved"]
    return {
        "kv_cache_memory_bytes": i["kv_cache_memory_bytes"],
        "block_size": i["block_size_requested"],
        "max_model_len": res["max_model_len"],
        "kv_cache_dtype": i["kv_cache_dtype"],
        "tensor_parallel_size": i["tp"],
        "max_num_seqs": i["max_num_seqs"],
        "max_num_batched_tokens": r[batched_from]["max_num_batched_tokens"],
        "num_speculative_tokens": i["num_speculative_tokens"],
        "speculative_method": i["speculative_method"],
        "enable_prefix_caching": res["enable_prefix_caching"],
    }


def resolved_of(r: dict[str, Any], keys: tuple[str, ...] = RESOLVED_KEYS, *,
                strict: bool = False) -> dict[str, Any]:
    """The case's ``vllm_resolved``: ``keys`` of the oracle's ``resolved`` (a missing key is
    None, or a KeyError when ``strict``)."""
    res = r["resolved"]
    return {k: res[k] for k in keys} if strict else {k: res.get(k) for k in keys}


def expected_of(r: dict[str, Any], refuses: Any) -> dict[str, Any]:
    """The case's ``expected``: vLLM's plan, with ``refuses`` as vllm_refuses_to_start (each
    runner reads that flag its own way)."""
    return {
        "num_blocks": r["num_blocks"],
        "kv_cache_tokens": r["gpu_kv_cache_size_tokens"],
        "max_concurrency": r["max_concurrency"],
        "block_size": r["block_size"]["final_cache_config_block_size"],
        "bytes_per_block": r["bytes_per_block"],
        "vllm_refuses_to_start": refuses,
        "vllm_log_line": r["vllm_log_line"],
    }


def groups_of(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The case's ``kv_cache_groups``."""
    return [{k: g[k] for k in GROUP_KEYS} for g in r["kv_cache_groups"]]


def layer_specs_of(r: dict[str, Any], drop: tuple[str, ...] = ("backend",)
                   ) -> list[dict[str, Any]]:
    """The case's ``layer_specs``: each unique spec with its layer count and first layer,
    less the ``drop`` fields."""
    return [{"num_layers": u["num_layers"], "first_layer": u["first_layer"],
             **{k: v for k, v in u["spec"].items() if k not in drop}}
            for u in r["unique_layer_specs"]]


def plan_parts(r: dict[str, Any], *, refuses: Any, batched_from: str = "resolved",
               resolved_keys: tuple[str, ...] = RESOLVED_KEYS, strict: bool = False,
               drop: tuple[str, ...] = ("backend",)) -> dict[str, Any]:
    """A case line's plan fields, in the order every runner writes them: ``inputs``,
    ``vllm_resolved``, ``expected``, ``kv_cache_groups``, ``layer_specs`` (the arguments as
    in the functions above)."""
    return {
        "inputs": inputs_of(r, batched_from=batched_from),
        "vllm_resolved": resolved_of(r, resolved_keys, strict=strict),
        "expected": expected_of(r, refuses),
        "kv_cache_groups": groups_of(r),
        "layer_specs": layer_specs_of(r, drop),
    }


def coverage_case(name: str, r: dict[str, Any], hf_quant_config: bool | None, *,
                  strict: bool = False) -> dict[str, Any]:
    """A whole line in the coverage groups' format (run_moe_hybrid.py, run_heldout.py), before
    its ``command`` and ``why``."""
    return {
        "config": name,
        "hf_quant_config": hf_quant_config,
        **plan_parts(r, refuses=bool(r.get("vllm_refuses_to_start")), strict=strict),
        "kv_sharing_layers": len(r.get("kv_sharing_layers") or {}),
    }


def read_by_command(path: Path) -> dict[str, dict[str, Any]]:
    """The lines of ``path`` (if it exists) by their ``command``."""
    lines: dict[str, dict[str, Any]] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.strip():
                case = json.loads(line)
                lines[case["command"]] = case
    return lines


def write_lines(path: Path, lines: Iterable[dict[str, Any]]) -> None:
    """``path`` as one JSON object a line."""
    path.write_text("".join(json.dumps(c) + "\n" for c in lines))


def merge_by_command(path: Path, new: list[dict[str, Any]]) -> None:
    """Keep every earlier line of ``path`` except those whose command ran again (a line
    without a command is kept), then the new lines."""
    old = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] \
        if path.is_file() else []
    fresh = {c["command"] for c in new}
    kept = [c for c in old if c.get("command") not in fresh]
    with open(path, "w") as f:
        f.writelines(json.dumps(c) + "\n" for c in [*kept, *new])


def ask_json(args: list[str], cwd: Path | None = None) -> dict[str, Any] | None:
    """The oracle's answer to ``args``, or None (said on stdout) when it printed no JSON."""
    out = ask(args, cwd)
    try:
        result: dict[str, Any] = json.loads(out.stdout)
    except json.JSONDecodeError:
        print(f"  no JSON from the oracle (exit {out.returncode})")
        return None
    return result


def ask_shown(args: list[str], command: str) -> dict[str, Any]:
    """Say ``running: COMMAND`` on stderr, then the oracle's answer to ``args`` (the way
    run_oracle.py and the dense runners ask: a run without JSON stops the script)."""
    print(f"running: {command}", file=sys.stderr)
    answer: dict[str, Any] = json.loads(ask(args).stdout)
    return answer


def shown(name: str, args: list[str]) -> str:
    """The command a line records: the tool, the config's file name, the arguments after it."""
    return " ".join(["vllm_oracle.py", name, *args[1:]])


def first_error_line(err: Exception) -> str:
    """What a run that vLLM stopped records: the exception's type and its first line (pydantic
    wraps what ModelConfig's validators raise; its own message is the useful one)."""
    detail = err.errors()[0].get("msg", "") if callable(getattr(err, "errors", None)) else ""
    first = detail or (str(err).splitlines() or [""])[0]
    return f"{type(err).__name__}: {first}"


def tool_case_line(head: dict[str, Any], got: dict[str, Any]) -> dict[str, Any]:
    """A case line of the in-process runners (run_remote_oracle.py, run_tfbackend_oracle.py,
    which call the shared tool's ``run`` themselves): ``head`` and the tool's answer, with the
    inputs as requested."""
    inputs = got["inputs"]
    specs = [{"num_layers": u["num_layers"], "first_layer": u["first_layer"], **u["spec"]}
             for u in got["unique_layer_specs"]]
    return {
        **head,
        "inputs": {
            "kv_cache_memory_bytes": inputs["kv_cache_memory_bytes"],
            "block_size": inputs["block_size_requested"],
            "max_model_len": inputs["max_model_len_requested"],
            "kv_cache_dtype": inputs["kv_cache_dtype"], "tensor_parallel_size": inputs["tp"],
            "max_num_seqs": inputs["max_num_seqs"],
            "max_num_batched_tokens": inputs["max_num_batched_tokens"],
            "num_speculative_tokens": inputs["num_speculative_tokens"],
            "speculative_method": inputs["speculative_method"],
            "enable_prefix_caching": got["resolved"]["enable_prefix_caching"],
        },
        "vllm_resolved": got["resolved"],
        "expected": {
            "num_blocks": got["num_blocks"], "kv_cache_tokens": got["gpu_kv_cache_size_tokens"],
            "max_concurrency": got["max_concurrency"],
            "block_size": got["block_size"]["final_cache_config_block_size"],
            "bytes_per_block": got["bytes_per_block"],
            "vllm_refuses_to_start": got["vllm_refuses_to_start"],
            "vllm_log_line": got["vllm_log_line"],
        },
        "kv_cache_groups": got["kv_cache_groups"],
        "layer_specs": specs,
        "spec_collection": got["provenance"].get("spec_collection"),
    }


def run_each(script: str, labels: list[str], argv: list[str]) -> None:
    """Run ``script --one K`` for each index in ``argv`` (all when empty), one process per
    run — vLLM keeps distributed and config state per process — and print each line."""
    chosen = [int(a) for a in argv] or list(range(len(labels)))
    for index in chosen:
        proc = subprocess.run([sys.executable, script, "--one", str(index)],
                              capture_output=True, text=True)
        if proc.returncode != 0 or not proc.stdout.strip():
            sys.stderr.write(proc.stderr[-4000:])
            raise SystemExit(f"run {index} ({labels[index]}) failed")
        print(proc.stdout.strip(), flush=True)


def real_configs(paths: Iterable[Path]) -> Iterator[tuple[Path, dict[str, Any]]]:
    """(path, object) of each config.json-like file among ``paths``: companions
    (``*hf_quant_config*``), unreadable files and non-objects are passed over."""
    for path in paths:
        if "hf_quant_config" in path.name:
            continue
        try:
            data = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(data, dict):
            yield path, data
