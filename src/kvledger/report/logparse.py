"""Read a vLLM or SGLang start-up log into settings and logged figures.

``parse_log(text) -> ParsedLog``. Lines are matched against the tables in ``loglines``; any
prefix (``(EngineCore_DP0 pid=175) INFO 11-14 14:26:16 [gpu_worker.py:298]``, a docker-compose
``qwen3-1  |``, a Markdown ``>``) is ignored. Settings come from three places, the most
authoritative last: a pasted command line (``vllm serve ...``), the user's non-default
arguments, and the engine's own resolved config line (vLLM) / ``ServerArgs`` (SGLang).

Logged memory keeps the text it was printed with (``Gib``), because the number was rounded:
"5.98 GiB" is any budget in [5.975, 5.985) GiB, and every check that starts from it works on
that interval, never on 5.98 × 2**30.

A log without the lines that say how large the KV cache is raises ``LogError`` (one line for
the CLI): nothing can be explained from it.
"""

from __future__ import annotations

import re
from typing import Any

from kvledger.records import field, record
from kvledger.report.loglines import SGLANG_LINES, SGLANG_MARKERS, VLLM_LINES, VLLM_MARKERS
from kvledger.report.pyrepr import ReprError, parse_kwargs, parse_literal
from kvledger.report.settings import command_settings, normalize

GIB = 1 << 30


class LogError(ValueError):
    """The text is not a start-up log kvledger can explain (says what is missing)."""


@record(frozen=True)
class Gib:
    """A memory figure as logged: the value and its printed text, in GiB.

    ``low``/``high`` are the bytes that print as this text. vLLM's ``format_gib`` rounds to
    two decimals and drops trailing zeros ("21.5"), so fewer than two printed decimals still
    mean ±0.005 GiB; a figure printed with four decimals ("14.2474") means ±0.00005 GiB.
    """

    text: str

    @property
    def value(self) -> float:
        return float(self.text)

    @property
    def half_width(self) -> float:
        decimals = len(self.text.partition(".")[2])
        return 0.5 * 10.0 ** -max(2, decimals)

    @property
    def low(self) -> int:
        return max(0, int((self.value - self.half_width) * GIB))

    @property
    def high(self) -> int:
        return int((self.value + self.half_width) * GIB)

    @property
    def bytes(self) -> int:
        return int(self.value * GIB)

    def __str__(self) -> str:
        return f"{self.text} GiB"


@record()
class ParsedLog:
    """What a log says: engine, version, model, settings and the figures it printed."""

    engine: str
    engine_version: str | None = None
    model: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # figure -> 1-based line number
    notes: list[str] = field(default_factory=list)

    def settings_json(self) -> dict[str, Any]:
        return dict(sorted(self.settings.items()))

    def figures_json(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Gib) else v) for k, v in sorted(self.figures.items())}


# -- the scan ----------------------------------------------------------------------------------


def _balanced(text: str) -> bool:
    depth = 0
    quote = ""
    escaped = False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
    return depth <= 0 and not quote


# A line that continues a hard-wrapped one starts in the middle of a word ("ig(show_...",
# "l': True"); a new log record starts with a prefix, a bracket or a capital.
_CONTINUATION = re.compile(r"[a-z_][\w.]*['(=:]")


def _joined(lines: list[str], index: int, start: str) -> str:
    """A repr that a paste wrapped over several lines, joined back (at most 40 lines).

    Unbalanced brackets always continue; a balanced line continues only into a line that
    starts mid-word (a hard wrap of a long log line, as issue trackers and excerpts show)."""
    text = start
    k = index + 1
    while k < len(lines) and k < index + 40 and (
            not _balanced(text) or _CONTINUATION.match(lines[k])):
        text += lines[k]
        k += 1
    return text


def _command_body(lines: list[str], index: int, start: str) -> str:
    text = start
    k = index + 1
    while text.rstrip().endswith("\\") and k < len(lines):
        text = text.rstrip()[:-1] + " " + lines[k].strip()
        k += 1
    return text


