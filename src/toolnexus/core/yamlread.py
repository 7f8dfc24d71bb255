"""YAML read with positions: plain JSON-like data plus a 1-based line:col for every node.

PyYAML's ``safe_load`` forgets where a value came from and silently keeps the LAST of two equal
mapping keys. Question files need both: every error names ``path:line:col``, and a repeated key
is an error at the second occurrence. So the text is composed into PyYAML's node tree (which
carries marks) and walked here by hand.

Choices a user can see (the question-set schema documents them):
- mapping keys are the text as written: YAML 1.1 reads ``yes``, ``no``, ``on``, ``off``, ``true``,
  ``false`` and numbers as non-strings, which would turn a noul ``{true: ..., false: ...}`` or a
  choice option named ``no`` into a boolean key. A non-scalar key is an error.
- values that are not JSON (timestamps, binary, ``.nan``, ``.inf``, unknown tags) are errors:
  the canonical bytes are JSON, and a silent ``2024-01-01`` -> date would not survive them.
- merge keys (``<<: *base``) work; explicit keys win over merged ones, as YAML specifies.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .jsonlimits import MAX_DEPTH, MAX_NUMBER_CHARS

__all__ = ["ALIAS_BUDGET", "Located", "NodePath", "Problem", "YamlSyntaxError", "read_yaml"]

#: A position in the data: mapping keys and sequence indexes from the document root.
NodePath: TypeAlias = tuple[str | int, ...]

_MERGE_TAG = "tag:yaml.org,2002:merge"
_NUMBER_TAGS = frozenset({"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"})
_COLLECTION_TAGS = frozenset({"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"})
# The plain scalars that mean the same boolean or number in YAML 1.2's core schema and in JSON.
_YAML12_FORM = re.compile(
    r"true|false|True|False|TRUE|FALSE|[-+]?(0|[1-9][0-9]*)"
    r"|[-+]?(\.[0-9]+|(0|[1-9][0-9]*)\.[0-9]*)([eE][-+]?[0-9]+)?|[-+]?(0|[1-9][0-9]*)[eE][-+]?[0-9]+"
)
# A document whose aliases expand into more nodes than this is an attack (a "billion laughs"),
# not a question set or a state. Only EXPANSION counts (a node reached again through an alias):
# a large file written out in full costs its own size, never this budget.
ALIAS_BUDGET = 100_000
_TOO_DEEP = f"YAML nested more than {MAX_DEPTH} levels deep (the most toolnexus reads): flatten it"
_OPENS = (
    yaml.BlockMappingStartToken,
    yaml.BlockSequenceStartToken,
    yaml.FlowMappingStartToken,
    yaml.FlowSequenceStartToken,
)
_CLOSES = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


@dataclass(frozen=True)
class Problem:
    """Something wrong in the YAML itself, at a 1-based ``line``:``col``."""

    line: int
    col: int
    code: str
    message: str


class YamlSyntaxError(Exception):
    """The text is not YAML (or not text): one problem, nothing could be read."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


@dataclass
class Located:
    """One YAML document as data, with where each part of it was written.

    ``marks[path]`` is where the VALUE at ``path`` starts; ``key_marks[path]`` where the mapping
    key that leads to it starts (the better place to point at for "unknown field" or "missing").
    """

    value: Any = None
    documents: int = 1
    #: Where the second document starts, when there is one (a question set is one document).
    second_document: tuple[int, int] | None = None
    marks: dict[NodePath, tuple[int, int]] = field(default_factory=dict)
    key_marks: dict[NodePath, tuple[int, int]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: Where each PLAIN (unquoted) scalar ends, 1-based: what follows it on its line is either
    #: nothing, flow punctuation, or a comment that may have cut the text (check-criteria TN040).
    plain_ends: dict[NodePath, tuple[int, int]] = field(default_factory=dict)
    #: Plain scalars that YAML 1.1 reads as a boolean or number while YAML 1.2 / JSON would read
    #: them as text (``no``, ``on``, ``010``): not errors, reported for states (TN041).
    yaml11: list[Problem] = field(default_factory=list)

    def at(self, path: NodePath) -> tuple[int, int]:
        """The value's position, else the nearest enclosing one that is known."""
        while path not in self.marks and path:
            path = path[:-1]
        return self.marks.get(path, (1, 1))

    def key_at(self, path: NodePath) -> tuple[int, int]:
        """The position of the key leading to ``path``, else of the value."""
        return self.key_marks.get(path) or self.at(path)


def _pos(node: Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _line_col(text: str, index: int) -> tuple[int, int]:
    before = text[:index]
    return before.count("\n") + 1, index - (before.rfind("\n") + 1) + 1


def _syntax_problem(e: yaml.YAMLError, text: str) -> Problem:
    if isinstance(e, yaml.reader.ReaderError):
        line, col = _line_col(text, e.position)
        c = e.character
        escape = f"\\x{c:02x}" if c <= 0xFF else f"\\u{c:04x}" if c <= 0xFFFF else f"\\U{c:08x}"
        return Problem(
            line,
            col,
            "TN900",
            f"YAML cannot contain character #x{c:04x}: remove it, or write it as {escape} "
            "inside double quotes",
        )
    if isinstance(e, yaml.MarkedYAMLError):
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = e.problem or "invalid YAML"
        if e.context:
            what += f" ({e.context})"
        if "'\\t'" in (e.problem or ""):  # a tab where YAML wants indentation or a token
            what += ": indent with spaces, YAML does not take tabs there"
        return Problem(line, col, "TN900", f"YAML syntax error: {what}")
    return Problem(1, 1, "TN900", f"YAML syntax error: {e}")


class _Walker:
    def __init__(self, out: Located) -> None:
        self.out = out
        self.budget = ALIAS_BUDGET
        self.seen: set[int] = set()
        self.constructor = yaml.SafeLoader("")

    def problem(self, node: Node, code: str, message: str) -> None:
        self.out.problems.append(Problem(*_pos(node), code, message))

    def walk(self, node: Node, path: NodePath, stack: frozenset[int]) -> Any:
        if id(node) in self.seen:
            self.budget -= 1
            if self.budget < 0:
                raise YamlSyntaxError(
                    Problem(
                        *_pos(node),
                        "TN900",
                        f"YAML aliases expand to more than {ALIAS_BUDGET:,} nodes (alias bomb?)",
                    )
                )
        else:
            self.seen.add(id(node))
        if len(path) > MAX_DEPTH:
            raise YamlSyntaxError(Problem(*_pos(node), "TN900", _TOO_DEEP))
        self.out.marks[path] = _pos(node)
        if id(node) in stack:
            self.problem(node, "TN020", "a recursive alias cannot be written as JSON")
            return None
        inner = stack | {id(node)}
        if isinstance(node, ScalarNode):
            if not node.style:  # plain: None from PyYAML, "" from libyaml
                self.out.plain_ends[path] = (node.end_mark.line + 1, node.end_mark.column + 1)
            return self.scalar(node)
        if node.tag not in _COLLECTION_TAGS:
            # A tag on a mapping or sequence (``!!python/object:os.system {}``) names a
            # constructor the safe loader never runs: as a scalar's unknown tag, an error,
            # never a silent plain mapping (issue 43 item 5).
            self.problem(node, "TN020", f"unknown YAML tag {node.tag}: not a JSON value")
        if isinstance(node, SequenceNode):
            return [self.walk(child, (*path, i), inner) for i, child in enumerate(node.value)]
        if isinstance(node, MappingNode):
            return self.mapping(node, path, inner)
        self.problem(node, "TN020", "unsupported YAML node")  # pragma: no cover - PyYAML has 3
        return None

    def scalar(self, node: ScalarNode) -> Any:
        if node.tag in _NUMBER_TAGS and len(node.value) > MAX_NUMBER_CHARS:
            self.problem(
                node,
                "TN020",
                f"a number of {len(node.value)} characters (at most {MAX_NUMBER_CHARS} are "
                "accepted)",
            )
            return node.value
        try:
            value = self.constructor.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError):
            self.problem(node, "TN020", f"unknown YAML tag {node.tag}: not a JSON value")
            return node.value
        if isinstance(value, datetime.date):
            self.problem(node, "TN020", f"{node.value!r} reads as a YAML timestamp: quote it")
            return node.value
        if isinstance(value, bytes):
            self.problem(node, "TN020", "YAML binary is not a JSON value")
            return node.value
        if isinstance(value, float) and not math.isfinite(value):
            self.problem(node, "TN020", f"{node.value} is not a JSON number")
            return node.value
        if not node.style and isinstance(value, bool | int | float):
            self.yaml11_value(node, value)
        return value

    def yaml11_value(self, node: ScalarNode, value: bool | float) -> None:
        """Record a plain scalar that only YAML 1.1 reads as non-text (``no`` -> False, ``010``
        -> 8, ``1_000``, ``1:30`` -> 90); ``true``, ``12``, ``1.5e3`` mean the same in JSON."""
        if _YAML12_FORM.fullmatch(node.value):
            return
        kind = "a boolean" if isinstance(value, bool) else "a number"
        self.out.yaml11.append(
            Problem(
                *_pos(node),
                "TN041",
                f"{node.value!r} reads as {kind} ({value!r}) under YAML 1.1; quote it if the "
                "text was meant",
            )
        )

    def pairs(self, node: MappingNode) -> Iterator[tuple[Node, Node, bool]]:
        """The entries of a mapping, its own first, then those it merges (``<<``)."""
        merges: list[Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merges.append(value_node)
            else:
                yield key_node, value_node, False
        for merge in merges:
            sources = merge.value if isinstance(merge, SequenceNode) else [merge]
            for source in sources:
                if not isinstance(source, MappingNode):
                    self.problem(source, "TN020", "a merge key (<<) takes a mapping")
                    continue
                for key_node, value_node, _ in self.pairs(source):
                    yield key_node, value_node, True

    def mapping(self, node: MappingNode, path: NodePath, stack: frozenset[int]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node, merged in self.pairs(node):
            if not isinstance(key_node, ScalarNode):
                self.problem(key_node, "TN020", "a mapping key must be a plain string")
                continue
            # The text as written: `no:` and `true:` stay strings (see the module docstring).
            key = key_node.value
            if key in result:
                # A merged key under an explicit one is YAML's override rule, not a mistake.
                if not merged:
                    first = self.out.key_marks[(*path, key)]
                    self.problem(
                        key_node,
                        "TN021",
                        f"duplicate key {key!r} (first at line {first[0]}); YAML would "
                        "silently keep only the last one",
                    )
                continue
            self.out.key_marks[(*path, key)] = _pos(key_node)
            result[key] = self.walk(value_node, (*path, key), stack)
        return result


def _compose(text: str) -> list[Node]:
    """The node trees of ``text``. libyaml composes ~18x faster (measured: 25,000 options in
    0.34 s against 6.1 s), which is what keeps a large legitimate file cheap; its error texts
    differ, so a file it refuses is composed again by the pure-Python loader for the message."""
    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        try:
            return list(yaml.compose_all(text, Loader=fast))
        except yaml.YAMLError as e:
            # libyaml stops at 1,000 levels; the Python loader takes seconds to recurse that deep
            # (its scanner is quadratic in the flow depth), to end in a RecursionError.
            if getattr(e, "problem", None) == "exceeded maximum nesting depth":
                raise YamlSyntaxError(_too_deep(text)) from None
    return list(yaml.compose_all(text, Loader=yaml.SafeLoader))


def _too_deep(text: str) -> Problem:
    """Where ``text`` first opens a collection more than MAX_DEPTH deep, for a document the
    composer recursed too deep to read (it cannot say where). The scanner keeps no stack of
    calls, and stops there."""
    depth = 0
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if isinstance(token, _OPENS):
                depth += 1
                if depth > MAX_DEPTH + 1:  # the root is the first: as the walk counts
                    mark = token.start_mark
                    return Problem(mark.line + 1, mark.column + 1, "TN900", _TOO_DEEP)
            elif isinstance(token, _CLOSES):
                depth -= 1
    except yaml.YAMLError:
        pass
    return Problem(1, 1, "TN900", _TOO_DEEP)


def read_yaml(text: str) -> Located:
    """Read the YAML ``text``. A syntax error raises :class:`YamlSyntaxError`; anything the walk
    finds wrong (duplicate keys, non-JSON values) is collected in ``problems``.

    A stream of several documents reads the first and counts them in ``documents``; an empty
    stream reads as ``None`` with ``documents == 0``.
    """
    try:
        nodes = _compose(text)
    except yaml.YAMLError as e:
        raise YamlSyntaxError(_syntax_problem(e, text)) from None
    except RecursionError:
        raise YamlSyntaxError(_too_deep(text)) from None
    out = Located(documents=len(nodes))
    if len(nodes) > 1:
        out.second_document = _pos(nodes[1])
    if nodes:
        try:
            out.value = _Walker(out).walk(nodes[0], (), frozenset())
        except RecursionError:
            raise YamlSyntaxError(_too_deep(text)) from None
    return out
