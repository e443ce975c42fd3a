"""Read an engine's argv with the rules its own parser applies, against its flag table.

Why not hand the argv to ``argparse`` built from the table: the engines pre-process their argv
before argparse sees it (vLLM's ``FlexibleArgumentParser.parse_args`` turns ``_`` into ``-`` in
flag names, moves ``--model X`` to the positional slot, expands ``-O3`` and folds
``--speculative-config.method mtp`` into one JSON value), and argparse itself would print usage
and exit. This module does the pre-processing the engine does, then argparse's own matching
rules (Python 3.11 ``_parse_optional`` / ``_get_option_tuples``: exact option, ``--opt=value``,
unique abbreviation of a long option, a value glued to a two-character short option, negative
numbers and words with spaces are values), and converts each value with the flag's type —
so a line the engine would refuse is refused here, with the engine's reason.

Checked against vLLM 0.32's real parser on 57 lines (``tests/serve/vllm-parse-cases.jsonl``,
made by ``scripts/serve_parse_cases.py``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.table import Flag, FlagTable
from kvledger.cli.sizes import SizeError, sglang_int, vllm_int, vllm_int_or_auto
from kvledger.records import field, record

# argparse's _negative_number_matcher (Python 3.11).
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
# vLLM's pattern for "everything between the first -- and the first ." (argparse_utils.py).
_FLAG_NAME = re.compile(r"(?<=--)[^\.]*")
# vLLM _expand_json_human_readable_numbers: bare 1k / 80g tokens outside JSON strings.
_JSON_STRING = re.compile(r'("(?:[^"\\]|\\.)*")')
_JSON_HUMAN = re.compile(r"\b\d+(?:\.\d+)?[kKmMgGtT]\b")


# A word the shell would have expanded: ``$NAME`` or ``${NAME}`` left as pasted.
SHELL_VARIABLE = re.compile(r"\$(?:\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)")


@record(frozen=True)
class Unexpanded:
    """A flag's value that is a shell variable the paste does not set (``--port $PORT``): the
    engine would get whatever the shell held, so the value is unknown, not invalid. Whether
    that matters is the flag's class (``shell_vars.settle``)."""

    text: str


@record(frozen=True)
class Given:
    """One flag as it appeared on the line, with its value converted by the flag's type."""

    flag: Flag
    option: str  # the spelling used (after the engine's own normalisation)
    value: Any
    raw: tuple[str, ...] = ()


@record()
class Scanned:
    positionals: list[str] = field(default_factory=list)
    given: list[Given] = field(default_factory=list)
    # Flags an older release had that change no memory, dropped from the line (removed.py).
    warnings: list[str] = field(default_factory=list)
    # Flags the release renamed (same values and meaning), read as the current spelling.
    renamed: list[str] = field(default_factory=list)

    def last(self, dest: str) -> Given | None:
        """argparse semantics: a flag given twice keeps its last value."""
        found = None
        for item in self.given:
            if item.flag.dest == dest:
                found = item
        return found


# -- vLLM's pre-processing (FlexibleArgumentParser.parse_args) ------------------------------


def vllm_preprocess(args: list[str], label: str, *, serve: bool = True) -> list[str]:
    """``--model X`` to the front (``vllm serve`` only: vLLM does it when ``args[0]`` is
    ``serve``), ``_`` → ``-`` in flag names, ``-O3``, dotted JSON keys."""
    if serve:
        args = _move_model_to_front(args, label)
    processed: list[str] = []
    for i, arg in enumerate(args):
        if arg.startswith("--help"):
            raise ServeLineError(f"{label}: --help is not a serve line")
        if arg.startswith("--"):
            key, eq, value = arg.partition("=")
            key = _FLAG_NAME.sub(lambda m: m.group(0).replace("_", "-"), key, count=1)
            processed.append(f"{key}={value}" if eq else key)
        elif arg.startswith("-O") and arg != "-O":
            processed += ["--optimization-level", arg[3:] if arg[2:3] == "=" else arg[2:]]
        elif arg == "-O" and i + 1 < len(args) and args[i + 1] in {"0", "1", "2", "3"}:
            processed.append("--optimization-level")
        else:
            processed.append(arg)
    return _fold_dotted(processed, label)


def _move_model_to_front(args: list[str], label: str) -> list[str]:
    for i, arg in enumerate(args):
        if arg == "--model" or arg.startswith("--model="):
            if arg == "--model":
                if i + 1 >= len(args):
                    raise ServeLineError(f"{label}: argument --model: expected one argument")
                return [args[i + 1], *args[:i], *args[i + 2:]]
            return [arg.removeprefix("--model="), *args[:i], *args[i + 1:]]
    return args


def _fold_dotted(args: list[str], label: str) -> list[str]:
    """``--speculative-config.method mtp`` → one ``--speculative-config '{"method": "mtp"}'``
    appended at the end, as vLLM does (so it replaces an earlier full JSON value)."""
    kept: list[str] = []
    dicts: dict[str, dict[str, Any]] = {}
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if not (arg.startswith("-") and "." in arg):
            kept.append(arg)
            continue
        name, eq, value = arg.partition("=")
        if eq and "." not in name:  # the '.' was only in the value
            kept.append(arg)
            continue
        if not eq:
            if i + 1 >= len(args):
                raise ServeLineError(f"{label}: argument {arg}: expected one argument")
            value, skip = args[i + 1], True
        if name.endswith("+"):
            name, value = name[:-1], json.dumps(value.split(","))
        key, *path = name.split(".")
        try:
            parsed: Any = json.loads(value)
        except json.JSONDecodeError:
            try:
                parsed = vllm_int(value)
            except SizeError:
                parsed = value
        _merge(dicts.setdefault(key, {}), path, parsed)
    for key, folded in dicts.items():
        kept += [key, json.dumps(folded)]
    return kept


def _merge(target: dict[str, Any], path: list[str], value: Any) -> None:
    for part in path[:-1]:
        nested = target.get(part)
        if not isinstance(nested, dict):
            nested = target[part] = {}
        target = nested
    old = target.get(path[-1])
    if isinstance(old, list) and isinstance(value, list):
        old += value
    elif isinstance(old, dict) and isinstance(value, dict):
        for k, v in value.items():
            _merge(old, [k], v)
    else:
        target[path[-1]] = value


# -- argparse's matching rules ------------------------------------------------------------


def _looks_like_value(word: str, table: FlagTable) -> bool:
    """argparse: a word is an option unless it is '-', a negative number, or has a space."""
    if not word.startswith("-") or word == "-":
        return True
    if word in table.by_option:
        return False
    return bool(_NEGATIVE_NUMBER.match(word)) or " " in word


def _resolve(word: str, table: FlagTable, label: str) -> tuple[Flag, str, str | None]:
    """(flag, option as matched, explicit value or None) for an option-like word."""
    if word in table.by_option:
        return table.by_option[word], word, None
    if "=" in word:
        name, _, value = word.partition("=")
        if name in table.by_option:
            return table.by_option[name], name, value
    else:
        name, value = word, None
    if not word.startswith("--") and len(word) > 2 and word[:2] in table.by_option:
        # argparse glues a value to a two-character short option: -qfp8 = -q fp8.
        return table.by_option[word[:2]], word[:2], word[2:]
    if table.allow_abbrev:
        prefix = name if word.startswith("--") else word
        matches = sorted({o for o in table.by_option if o.startswith(prefix)
                          and o.startswith("--") == word.startswith("--")})
        if len(matches) == 1:
            return table.by_option[matches[0]], matches[0], value
        if len(matches) > 1:
            raise ServeLineError(
                f"{label}: ambiguous option: {name} could match {', '.join(matches[:6])}"
            )
    from kvledger.cli.flag_hints import closest_flag

    close = closest_flag(name, (f.options for f in table.flags)) if name.startswith("-") else None
    raise ServeLineError(f"{label}: {name} is not a {table.label} flag"
                         + (f"; did you mean {close}?" if close else ""))


def _renamed(word: str, table: FlagTable) -> tuple[str, str] | None:
    """(the word under the current spelling, warning) for a flag the table's release renamed
    (``removed.py``: a row with ``renamed_to``, the same values and meaning); None otherwise.
    """
    from kvledger.cli.serve.removed import removed_flags

    name, eq, rest = word.partition("=")
    if name in table.by_option:
        return None
    gone = removed_flags(table.engine).get(name)
    if gone is None or not gone.renamed_to or gone.renamed_to not in table.by_option:
        return None
    return gone.renamed_to + eq + rest, gone.renamed_message(table.engine, table.label)


def _removed(word: str, args: list[str], i: int, table: FlagTable,
             label: str) -> tuple[str, int] | None:
    """(warning, index after the flag and its value) for a flag an older release had that
    changes no memory; refuses one that might; None for anything else."""
    from kvledger.cli.serve.removed import removed_flags

    name, eq, _ = word.partition("=")
    if name in table.by_option:
        return None
    gone = removed_flags(table.engine).get(name)
    if gone is None:
        return None
    message = gone.message(table.engine, table.label)
    if gone.memory:
        raise ServeLineError(f"{label}: {message}, which may change memory: drop it or "
                             "write the line for the current release")
    if gone.takes_value and not eq:  # the value is the next word
        i += 1
    return f"{message}; it changes no memory: ignored", i


