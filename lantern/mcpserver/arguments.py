"""A tool call's arguments checked against the tool's JSON Schema, with one-line messages.

The SDK's low-level server advertises a tool's `inputSchema` but does not enforce it, so every
call is checked here before the repository sees it: the schema a client reads is the contract
the server keeps. A violation becomes `InvalidInput` ("invalid arguments: ..."), which the
server returns as a tool error like any other; the messages name the argument and never
repeat a long value (jsonschema's own messages quote the whole instance).

Values the repository then checks further (a time's text, a reference, a blank content) fail
there, with the CLI's own message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lantern.errors import InvalidInput
from lantern.mcpserver.spec import Args, ToolSpec

_VALIDATORS: dict[str, Any] = {}
_JSON_TYPES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}


def prepare(specs: tuple[ToolSpec, ...]) -> None:
    """Import jsonschema and build every tool's validator (done once, off the first call)."""
    for spec in specs:
        _validator(spec)


def check(spec: ToolSpec, args: Mapping[str, Any]) -> Args:
    """The arguments if they satisfy the schema, integral numbers given to integer arguments
    as ints (JSON does not tell 5 from 5.0, and the repository takes only ints there)."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator(spec).iter_errors(dict(args)))
    if error is not None:
        raise InvalidInput(f"invalid arguments: {_describe(error)}")
    properties = spec.input_schema["properties"]
    return {
        name: int(value)
        if isinstance(value, float) and properties[name].get("type") == "integer"
        else value
        for name, value in args.items()
    }


def _validator(spec: ToolSpec) -> Any:
    found = _VALIDATORS.get(spec.name)
    if found is None:
        from jsonschema import Draft202012Validator

        found = _VALIDATORS[spec.name] = Draft202012Validator(spec.input_schema)
    return found


def _describe(error: Any) -> str:
    """One line naming the argument (`limit`, `source_refs.1`) and what it must be."""
    where = ".".join(str(part) for part in error.absolute_path) or "arguments"
    keyword, expected, value = error.validator, error.validator_value, error.instance
    if keyword == "required":
        missing = [name for name in expected if name not in value]
        what = "argument" if where == "arguments" else "key"
        prefix = "" if where == "arguments" else f"{where}: "
        return f"{prefix}missing required {what} {', '.join(map(repr, missing))}"
    if keyword == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        extra = sorted(name for name in value if name not in known)
        return (
            f"unknown argument {', '.join(map(repr, extra))}; this tool takes "
            f"{', '.join(known) or 'no arguments'}"
        )
    if keyword in ("type", "anyOf"):
        # An `anyOf` reaches here only when the value has the type of none of its branches
        # (`best_match` descends into the branch of its type otherwise).
        kinds = [expected] if keyword == "type" else [branch["type"] for branch in expected]
        wanted = " or ".join(f"{_article(kind)} {kind}" for kind in kinds)
        return f"{where} must be {wanted}; got {_json_type(value)}"
    if keyword == "enum":
        return f"{where} must be one of {', '.join(map(str, expected))}; got {_short(value)}"
    if keyword == "minimum":
        return f"{where} must be at least {expected}; got {_short(value)}"
    if keyword == "maximum":
        return f"{where} must be at most {expected}; got {_short(value)}"
    if keyword == "minLength":
        return (
            f"{where} must not be empty"
            if expected == 1
            else (f"{where} must be at least {expected} characters long; got {_short(value)}")
        )
    if keyword == "maxLength":
        return f"{where} is too long: {len(value)} characters, the limit is {expected}"
    if keyword == "pattern":
        return f"{where} must match {expected}; got {_short(value)}"
    return f"{where}: {_clip(error.message, 200)}"


def _article(kind: str) -> str:
    return "an" if kind in ("integer", "array", "object") else "a"


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    """A value as JSON, cut to a readable length."""
    return _clip(json.dumps(value, ensure_ascii=False))


def _clip(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
