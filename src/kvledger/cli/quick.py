"""A plain command line, read the way argparse reads it, without building argparse.

Why: ``kvledger plan <catalog id> --json`` must start within 3× a bare ``python -c pass``
(``bench/startup.py``, issue #12). Importing argparse (with ``gettext``, and ``locale`` on its
first message lookup) and building the plan parser's forty-odd actions cost about 3.5 ms of a
run of about 38 ms on the 2-CPU machine the target was set on — a third of a bare interpreter,
and the whole margin of that target.

How it stays argparse's reading: the commands are defined once, by the fillers in
``cli.main``. They run here against ``Options``, which has the part of argparse's
``add_argument`` / ``add_argument_group`` / ``set_defaults`` surface they use and keeps only
what parsing needs (destinations, actions, value types, choices, defaults). ``parse`` then
accepts only a command line whose meaning under argparse has no subtlety: every option spelled
in full (``--name value``, ``--name=value``, or an exact short spelling followed by its value),
no value that starts with ``-``, no ``--``, no empty word, at most the positionals defined,
every required option given, every value accepted by its type and its choices. Anything else
— ``--help``, an abbreviation, an unknown flag, a refused value — returns ``None``, and
``cli.main`` builds the real parser, which reads the line (or words its error) as it always
did. A definition this module does not model (another action, ``nargs``, a default set twice)
makes it decline every line of that command, never guess.

Tests: ``tests/cli/test_quick.py`` compares ``parse`` with argparse on generated command lines,
and ``tests/conftest.py`` compares them on every command line the test suite runs.
"""

from __future__ import annotations

from types import SimpleNamespace

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any

# argparse's action names this module reproduces; "boolean_optional" is registered by
# cli.parser.Parser as argparse.BooleanOptionalAction.
_ACTIONS = frozenset({"store", "store_true", "append", "boolean_optional"})
_KEYWORDS = frozenset({"action", "type", "default", "choices", "required", "metavar", "help"})
# argparse's default for an option that states none: store_true → False, the others → None.
_IMPLIED_DEFAULT = {"store_true": False}


class _Action:
    __slots__ = ("choices", "convert", "default", "dest", "kind", "required")

    def __init__(self, dest: str, kind: str, kwargs: dict[str, Any]) -> None:
        self.dest = dest
        self.kind = kind
        self.convert: Callable[[str], Any] | None = kwargs.get("type")
        self.choices = kwargs.get("choices")
        self.default = kwargs.get("default", _IMPLIED_DEFAULT.get(kind))
        self.required = bool(kwargs.get("required", False))


class Options:
    """A recorder of one command's arguments, with argparse's definition surface."""

    def __init__(self) -> None:
        self.flags: dict[str, tuple[_Action, bool]] = {}  # spelling → (action, value if a switch)
        self.positionals: list[_Action] = []
        self.actions: list[_Action] = []
        self.defaults: dict[str, Any] = {}  # set_defaults
        self.modelled = True

    def add_argument_group(self, *_args: Any, **_kwargs: Any) -> Options:
        return self  # a group only changes --help

    def set_defaults(self, **values: Any) -> None:
        if any(action.dest in values for action in self.actions):
            self.modelled = False  # argparse would change that action's default: not modelled
        self.defaults.update(values)

    def add_argument(self, *spellings: str, **kwargs: Any) -> None:
        kind = kwargs.get("action", "store")
        if not kwargs.keys() <= _KEYWORDS or kind not in _ACTIONS or not spellings:
            self.modelled = False
            return
        if not spellings[0].startswith("-"):  # a positional: argparse's dest is its name
            action = _Action(spellings[0], kind, kwargs)
            if len(spellings) > 1 or kind != "store":
                self.modelled = False
            self.positionals.append(action)
            action.required = True
        else:
            # argparse's dest: the first "--" spelling (else the first), dashes stripped, "-"
            # → "_" (ArgumentParser._get_optional_kwargs).
            longs = [s for s in spellings if s.startswith("--")]
            dest = (longs or list(spellings))[0].lstrip("-").replace("-", "_")
            action = _Action(dest, kind, kwargs)
            for spelling in spellings:
                self._spell(spelling, action, True)
                if kind == "boolean_optional" and spelling.startswith("--"):
                    # argparse.BooleanOptionalAction adds --no-NAME, which stores False.
                    self._spell("--no-" + spelling[2:], action, False)
        if any(known.dest == action.dest for known in self.actions):
            self.modelled = False  # two actions, one dest: argparse's order rules, not modelled
        self.actions.append(action)

    def _spell(self, spelling: str, action: _Action, switch: bool) -> None:
        if spelling in self.flags:
            self.modelled = False
        self.flags[spelling] = (action, switch)

    def parse(self, args: list[str]) -> SimpleNamespace | None:
        """argparse's namespace for ``args``, or None where this reading might differ."""
        if not self.modelled:
            return None
        given: dict[str, Any] = {}
        seen: set[str] = set()
        words: list[str] = []
        i = 0
        while i < len(args):
            word = args[i]
            i += 1
            if not word.startswith("-"):
                if not word:
                    return None
                words.append(word)
                continue
            explicit: str | None = None
            found = self.flags.get(word)
            if found is None and word.startswith("--"):
                name, equals, explicit = word.partition("=")
                found = self.flags.get(name) if equals else None
            if found is None:
                return None  # --help, an abbreviation, an unknown flag, "--", a "-5" value
            action, switch = found
            seen.add(action.dest)
            if action.kind == "store_true":
                if explicit is not None:
                    return None
                given[action.dest] = True
                continue
            if action.kind == "boolean_optional":
                if explicit is not None:
                    return None
                given[action.dest] = switch
                continue
            if explicit is None:
                if i == len(args):
                    return None
                explicit = args[i]
                i += 1
            if not explicit or explicit.startswith("-"):
                return None
            value = self._value(action, explicit)
            if value is _DECLINED:
                return None
            if action.kind == "append":
                given[action.dest] = [*given.get(action.dest, ()), value]
            else:
                given[action.dest] = value
        if len(words) > len(self.positionals):
            return None
        for action, word in zip(self.positionals, words, strict=False):
            value = self._value(action, word)
            if value is _DECLINED:
                return None
            given[action.dest] = value
            seen.add(action.dest)
        namespace: dict[str, Any] = {}
        for action in self.actions:
            if action.dest in given:
                namespace[action.dest] = given[action.dest]
                continue
            if action.required and action.dest not in seen:
                return None
            default = action.default
            if isinstance(default, str) and action.convert is not None:
                # argparse passes a string default through the type (never the choices).
                default = self._value(action, default, check_choices=False)
                if default is _DECLINED:
                    return None
            namespace[action.dest] = default
        for dest, value in self.defaults.items():
            namespace.setdefault(dest, value)
        return SimpleNamespace(**namespace)

    @staticmethod
    def _value(action: _Action, text: str, check_choices: bool = True) -> Any:
        if action.convert is None:
            value: Any = text
        else:
            try:
                value = action.convert(text)
            except Exception:  # argparse words this one (or lets it propagate): decline
                return _DECLINED
        if check_choices and action.choices is not None and value not in action.choices:
            return _DECLINED
        return value


_DECLINED = object()

if TYPE_CHECKING:
    # What a command's filler in cli.main is handed: the real parser, or the recorder.
    Flags = argparse.ArgumentParser | Options


def read(fill: Callable[[Flags], None], args: list[str]) -> SimpleNamespace | None:
    """The namespace argparse would give for ``args`` under the command ``fill`` defines, or
    None when the line needs the real parser."""
    options = Options()
    fill(options)
    return options.parse(args)
