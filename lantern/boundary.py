"""Argument types checked once, where a Python caller enters Lantern.

The manual promises a Python caller only `LanternError`s. The repositories check the values
they understand (a priority from 0 to 100, a known kind), but a value of the wrong type (a
number where a list of entities belongs) used to travel on until Python itself refused it with
a bare `TypeError` somewhere inside. `checked` puts one gate at the public entry points: each
public method of a decorated class checks its arguments against its own annotations before it
runs, and refuses a wrong one with `InvalidInput` naming the argument in the Python API's words
("entities must be text, a list of strings or None, not int"; `argument` set on the error).

The annotations are the contract, so the check cannot drift from the signature the reference
shows. They are read on a method's first call (not at import: a command pays only for what it
calls) and compiled into one small test per parameter. Libraries made for this job were
measured and left: typeguard's `check_type` with every item checked cost 16 µs per `memory add`
for the three arguments given (160 µs for all eleven) and 160 ms to import; beartype looks at
one random item of a container, which is not a boundary. These tests cost 1.3 µs for the
three arguments of a usual `memory add` (2.5 µs for the eleven `add` passes on to
`get_or_add`), about 1% of the add; an argument that is its parameter's default object (the
usual None, False) passes without a test, the default having been tested once.

What the annotations mean here:

- `int` is not `bool`; `float` takes an `int` (as PEP 484 says) but no `bool`.
- `Sequence[X]` (and `list`, `tuple`) is checked item by item; text is not a sequence of texts.
- `Iterable[X]` is read once, by the method, which checks each item as it reads it (a one-shot
  iterator cannot be looked into twice): only that it is iterable is checked here.
- `Mapping[K, V]` has every key and value checked (`object` takes anything).
- `IO[bytes]` is a binary file object (something with `read` or `write`, not a text stream).
- `Callable[...]` is anything callable; a class is checked with `isinstance`.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import io
import os
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Literal, TypeVar, Union, get_args, get_origin

from lantern.errors import InvalidInput, Param

_C = TypeVar("_C", bound=type)
_F = TypeVar("_F", bound=Callable[..., Any])

Test = Callable[[object], bool]
_REQUIRED = object()
"""The default of a parameter that has none (no value is it)."""


def checked(cls: _C) -> _C:
    """Check the arguments of every public method of `cls` (its own and inherited) on each
    call; the class's methods are replaced by checking wrappers defined on `cls` itself."""
    for name in dir(cls):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(cls, name)
        if isinstance(attr, classmethod):
            setattr(cls, name, classmethod(_checking(attr.__func__)))
        elif isinstance(attr, staticmethod):
            setattr(cls, name, staticmethod(_checking(attr.__func__, bound=False)))
        elif inspect.isfunction(attr):
            setattr(cls, name, _checking(attr))
    cls.__lantern_boundary__ = True  # type: ignore[attr-defined]
    return cls


def checks_itself(*names: str) -> Callable[[_F], _F]:
    """Leave the type of these parameters to the method, which refuses a wrong one itself in
    words its callers already rely on (`ingest_text`'s "text must be a str; got bytes").
    The test of the boundary holds such a method to the same promise: only `LanternError`s."""

    def mark(func: _F) -> _F:
        func.__lantern_checks_itself__ = frozenset(names)  # type: ignore[attr-defined]
        return func

    return mark


def _checking(func: Callable[..., Any], *, bound: bool = True) -> Callable[..., Any]:
    if getattr(func, "__lantern_checked__", False):
        return func
    plan: _Plan | None = None

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal plan
        if plan is None:
            plan = plan_of(func, bound=bound)
        plan.check(args, kwargs)
        return func(*args, **kwargs)

    wrapper.__lantern_checked__ = True  # type: ignore[attr-defined]
    return wrapper


def check_fields(func: Callable[..., Any], fields: Mapping[str, object]) -> None:
    """Check a mapping of keyword arguments of `func` (such as one record of `add_many`)
    by `func`'s annotations; names `func` does not take are the caller's to refuse."""
    plan = plan_of(func)
    for name, value in fields.items():
        found = plan.rules.get(name)
        if found is not None and value is not found[1] and not found[0].test(value):
            raise found[0].refusal(name, value)


@functools.cache
def plan_of(func: Callable[..., Any], *, bound: bool = True) -> _Plan:
    """The compiled checks of `func`'s parameters (the first skipped when `bound`)."""
    signature = inspect.signature(func)
    parameters = list(signature.parameters.values())[1 if bound else 0 :]
    names = _Names(func)
    own: frozenset[str] = getattr(func, "__lantern_checks_itself__", frozenset())
    rules: dict[str, tuple[_Rule, object]] = {}
    positional: list[str] = []
    required_positional = 0
    required_keywords: list[str] = []
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"{func.__qualname__}: *args and **kwargs cannot be checked")
        annotation = parameter.annotation
        if annotation is parameter.empty:
            raise TypeError(f"{func.__qualname__}: {parameter.name} has no annotation")
        if isinstance(annotation, str):
            annotation = eval(annotation, {}, names)
        rule = _rule(object if parameter.name in own else annotation)
        needed = parameter.default is parameter.empty
        if not needed and not rule.test(parameter.default):
            raise TypeError(f"{func.__qualname__}: the default of {parameter.name} is not its type")
        # A value that is the default itself passes without a test: the default was tested here.
        rules[parameter.name] = (rule, _REQUIRED if needed else parameter.default)
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            positional.append(parameter.name)
            required_positional += needed
        elif needed:
            required_keywords.append(parameter.name)
    return _Plan(
        func.__name__,
        1 if bound else 0,
        rules,
        tuple(positional),
        required_positional,
        tuple(required_keywords),
    )