# The lines that say how large the KV cache is, engine by engine: a start-up log holds one
# engine's, never both (vLLM prints no "KV Cache is allocated", SGLang no "GPU KV cache size").
_KV_FIGURES = frozenset({"available_kv", "kv_tokens", "gpu_blocks", "refused",
                         "kv_allocated", "scheduler", "free_refusal"})


def _first_kv_line(lines: list[str], table: Any) -> int | None:
    patterns = [pattern for figure, pattern in table if figure in _KV_FIGURES]
    for index, line in enumerate(lines):
        if any(pattern.search(line) for pattern in patterns):
            return index + 1
    return None


def detect_engine(text: str) -> str:
    """vLLM or SGLang, from the lines only that engine prints. A text that holds the KV lines
    of both (a document quoting each, an issue comparing them) is not one start-up log: it
    is refused rather than read as the engine with more lines (``--engine`` picks one)."""
    vllm = len(VLLM_MARKERS.findall(text))
    sglang = len(SGLANG_MARKERS.findall(text))
    if not vllm and not sglang:
        raise LogError(
            "not a vLLM or SGLang start-up log: none of its lines says how the KV cache was "
            "sized (vLLM: 'Available KV cache memory', 'GPU KV cache size'; SGLang: "
            "'KV Cache is allocated')"
        )
    lines = text.splitlines()
    at_vllm = _first_kv_line(lines, VLLM_LINES)
    at_sglang = _first_kv_line(lines, SGLANG_LINES)
    if at_vllm is not None and at_sglang is not None:
        raise LogError(
            f"not one start-up log: it holds vLLM's KV cache lines (line {at_vllm}) and "
            f"SGLang's (line {at_sglang}); pass one engine's log, or --engine vllm|sglang to "
            "read only that engine's lines"
        )
    return "sglang" if sglang > vllm else "vllm"


def parse_log(text: str, *, engine: str | None = None) -> ParsedLog:
    """Parse ``text`` (a whole log or an excerpt). ``engine`` forces vLLM or SGLang."""
    engine = engine or detect_engine(text)
    if engine not in ("vllm", "sglang"):
        raise LogError(f"engine must be vllm or sglang, got {engine!r}")
    table = VLLM_LINES if engine == "vllm" else SGLANG_LINES
    log = ParsedLog(engine=engine)
    lines = text.splitlines()
    sources: dict[str, dict[str, Any]] = {"command": {}, "args": {}, "config": {}}
    for index, line in enumerate(lines):
        for figure, pattern in table:
            match = pattern.search(line)
            if match is None:
                continue
            _take(log, figure, match, lines, index, sources)
    if engine == "vllm" and "needed_kv_gib" not in log.figures:
        _refusal_across_lines(log, text, table, sources)
    for layer in ("command", "args", "config"):
        log.settings.update(normalize(sources[layer]))
    if not log.settings.get("speculative_method"):  # SGLang prints its defaults regardless
        log.settings.pop("num_speculative_tokens", None)
    log.model = log.settings.pop("model", None) or log.figures.pop("banner_model", None)
    log.figures.pop("banner_model", None)
    _check_kv_lines(log)
    return log


def _refusal_across_lines(
    log: ParsedLog, text: str, table: Any, sources: dict[str, dict[str, Any]]
) -> None:
    """vLLM's refusal is one long line, but pasted into an issue it is often wrapped or
    quoted line by line ("▎ ", "> "); read it once more with the breaks taken out."""
    flat = re.sub(r"[ \t]*\n[\s▎>|]*", " ", text)
    for figure, pattern in table:
        if figure in ("refused", "estimated_len"):
            match = pattern.search(flat)
            if match is not None:
                _take(log, figure, match, [flat], 0, sources)


def _first(log: ParsedLog, name: str, value: Any, line: int) -> None:
    if name not in log.figures:
        log.figures[name] = value
        log.lines[name] = line