def scan(args: list[str], table: FlagTable, label: str) -> Scanned:
    """Match ``args`` (already pre-processed) against ``table`` as argparse would."""
    out = Scanned()
    i = 0
    only_positionals = False
    while i < len(args):
        word = args[i]
        i += 1
        if only_positionals or _looks_like_value(word, table):
            out.positionals.append(word)
            continue
        if word == "--":
            only_positionals = True
            continue
        renamed = _renamed(word, table)
        if renamed is not None:
            word = renamed[0]
            out.renamed.append(renamed[1])
        dropped = _removed(word, args, i, table, label)
        if dropped is not None:
            out.warnings.append(dropped[0])
            i = dropped[1]
            continue
        flag, option, explicit = _resolve(word, table, label)
        raw: list[str] = []
        if flag.nargs == 0:
            if explicit is not None:
                raise ServeLineError(
                    f"{label}: argument {option}: ignored explicit argument {explicit!r}"
                )
        elif explicit is not None:
            raw = [explicit]
        elif flag.nargs is None:
            if i >= len(args) or not _looks_like_value(args[i], table):
                raise ServeLineError(f"{label}: argument {option}: expected one argument")
            raw, i = [args[i]], i + 1
        else:  # "?", "+", "*"
            while i < len(args) and _looks_like_value(args[i], table) and not (
                flag.nargs == "?" and raw
            ):
                raw.append(args[i])
                i += 1
            if flag.nargs == "+" and not raw:
                raise ServeLineError(
                    f"{label}: argument {option}: expected at least one argument"
                )
        value = _value(flag, option, raw, label, table.engine)
        out.given.append(Given(flag, option, value, tuple(raw)))
    allowed = sum(1 for flag in table.flags if not flag.options)  # vLLM: the model; SGLang: 0
    if len(out.positionals) > allowed:
        extra = " ".join(out.positionals[allowed:])
        raise ServeLineError(f"{label}: unrecognized arguments: {extra}")
    return out


# -- values ---------------------------------------------------------------------------------


def _value(flag: Flag, option: str, raw: list[str], label: str, engine: str) -> Any:
    if flag.nargs == 0:
        if flag.kind in ("boolean_optional", "enable_disable"):
            return flag.switch_value(option)
        if flag.kind == "store_false":
            return False
        if flag.kind == "store_true":
            return True
        return flag.const
    if flag.nargs == "?" and not raw:
        return flag.const
    values = [_convert(flag, option, text, label, engine) for text in raw]
    if flag.nargs in ("+", "*"):
        return values
    return values[0]


def _convert(flag: Flag, option: str, text: str, label: str, engine: str) -> Any:
    if flag.optional and text in ("", "None"):
        return None
    if SHELL_VARIABLE.fullmatch(text):
        return Unexpanded(text)
    kind = flag.type or "str"
    if kind == "human_int" and engine == "sglang":
        kind = "sglang_human_int"  # SGLang's own grammar (1M = 10**6, 1Mi = 2**20)
    try:
        value = _typed(kind, text)
    except SizeError as exc:  # its message already says what the engine accepts
        raise ServeLineError(f"{label}: argument {option}: {exc}") from None
    except ValueError as exc:
        reason = str(exc).splitlines()[0] if kind.startswith("json") else \
            f"invalid {kind} value: {text!r}"
        raise ServeLineError(f"{label}: argument {option}: {reason} ({engine} refuses it "
                             "too)") from None
    if flag.choices is not None and value not in flag.choices:
        shown = ", ".join(repr(c) for c in flag.choices[:12])
        more = ", …" if len(flag.choices) > 12 else ""
        raise ServeLineError(
            f"{label}: argument {option}: invalid choice: {text!r} (choose from {shown}{more})"
        )
    return value


def _typed(kind: str, text: str) -> Any:
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    if kind == "human_int":
        return vllm_int(text)
    if kind == "sglang_human_int":
        return sglang_int(text)
    if kind == "human_int_or_auto":
        return vllm_int_or_auto(text)
    if kind == "json":
        return _json(text)
    if kind == "json_object":
        value = _json(_expand_human_numbers(text))
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object, got {text!r}")
        return value
    if kind == "json_or_str":
        # vLLM union_dict_and_str: JSON when it looks like an object, else the string.
        return _json(text) if re.match(r"(?s)^\s*{.*}\s*$", text) else text
    return text  # str, and the engines' own callables that return the string


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON {text!r}: {exc.msg}") from None


def _expand_human_numbers(text: str) -> str:
    """vLLM ``_expand_json_human_readable_numbers``: ``{"x": 80m}`` → ``{"x": 80000000}``."""
    parts = _JSON_STRING.split(text)
    for i in range(0, len(parts), 2):
        parts[i] = _JSON_HUMAN.sub(lambda m: str(vllm_int(m.group())), parts[i])
    return "".join(parts)
