"""Value records without the ``dataclasses`` module: kvledger's one way to write a value class.

Every value class of the package is a record (``tests/test_records.py`` fails on an import of
``dataclasses`` under ``src/kvledger``): one mechanism, so ``replace`` and ``fields`` work on
any of them, and no class on a start-up path is a dataclass by accident. Measured when the
rest (declare, check, report, serve, the SGLang and native layouts) moved over: vLLM plans per
second unchanged, SGLang's about 15 % slower (its plan makes some 90 small records; a record's
shared ``__init__`` costs about 0.8 µs more than a generated one).

Why this exists: ``kvledger plan <catalog id> --json`` must start within 3× a bare
``python -c pass`` (``bench/startup.py``). ``import dataclasses`` alone costs about 1× of that
(it imports ``inspect``, and with it ``ast``, ``dis`` and ``tokenize``), and every
``@dataclass`` compiles its ``__init__``, ``__eq__``, ``__repr__`` and frozen ``__setattr__``
from source text when its module is imported: about 1 ms a class on the 2-CPU machine the
target was set on, for some 40 classes on that path — together more than the whole budget.
``@record`` gives those classes the same surface with methods written once, here, and shared.
The rejected alternatives: hand-written ``__init__``/``__eq__``/``__hash__``/``__repr__`` in
every class (a subclass would restate every base field, and a forgotten field in ``__eq__`` is
a silent bug in the specs vLLM groups by equality), and ``NamedTuple`` (needs ``typing``,
compiles a ``__new__`` per class too, and compares equal to any tuple of the same values).

The surface is a subset of dataclasses', under the same names and meanings:

- ``@record(frozen=..., kw_only=..., eq=...)`` on a class with annotated fields. A default is a
  class attribute, or ``field(default=..., default_factory=..., compare=..., repr=...)``.
  ``ClassVar`` annotations are not fields. A record subclass decorated again adds its fields
  after its bases' (a redefined field keeps its place and takes the new default); an
  undecorated subclass adds none.
- Construction by keyword, or by position in field order unless the field is keyword-only;
  then ``__post_init__`` when the class has one.
- ``==`` and ``hash`` over the compared fields, for objects of the same class. Frozen records
  are hashable; mutable ones with ``eq`` are not (as dataclasses).
- ``repr``: ``Name(field=value, ...)``.
- Frozen records refuse assignment (``FrozenInstanceError``, an ``AttributeError``);
  ``__post_init__`` may still normalise a field with ``object.__setattr__``, as with
  dataclasses.
- ``fields(obj)`` and ``replace(obj, **changes)`` (a new object through ``__init__``: its
  ``__post_init__`` validates it again).

Not provided (no record here needs it): ordering, ``__slots__``, ``InitVar``, fields left out
of ``__init__``, ``__match_args__``. A record is not a dataclass: ``dataclasses.replace`` and
``dataclasses.fields`` refuse it — use this module's. To add fields in a subclass, decorate it
with ``@record`` (``@dataclass`` would not see the base's fields).
"""

from __future__ import annotations

import sys
from operator import itemgetter

# Not ``from typing import ...``: this module is on every start-up path, and ``typing`` is
# milliseconds there. Type checkers treat a constant named TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform

    T = TypeVar("T")
else:

    def dataclass_transform(**_options):
        """For type checkers only (PEP 681): at run time the decorator is returned as is."""
        return lambda decorated: decorated


__all__ = ["MISSING", "Field", "FrozenInstanceError", "field", "fields", "is_record", "record",
           "replace"]


class _Missing:
    """The "no default" marker (a value of its own: ``None`` is a common default)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class FrozenInstanceError(AttributeError):
    """An assignment to a frozen record."""


class Field:
    """One field of a record: its name, default (or factory), and whether it is compared and
    shown in the repr."""

    __slots__ = ("compare", "default", "default_factory", "kw_only", "name", "repr")

    def __init__(self, default: Any = MISSING, default_factory: Any = MISSING,
                 compare: bool = True, repr: bool = True, kw_only: bool | None = None) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("a field takes a default or a default_factory, not both")
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.compare = compare
        self.repr = repr
        self.kw_only = kw_only

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r})"


def field(*, default: Any = MISSING, default_factory: Any = MISSING, compare: bool = True,
          repr: bool = True) -> Any:
    """A field with options (as ``dataclasses.field``); a bare class attribute is a default."""
    return Field(default, default_factory, compare, repr)


class _Plan:
    """What the shared methods need of one record class, computed once when it is decorated."""

    __slots__ = ("count", "defaults", "factories", "key", "names", "positional", "post_init",
                 "required", "shown")

    def __init__(self, fields: dict[str, Field], post_init: bool) -> None:
        self.names = frozenset(fields)
        self.count = len(fields)
        # Every field in order, MISSING for those without a plain default, so that one dict
        # merge with the call's keywords gives each field its value in field order.
        self.defaults: dict[str, Any] = {}
        factories: list[tuple[str, Any]] = []
        required: list[str] = []
        positional: list[str] = []
        shown: list[str] = []
        compared: list[str] = []
        for name, f in fields.items():  # one pass: this runs for every class at start-up
            self.defaults[name] = f.default
            if f.default_factory is not MISSING:
                factories.append((name, f.default_factory))
            elif f.default is MISSING:
                required.append(name)
            if not f.kw_only:
                positional.append(name)
            if f.repr:
                shown.append(name)
            if f.compare:
                compared.append(name)
        self.factories = tuple(factories)
        self.required = frozenset(required)
        self.positional = tuple(positional)
        self.shown = tuple(shown)
        # As dataclasses: whether ``__init__`` calls ``__post_init__`` is decided when the
        # class is decorated (the call itself finds a subclass's override).
        self.post_init = post_init
        # The compared values as one tuple, read from the instance dict in C.
        if len(compared) > 1:
            self.key: Callable[[dict[str, Any]], Any] = itemgetter(*compared)
        elif compared:
            only = compared[0]
            self.key = lambda values: (values[only],)
        else:
            self.key = lambda values: ()


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    """The ``__init__`` of every record: bind, apply defaults, check, then ``__post_init__``."""
    cls = type(self)
    plan: _Plan = cls.__record_plan__
    if args:
        if len(args) > len(plan.positional):
            raise TypeError(f"{cls.__name__}() takes {len(plan.positional)} positional "
                            f"arguments but {len(args)} were given")
        for name, value in zip(plan.positional, args, strict=False):
            if name in kwargs:
                raise TypeError(f"{cls.__name__}() got multiple values for argument {name!r}")
            kwargs[name] = value
    values = {**plan.defaults, **kwargs}
    if len(values) != plan.count:
        unknown = ", ".join(repr(name) for name in kwargs if name not in plan.names)
        raise TypeError(f"{cls.__name__}() got unexpected keyword argument(s) {unknown}")
    if not kwargs.keys() >= plan.required:
        missing = ", ".join(repr(name) for name in plan.defaults
                            if name in plan.required and name not in kwargs)
        raise TypeError(f"{cls.__name__}() missing required argument(s) {missing}")
    for name, factory in plan.factories:
        if name not in kwargs:
            values[name] = factory()
    self.__dict__.update(values)
    if plan.post_init:
        self.__post_init__()


class _Signature:
    """``inspect.signature`` of a record class: its fields, their annotations and defaults
    (``help(ModelLocalKVSpec)`` then shows ``ModelLocalKVSpec(name: str, rows: ..., ...)``
    instead of the shared ``__init__``'s ``(*args, **kwargs)``). Built when asked for, so
    ``inspect`` stays off the start-up path."""

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        import inspect

        cls = owner if owner is not None else type(obj)
        plan: _Plan = cls.__record_plan__
        params = []
        for spec in cls.__record_fields__.values():
            kind = (inspect.Parameter.KEYWORD_ONLY if spec.kw_only
                    else inspect.Parameter.POSITIONAL_OR_KEYWORD)
            default: Any = inspect.Parameter.empty
            if spec.name not in plan.required:
                default = spec.default if spec.default is not MISSING else \
                    _FactoryDefault(spec.default_factory)
            annotation = None
            for base in cls.__mro__:  # the nearest class that declares the field
                annotation = annotation or inspect.get_annotations(base).get(spec.name)
            params.append(inspect.Parameter(
                spec.name, kind, default=default,
                annotation=annotation if annotation is not None else inspect.Parameter.empty))
        # Keyword-only parameters go last (inspect insists on the order).
        params.sort(key=lambda p: p.kind == inspect.Parameter.KEYWORD_ONLY)
        return inspect.Signature(params)


class _FactoryDefault:
    """How a field made by a factory shows in a signature: ``<factory list>``."""

    def __init__(self, factory: Any) -> None:
        self.factory = factory

    def __repr__(self) -> str:
        return f"<factory {getattr(self.factory, '__name__', self.factory)!s}>"


_SIGNATURE = _Signature()


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        key = self.__record_plan__.key
        return key(self.__dict__) == key(other.__dict__)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__record_plan__.key(self.__dict__))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__record_plan__.shown)
    return f"{type(self).__qualname__}({shown})"


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r} of a frozen "
                              f"{type(self).__name__}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")


def _is_classvar(annotation: Any) -> bool:
    if isinstance(annotation, str):  # ``from __future__ import annotations``: the text
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    # An evaluated annotation: its module imported typing, so looking it up costs nothing.
    typing = sys.modules.get("typing")
    return typing is not None and (
        annotation is typing.ClassVar or getattr(annotation, "__origin__", None) is typing.ClassVar
    )


def _process(cls: type[T], frozen: bool, kw_only: bool, eq: bool) -> type[T]:
    fields: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        fields.update(base.__dict__.get("__record_fields__", {}))
    # The class's own annotations (``inspect.get_annotations`` would import inspect: the cost
    # this module exists to avoid).
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
        if _is_classvar(annotation):
            continue
        value = cls.__dict__.get(name, MISSING)
        if isinstance(value, Field):
            spec = value
            if spec.default is MISSING:
                delattr(cls, name)  # a factory (or no default): no class attribute, as dataclasses
            else:
                setattr(cls, name, spec.default)
        else:
            spec = Field(default=value)
        spec.name = name
        if spec.kw_only is None:
            spec.kw_only = kw_only
        fields[name] = spec  # a redefined base field keeps its place (dict order)
    own = cls.__dict__
    setattr(cls, "__record_fields__", fields)  # noqa: B010 - mypy: not a declared attribute
    setattr(cls, "__record_plan__", _Plan(fields, hasattr(cls, "__post_init__")))  # noqa: B010
    methods: dict[str, Any] = {"__init__": _init, "__repr__": _repr}
    if "__signature__" not in own and not any(
            base.__dict__.get("__signature__") is _SIGNATURE for base in cls.__mro__[1:]):
        cls.__signature__ = _SIGNATURE  # type: ignore[attr-defined]
    if eq and "__eq__" not in own:
        methods["__eq__"] = _eq
        if "__hash__" not in own:
            # As dataclasses: a frozen value hashes by its fields; a mutable one is unhashable.
            methods["__hash__"] = _hash if frozen else None
    if frozen:
        methods.update(__setattr__=_frozen_setattr, __delattr__=_frozen_delattr)
    for name, method in methods.items():
        # A record subclass inherits them from its record base: setting an attribute on a
        # class is not free (it resets the type's caches), and this runs at start-up.
        if name not in own and getattr(cls, name) is not method:
            setattr(cls, name, method)
    return cls


@dataclass_transform(field_specifiers=(field, Field))
def record(*, frozen: bool = False, kw_only: bool = False,
           eq: bool = True) -> Callable[[type[T]], type[T]]:
    """Make the decorated class a record (see the module docstring)."""

    def decorate(cls: type[T]) -> type[T]:
        return _process(cls, frozen, kw_only, eq)

    return decorate


def is_record(obj: Any) -> bool:
    """Whether ``obj`` is a record class or an instance of one."""
    cls = obj if isinstance(obj, type) else type(obj)
    return getattr(cls, "__record_fields__", None) is not None


def fields(obj: Any) -> tuple[Field, ...]:
    """The fields of a record class or instance, in order."""
    cls = obj if isinstance(obj, type) else type(obj)
    found: dict[str, Field] | None = getattr(cls, "__record_fields__", None)
    if found is None:
        raise TypeError(f"{cls.__name__} is not a record")
    return tuple(found.values())


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of ``obj`` with ``changes``, built through ``__init__`` (validated again)."""
    found: dict[str, Field] | None = getattr(type(obj), "__record_fields__", None)
    if found is None:
        raise TypeError(f"replace() takes a record, got {type(obj).__name__}")
    values = obj.__dict__
    for name in found:
        if name not in changes:
            changes[name] = values[name]
    return type(obj)(**changes)