def _take(
    log: ParsedLog, figure: str, match: re.Match[str], lines: list[str], index: int,
    sources: dict[str, dict[str, Any]],
) -> None:
    g = match.groupdict()
    line = index + 1
    if "version" in g and g["version"] and log.engine_version is None:
        log.engine_version = g["version"]
    if figure == "config":
        body = _joined(lines, index, g["body"])
        sources["config"] = {**sources["config"], **parse_kwargs(body)}
        log.lines.setdefault("config", line)
    elif figure == "server_args":
        body = _joined(lines, index, g["body"])
        sources["config"] = {**sources["config"], **parse_kwargs(body)}
        log.lines.setdefault("server_args", line)
    elif figure == "non_default_args":
        body = _joined(lines, index, g["body"])
        try:
            value = parse_literal(body.strip())
        except (ReprError, RecursionError):
            log.notes.append(f"line {line}: non-default args are not a readable dict; ignored")
            return
        if isinstance(value, dict):
            sources["args"] = {**sources["args"], **{str(k): v for k, v in value.items()}}
            log.lines.setdefault("non_default_args", line)
    elif figure == "command":
        raw = command_settings(_command_body(lines, index, g["body"]))
        sources["command"] = {**raw, **sources["command"]}
    elif figure == "banner_model":
        _first(log, "banner_model", g["model"], line)
    elif figure == "resolved_len":
        sources["config"].setdefault("max_model_len", int(g["max_model_len"]))
    elif figure == "chunked_prefill":
        sources["args"].setdefault("max_num_batched_tokens", int(g["max_num_batched_tokens"]))
    elif figure in ("weights", "cuda_graphs", "profile_weights", "profile_non_torch",
                    "profile_activation", "profile_kv"):
        _first(log, figure.removeprefix("profile_") + "_gib"
               if figure.startswith("profile_") else figure + "_gib", Gib(g["gib"]), line)
    elif figure == "available_kv":
        _available(log, Gib(g["gib"]), line)
    elif figure in ("kv_tokens", "kv_allocated"):
        _first(log, "kv_cache_tokens", int(g["tokens"].replace(",", "")), line)
        if figure == "kv_allocated":
            _sglang_pool(log, g, line)
    elif figure == "concurrency":
        _first(log, "max_concurrency", Gib(g["x"]), line)  # a 2-decimal figure, same rounding
        _first(log, "concurrency_length", int(g["length"].replace(",", "")), line)
    elif figure == "gpu_blocks":
        _first(log, "num_gpu_blocks", int(g["blocks"].replace(",", "")), line)
    elif figure == "profile_total":
        _first(log, "gpu_total_gib", Gib(g["gib"]), line)
        sources["config"].setdefault("gpu_memory_utilization", float(g["util"]))
    elif figure in ("device_memory", "free_refusal"):
        _first(log, "gpu_total_gib", Gib(g["gib"]), line)
        _first(log, "gpu_free_gib", Gib(g["free"]), line)
        if g.get("util"):
            sources["config"].setdefault("gpu_memory_utilization", float(g["util"]))
            _first(log, "requested_gib", Gib(g["desired"]), line)
        if figure == "free_refusal":
            _first(log, "refused_free_memory", True, line)
    elif figure == "kv_to_limits":
        _first(log, "kv_to_requested_bytes", int(g["requested"]), line)
        _first(log, "kv_to_gpu_bytes", int(g["gpu"]), line)
    elif figure == "kv_in_use":
        _available(log, Gib(g["gib"]), line)
    elif figure == "kv_in_use_bytes":
        # Exact bytes: a figure with ten decimals of GiB (well inside the printed intervals).
        _available(log, Gib(f"{int(g['bytes']) / GIB:.10f}"), line)
    elif figure in ("sampler_flashinfer", "sampler_native"):
        _first(log, "flashinfer_sampler", figure == "sampler_flashinfer", line)
    elif figure == "checkpoint":
        _first(log, "checkpoint_gib", Gib(g["gib"]), line)
    elif figure == "usage_report_v010":
        _first(log, "weights_gib", Gib(g["weights"]), line)
        _first(log, "activation_gib", Gib(g["activation"]), line)
        _first(log, "non_torch_gib", Gib(g["non_torch"]), line)
        _first(log, "cuda_graphs_gib", Gib(g["graphs"]), line)
    elif figure == "backend_used":
        names = log.figures.setdefault("attention_backends", [])
        if g["name"] not in names:
            names.append(g["name"])
            log.lines.setdefault("attention_backends", line)
    elif figure == "graph_estimate":
        _first(log, "cuda_graphs_estimate_gib", Gib(g["estimated"]), line)
    elif figure == "graph_pool":
        _first(log, "cuda_graphs_gib", Gib(g["actual"]), line)
        _first(log, "cuda_graphs_estimate_gib", Gib(g["estimated"]), line)
    elif figure == "usage_report":
        _first(log, "consumed_gib", Gib(g["consumed"]), line)
        _first(log, "activation_gib", Gib(g["activation"]), line)
        if g.get("graphs"):
            # Captured after the cache was sized (0.28-0.33 compile_or_warm_up_model).
            _first(log, "cuda_graphs_gib", Gib(g["graphs"]), line)
    elif figure == "refused":
        _first(log, "needed_kv_gib", Gib(g["needed"]), line)
        _first(log, "refused_length", int(g["length"]), line)
        _available(log, Gib(g["gib"]), line)
    elif figure == "estimated_len":
        _first(log, "estimated_max_model_len", int(g["length"]), line)
    elif figure == "load_begin":
        _first(log, "load_begin_avail_gib", Gib(g["gb"]), line)
    elif figure == "load_end":
        _first(log, "load_end_avail_gib", Gib(g["gb"]), line)
        if g.get("usage"):
            _first(log, "weights_gib", Gib(g["usage"]), line)
        if g.get("dtype"):
            sources["config"].setdefault("dtype", g["dtype"])
        if g.get("arch"):
            _first(log, "architecture", g["arch"], line)
    elif figure == "pool_end":
        _first(log, "pool_end_avail_gib", Gib(g["gb"]), line)
    elif figure == "graphs_end":
        _first(log, "cuda_graphs_gib", Gib(g["gb"]), line)
    elif figure == "scheduler":
        _first(log, "max_total_num_tokens", int(g["tokens"]), line)
        rest = parse_kwargs(g["body"].lstrip(", "))
        for key in ("max_running_requests", "context_len", "max_prefill_tokens",
                    "chunked_prefill_size"):
            if isinstance(rest.get(key), int):
                _first(log, key, rest[key], line)


def _available(log: ParsedLog, value: Gib, line: int) -> None:
    """Every worker logs its own budget; vLLM sizes all of them to the smallest
    (``get_kv_cache_configs`` takes the minimum block count), so keep the minimum."""
    old = log.figures.get("available_kv_gib")
    if old is None:
        log.figures["available_kv_gib"] = value
        log.lines["available_kv_gib"] = line
    elif value.value != old.value:
        if value.value < old.value:
            log.figures["available_kv_gib"] = value
            log.lines["available_kv_gib"] = line
        note = "workers logged different KV budgets; the smallest binds every worker"
        if note not in log.notes:
            log.notes.append(note)


def _sglang_pool(log: ParsedLog, g: dict[str, str | None], line: int) -> None:
    for name, key in (("k_size_gib", "k"), ("v_size_gib", "v"), ("kv_size_gib", "kv")):
        text = g.get(key)
        if text:
            _first(log, name, Gib(text), line)
    if g.get("dtype"):
        _first(log, "kv_pool_dtype", str(g["dtype"]).removeprefix("torch."), line)


def _check_kv_lines(log: ParsedLog) -> None:
    f = log.figures
    if log.engine == "vllm":
        if not ({"available_kv_gib", "kv_cache_tokens", "num_gpu_blocks",
                 "refused_free_memory"} & f.keys()):
            raise LogError(
                "this vLLM log has no KV cache lines ('Available KV cache memory: X GiB', "
                "'GPU KV cache size: N tokens'): paste the log up to the line 'Maximum "
                "concurrency for ... tokens per request'"
            )
    elif not ({"kv_cache_tokens", "max_total_num_tokens"} & f.keys()):
        raise LogError(
            "this SGLang log has no KV cache lines ('KV Cache is allocated. #tokens: N', "
            "'max_total_num_tokens=N'): paste the log up to the line 'Memory pool end'"
        )