@dataclass(frozen=True, slots=True)
class _Plan:
    name: str
    skip: int
    rules: dict[str, tuple[_Rule, object]]
    """Each parameter's rule, and its default (a value that is the default needs no test)."""
    positional: tuple[str, ...]
    """The names of the parameters that may be given by position, in order."""
    required_positional: int
    """How many of those have no default (they come first)."""
    required_keywords: tuple[str, ...]
    """The keyword-only parameters without a default."""

    def check(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        rules = self.rules
        given = len(args) - self.skip
        if given > len(self.positional):
            raise InvalidInput(
                f"{self.name}() takes {len(self.positional)} positional arguments; got {given}"
            )
        for index in range(given):
            name = self.positional[index]
            rule, default = rules[name]
            value = args[self.skip + index]
            if value is not default and not rule.test(value):
                raise rule.refusal(name, value)
            if name in kwargs:
                raise InvalidInput(f"{self.name}() got two values for ", Param(name), argument=name)
        for name, value in kwargs.items():
            found = rules.get(name)
            if found is None:
                raise InvalidInput(f"{self.name}() takes no argument {name!r}", argument=name)
            if value is not found[1] and not found[0].test(value):
                raise found[0].refusal(name, value)
        for name in self.required_keywords:
            if name not in kwargs:
                raise self.missing(name)
        for name in self.positional[given : self.required_positional]:
            if name not in kwargs:
                raise self.missing(name)

    def missing(self, name: str) -> InvalidInput:
        return InvalidInput(Param(name), f" is required by {self.name}()", argument=name)


@dataclass(frozen=True, slots=True)
class _Rule:
    """A compiled annotation: a test, the words for what it takes, and the ways into a value
    that let a refusal point at the part that is wrong."""

    test: Test
    words: str
    plural: str
    items: _Rule | None = None
    """For a sequence: the rule of each item."""
    members: tuple[_Rule, ...] = ()
    """For a union: its members."""
    container: type | None = None

    def refusal(self, name: str, value: object) -> InvalidInput:
        """The error for a `value` of `name` that fails the test, pointing at the first item
        that fails where the value is a sequence the annotation takes."""
        where, rule, wrong = self._culprit(value)
        return InvalidInput(
            Param(name),
            f"{where} must be {rule.words}, not {type(wrong).__name__}",
            argument=name,
        )

    def _culprit(self, value: object) -> tuple[str, _Rule, object]:
        containers = [m for m in (self.members or (self,)) if m.items is not None]
        for member in containers:
            if member.container is not None and isinstance(value, member.container):
                if isinstance(value, str | bytes | bytearray):
                    continue
                items = member.items
                assert items is not None
                assert isinstance(value, Iterable)
                for index, item in enumerate(value):
                    if not items.test(item):
                        where, rule, wrong = items._culprit(item)
                        return f"[{index}]{where}", rule, wrong
        return "", self, value


# --- compiling annotations ----------------------------------------------------------------


def _rule(annotation: object) -> _Rule:
    if annotation is None or annotation is type(None):
        return _Rule(_is_none, "None", "None")
    if annotation is object:
        return _Rule(_anything, "any value", "any values")
    if annotation is bool:
        return _Rule(_is_bool, "True or False", "booleans")
    if annotation is int:
        return _Rule(_is_int, "an integer", "integers")
    if annotation is float:
        return _Rule(_is_number, "a number", "numbers")
    if annotation is str:
        return _Rule(_is_str, "text", "strings")
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Union or origin is types.UnionType:
        return _union([_rule(arg) for arg in args])
    if origin is Literal:
        allowed = frozenset(args)
        shown = ", ".join(repr(arg) for arg in args)
        return _Rule(lambda v: v in allowed, f"one of {shown}", f"values among {shown}")
    if origin in (Sequence, list, tuple):
        if origin is tuple and (len(args) != 2 or args[1] is not Ellipsis):
            raise TypeError(f"only tuple[X, ...] can be checked, not {annotation!r}")
        items = _rule(args[0]) if args else _rule(object)
        return _sequence(items)
    if origin is Iterable:
        items = _rule(args[0]) if args else _rule(object)
        return _Rule(
            _is_iterable,
            f"an iterable of {items.plural}",
            f"iterables of {items.plural}",
        )
    if origin in (Mapping, dict):
        return _mapping(_rule(args[0]), _rule(args[1]))
    if origin is Callable or annotation is Callable:
        return _Rule(callable, "a callable", "callables")
    if origin is IO or annotation is IO:
        return _Rule(_is_binary_file, "a binary file object", "binary file objects")
    if origin is os.PathLike or annotation is os.PathLike:
        return _Rule(lambda v: isinstance(v, os.PathLike), "a path", "paths")
    if isinstance(annotation, type):
        named = annotation.__name__
        article = "an" if named[:1].lower() in "aeiou" else "a"
        return _Rule(lambda v: isinstance(v, annotation), f"{article} {named}", f"{named}s")
    raise TypeError(f"cannot check an argument annotated {annotation!r}")


def _union(members: list[_Rule]) -> _Rule:
    # None first: it is the usual value of an optional argument, and the cheapest test.
    tests = sorted((member.test for member in members), key=lambda test: test is not _is_none)
    return _Rule(
        _any_of(tuple(tests)),
        _either([member.words for member in members]),
        _either([member.plural for member in members]),
        members=tuple(members),
    )


def _any_of(tests: tuple[Test, ...]) -> Test:
    """One test that passes when any of `tests` does, unrolled for the usual two or three."""
    if len(tests) == 2:
        first, second = tests
        return lambda value: first(value) or second(value)
    if len(tests) == 3:
        first, second, third = tests
        return lambda value: first(value) or second(value) or third(value)
    if len(tests) == 4:
        one, two, three, four = tests
        return lambda value: one(value) or two(value) or three(value) or four(value)
    return lambda value: any(test(value) for test in tests)


def _sequence(items: _Rule) -> _Rule:
    item_test = items.test

    def test(value: object) -> bool:
        usual = type(value) is list or type(value) is tuple  # the usual ones, quickly
        if not usual and (
            not isinstance(value, Sequence) or isinstance(value, str | bytes | bytearray)
        ):
            return False
        return all(item_test(item) for item in value)  # type: ignore[attr-defined]

    return _Rule(
        test,
        f"a list of {items.plural}",
        f"lists of {items.plural}",
        items=items,
        container=Sequence,
    )


def _mapping(keys: _Rule, values: _Rule) -> _Rule:
    key_test, value_test = keys.test, values.test
    any_value = value_test is _anything

    def test(value: object) -> bool:
        if type(value) is not dict and not isinstance(value, Mapping):
            return False
        if any_value:
            return all(key_test(key) for key in value)
        return all(key_test(key) and value_test(item) for key, item in value.items())

    keyed = "text keys" if keys.test is _is_str else f"keys that are {keys.plural}"
    words = f"a mapping with {keyed}" + ("" if any_value else f" and {values.plural} as values")
    return _Rule(test, words, words.replace("a mapping", "mappings", 1))


def _either(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _is_none(value: object) -> bool:
    return value is None


def _anything(_value: object) -> bool:
    return True


def _is_bool(value: object) -> bool:
    return value is True or value is False


def _is_int(value: object) -> bool:
    return isinstance(value, int) and value is not True and value is not False


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and value is not True and value is not False


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _is_iterable(value: object) -> bool:
    return isinstance(value, Iterable)


def _is_binary_file(value: object) -> bool:
    if isinstance(value, io.TextIOBase):
        return False
    return callable(getattr(value, "read", None)) or callable(getattr(value, "write", None))


# --- reading annotations --------------------------------------------------------------------


class _Names(dict[str, Any]):
    """The names an annotation may use: the module's own, the builtins, and those the module
    imports only for type checkers (under `if TYPE_CHECKING:`), imported when an annotation
    names them."""

    def __init__(self, func: Callable[..., Any]) -> None:
        super().__init__()
        self._module = sys.modules[func.__module__]
        self._deferred: dict[str, tuple[str, str | None]] | None = None

    def __missing__(self, name: str) -> Any:
        space = vars(self._module)
        if name in space:
            return space[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        if name == "typing":
            return typing
        if self._deferred is None:
            self._deferred = _type_checking_imports(self._module)
        if name not in self._deferred:
            raise NameError(f"{self._module.__name__}: no name {name!r} for an annotation")
        module_name, attribute = self._deferred[name]
        module = importlib.import_module(module_name)
        found = module if attribute is None else getattr(module, attribute)
        self[name] = found
        return found


def _type_checking_imports(module: types.ModuleType) -> dict[str, tuple[str, str | None]]:
    """What `module` imports under `if TYPE_CHECKING:`: name -> (module, attribute)."""
    tree = ast.parse(inspect.getsource(module))
    found: dict[str, tuple[str, str | None]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and _is_type_checking(node.test)):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.module:
                for alias in statement.names:
                    found[alias.asname or alias.name] = (statement.module, alias.name)
            elif isinstance(statement, ast.Import):
                for alias in statement.names:
                    found[alias.asname or alias.name] = (alias.name, None)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )
