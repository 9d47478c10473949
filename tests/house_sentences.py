"""Where core fills a record's text field with a sentence it translated: the house test of notes as data reads the
source with this (tests/unit/test_house.py).

A value is *translated* when it is a call of ``_``, ``ngettext`` or ``pgettext`` or holds one (``_(...).format()``,
an f-string, a join, a tuple or a list of them), when it is a local name bound to such a value in the same function
(assigned, or a list it was appended to), or when it is a call of a function of core whose return value is
translated (followed through imports across modules, to a fixed point). A record is a dataclass of core; its text
fields are those whose annotation names ``str``. A sentence reaches one when a translated value is given for a text
field: as a keyword (or by position) of the record's constructor, to ``dataclasses.replace``, or assigned to an
attribute of that name. An error's message is no record (an exception is no dataclass), and a progress message
goes to a callback, not a field.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["PLANTED", "PLANTED_FOUND", "sentences_in_records"]

_GETTEXT = {"_", "ngettext", "pgettext"}


@functools.cache
def _nodes(function: ast.FunctionDef) -> list[ast.AST]:
    """A function's nodes, walked once (the fixed points below read them again and again)."""
    return list(ast.walk(function))


@dataclass
class _Module:
    name: str  # core.compare.divergence
    path: Path
    tree: ast.Module
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)  # local name -> (module, name)
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)  # top-level functions and methods
    forwards: dict[str, ast.Call] = field(default_factory=dict)  # helpers that pass their keywords on (_forwards)


def _read(root: Path) -> dict[str, _Module]:
    modules = {}
    for path in sorted((root / "core").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        module = _Module(name, path, ast.parse(path.read_text()))
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                module.imports.update({a.asname or a.name: (node.module, a.name) for a in node.names})
        module.functions = {n.name: n for n in module.tree.body if isinstance(n, ast.FunctionDef)}
        for cls in (n for n in module.tree.body if isinstance(n, ast.ClassDef)):
            methods = (n for n in cls.body if isinstance(n, ast.FunctionDef))
            module.functions.update({f"{cls.name}.{n.name}": n for n in methods})
        modules[name] = module
    return modules


def _text_fields(modules: dict[str, _Module]) -> dict[tuple[str, str], list[tuple[str, bool]]]:
    """Each dataclass of core by (module, name): its fields in order, each with whether its annotation names
    ``str`` (``Note | str``, a note or the sentence an earlier version kept, is a note's)."""
    found: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    for module in modules.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef) and any("dataclass" in ast.unparse(d) for d in node.decorator_list):
                found[(module.name, node.name)] = [
                    (s.target.id, "str" in ast.unparse(s.annotation).replace("Note | str", "Note"))
                    for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                    and "ClassVar" not in ast.unparse(s.annotation)
                ]  # fmt: skip
    return found


@dataclass
class _Said:
    """What core's functions return: those whose value is translated, and for those that return a tuple, which of
    its places are (a key beside a sentence is no sentence)."""

    whole: set[tuple[str, str]] = field(default_factory=set)  # (module, function or Class.method)
    places: dict[tuple[str, str], tuple[bool, ...]] = field(default_factory=dict)
    methods: dict[str, set[bool]] = field(default_factory=dict)  # a method's name: whether each so named is
    fills: dict[tuple[str, str], set[int]] = field(default_factory=dict)  # the list parameters it puts sentences in


class _Reader:
    """Which values of a function are translated, given what core's functions return."""

    def __init__(self, said: _Said, module: _Module) -> None:
        self.said, self.module = said, module
        self.names: set[str] = set()

    def _target(self, call: ast.Call) -> tuple[str, str] | None:
        if isinstance(call.func, ast.Name):
            return self.module.imports.get(call.func.id, (self.module.name, call.func.id))
        return None

    def _calls_translating(self, call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Name) and func.id in _GETTEXT:
            return True
        if isinstance(func, ast.Attribute):  # a method: by its name, where every method so named is translated
            return self.said.methods.get(func.attr) == {True}
        return self._target(call) in self.said.whole

    def places(self, value: ast.AST) -> tuple[bool, ...] | None:
        """Which places of a tuple ``value`` are translated: a tuple written out, or a call of a function of core
        that returns one."""
        if isinstance(value, ast.Tuple):
            return tuple(self.translated(e) for e in value.elts)
        if isinstance(value, ast.Call) and (target := self._target(value)) is not None:
            return self.said.places.get(target)
        return None

    def translated(self, value: ast.AST | None) -> bool:
        """Whether ``value`` is a sentence made here: text is built from a translated value by formatting, joining,
        concatenating or collecting it, not by any call that takes it (a record made with a label is no text)."""
        match value:
            case ast.Call(func=ast.Attribute(attr="format" | "join" | "strip" | "capitalize", value=made)):
                return self.translated(made) or any(self.translated(a) for a in value.args)
            case ast.Call():
                return self._calls_translating(value)
            case ast.Name(id=name):
                return name in self.names
            case ast.JoinedStr(values=parts) | ast.List(elts=parts) | ast.Tuple(elts=parts) | ast.Set(elts=parts):
                return any(self.translated(p) for p in parts)
            case ast.FormattedValue(value=inner) | ast.Starred(value=inner) | ast.Subscript(value=inner):
                return self.translated(inner)
            case ast.BinOp(left=left, right=right):
                return self.translated(left) or self.translated(right)
            case ast.IfExp(body=body, orelse=orelse):
                return self.translated(body) or self.translated(orelse)
            case ast.BoolOp(values=parts):
                return any(self.translated(p) for p in parts)
            case ast.ListComp(elt=inner) | ast.GeneratorExp(elt=inner) | ast.SetComp(elt=inner):
                return self.translated(inner)
            case ast.Dict(values=parts):
                return any(self.translated(p) for p in parts)
        return False

    def bound(self, targets: list[ast.expr], value: ast.AST) -> list[ast.expr]:
        """The targets of an assignment that get a translated value: place by place when a tuple is unpacked."""
        places = self.places(value)
        found = []
        for target in targets:
            if isinstance(target, ast.Tuple) and places is not None and len(places) == len(target.elts):
                found += [e for e, said in zip(target.elts, places, strict=True) if said]
            elif self.translated(value):
                found.append(target)
        return found

    def filled(self, call: ast.Call) -> list[ast.expr]:
        """The arguments of ``call`` that the function called puts sentences in (a list it appends them to)."""
        places = self.said.fills.get(self._target(call) or ("", ""), set())
        return [a for i, a in enumerate(call.args) if i in places]

    def learn(self, function: ast.FunctionDef) -> None:
        """The local names bound to translated values, to a fixed point (a name may be bound after its use)."""
        while True:
            before = len(self.names)
            for node in _nodes(function):
                if isinstance(node, ast.Call):
                    self.names |= {a.id for a in self.filled(node) if isinstance(a, ast.Name)}
                if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None:
                    targets: list[ast.expr] = node.targets if isinstance(node, ast.Assign) else [node.target]
                    bound = self.bound(targets, node.value)
                    self.names |= {n.id for t in bound for n in ast.walk(t) if isinstance(n, ast.Name)}
                elif isinstance(node, ast.For | ast.comprehension) and self.translated(node.iter):
                    self.names |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
                elif (
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("append", "insert", "extend") and isinstance(node.func.value, ast.Name)
                    and any(self.translated(a) for a in node.args)
                ):  # fmt: skip
                    self.names.add(node.func.value.id)
            if len(self.names) == before:
                return

    def returned(self, function: ast.FunctionDef) -> tuple[bool, tuple[bool, ...] | None]:
        """Whether the function returns a translated value, and which places of the tuple it returns are."""
        values = [n.value for n in _nodes(function) if isinstance(n, ast.Return) and n.value is not None]
        places = [self.places(v) if isinstance(v, ast.Tuple) else None for v in values]
        joined = None
        if values and all(p is not None for p in places) and len({len(p or ()) for p in places}) == 1:
            joined = tuple(any(column) for column in zip(*[p or () for p in places], strict=True))
        return any(self.translated(v) for v in values), joined


def _functions(modules: dict[str, _Module]) -> Iterator[tuple[_Module, ast.FunctionDef]]:
    for module in modules.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.FunctionDef):
                yield module, node


def _said(modules: dict[str, _Module]) -> _Said:
    """What core's top-level functions and methods return, to a fixed point."""
    said = _Said()
    while True:
        before = (len(said.whole), sum(sum(p) for p in said.places.values()), sum(map(len, said.fills.values())))
        for module in modules.values():
            for name, function in module.functions.items():
                reader = _Reader(said, module)
                reader.learn(function)
                whole, places = reader.returned(function)
                given = [a.arg for a in function.args.args]
                filled = {i for i, name in enumerate(given) if name in reader.names}
                if filled:
                    said.fills[(module.name, name)] = filled
                if whole:
                    said.whole.add((module.name, name))
                if places is not None:
                    said.places[(module.name, name)] = places
        said.methods = {}
        for module in modules.values():
            for name in module.functions:
                if "." in name:
                    said.methods.setdefault(name.rpartition(".")[2], set()).add((module.name, name) in said.whole)
        if (len(said.whole), sum(sum(p) for p in said.places.values()), sum(map(len, said.fills.values()))) == before:
            return said


def _record_of(
    call: ast.Call, module: _Module, records: dict[tuple[str, str], list[tuple[str, bool]]]
) -> tuple[str, list[tuple[str, bool]]] | None:
    """The record a call makes, with its fields: the class its name is imported as or defined by, else (a name a
    package re-exports, an attribute) every record of that name, their fields together."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if isinstance(func, ast.Name) and (found := records.get(module.imports.get(name, (module.name, name)))):
        return name, found
    if isinstance(func, ast.Name) and name in module.forwards:  # a helper that passes its keywords on to a record
        return _record_of(module.forwards[name], module, records)
    named = [fields for (_module, record), fields in records.items() if record == name]
    return (name, [f for fields in named for f in fields]) if named else None


def _forwards(module: _Module) -> dict[str, ast.Call]:
    """The module's functions (nested ones too) that pass their ``**keywords`` on to a call: by name, that call."""
    found = {}
    for function in ast.walk(module.tree):
        if isinstance(function, ast.FunctionDef) and function.args.kwarg is not None:
            rest = function.args.kwarg.arg
            for call in ast.walk(function):
                if isinstance(call, ast.Call) and any(
                    k.arg is None and isinstance(k.value, ast.Name) and k.value.id == rest for k in call.keywords
                ):
                    found[function.name] = call
    return found


def sentences_in_records(root: Path) -> list[str]:
    """Each place in core where a translated value is given for a record's text field: "path Record.field" (or
    "path .field" for an attribute assigned, "path replace(field)")."""
    modules = _read(root)
    for module in modules.values():
        module.forwards = _forwards(module)
    records = _text_fields(modules)
    text_names = {name for fields in records.values() for name, text in fields if text}
    said = _said(modules)
    found = []
    for module, function in _functions(modules):
        reader = _Reader(said, module)
        reader.learn(function)
        where = module.path.relative_to(root).as_posix()
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and (made := _record_of(node, module, records)) is not None:
                record, fields = made
                given = [(k.arg, k.value) for k in node.keywords if k.arg]
                given += [(fields[i][0], a) for i, a in enumerate(node.args) if i < len(fields)]
                text = {name for name, is_text in fields if is_text}
                found += [f"{where} {record}.{n}" for n, v in given if n in text and reader.translated(v)]
            elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("replace", "dataclasses.replace"):
                found += [
                    f"{where} replace({k.arg})"
                    for k in node.keywords
                    if k.arg in text_names and reader.translated(k.value)
                ]
            if isinstance(node, ast.Call):  # a record's list given to a function that puts sentences in it
                found += [
                    f"{where} .{a.attr}"
                    for a in reader.filled(node)
                    if isinstance(a, ast.Attribute) and a.attr in text_names
                ]
            if isinstance(node, ast.Assign):
                found += [
                    f"{where} .{t.attr}"
                    for t in reader.bound(node.targets, node.value)
                    if isinstance(t, ast.Attribute) and t.attr in text_names
                ]
    return sorted(set(found))


# a made-up module of core, and what the check must find in it: a sentence given directly, through a name, a list it
# was appended to, a helper, a method, an attribute and dataclasses.replace; not a note, a key or an error
PLANTED = """import dataclasses
from dataclasses import dataclass
from core.i18n import _

@dataclass
class Made:
    why: str
    notes: list[str]
    said: Note | str = ''
    key: str = ''
    lines: list[str] = ()

class Rule:
    def words(self) -> str:
        return _('rule {x}').format(x=1)

def helper(x):
    return f'{_("at")} {x}'

def direct():
    return Made(why=_('a {x}').format(x=1), notes=[])

def named():
    why = _('b')
    notes = []
    notes.append(helper(1))
    return Made(why=why, notes=notes)

def method(rule):
    return Made(why=rule.words(), notes=[])

def replaced(made):
    made.why = _('c')
    return dataclasses.replace(made, notes=[_('d')])

def forwarded():
    def made(**given):
        return Made(notes=[], **given)
    return made(key=_('f'))

def fill(into, count):
    into.append(_('g {count}').format(count=count))

def filled(made):
    fill(made.lines, 1)

def keyed():
    return 'k', _('e')

def fine(made):
    if not made:
        raise ValueError(_('an error {x}').format(x=1))
    made.key, made.notes = keyed()
    return Made(why='key', notes=[], said=note(_('e')))
"""
PLANTED_FOUND = {"core/made.py Made.why", "core/made.py Made.notes", "core/made.py .why", "core/made.py .notes"}
PLANTED_FOUND |= {"core/made.py replace(notes)", "core/made.py Made.key", "core/made.py .lines"}
