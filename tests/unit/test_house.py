"""The house rules, checked on the source itself: small modules and functions, no Streamlit in core, features
that depend on libraries and never on each other, jobs that are typed handles from page to worker, keyword-only
records, and one table of pages."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import typing
from pathlib import Path

import pytest

import core.jobs.registry as registry
from core.jobs import JOBS
from core.jobs.registry import signature_of

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core"
APP = [*sorted((ROOT / "ui").glob("*.py")), *sorted((ROOT / "app_pages").glob("*.py")), ROOT / "streamlit_app.py"]
FEATURES = {"export", "decode", "partition", "bench", "quantize", "profile", "graph", "upgrade", "notebook", "deploy"}
FEATURES |= {"diff", "compare", "generate"}
LIBRARIES = {"model", "runtime"}
BASICS = {"access", "errors", "extras", "i18n", "identity", "notes", "settings", "tables", "workspace"}
BASICS |= {"page_titles"}  # the pages' titles: ui/pages.py's rows and the notebook's headings read them
# what each part of core may import from core (besides itself)
ALLOWED = {
    **{feature: LIBRARIES | BASICS for feature in FEATURES},
    "model": BASICS,
    "runtime": {"model"} | BASICS,
    "jobs": {"runtime"} | BASICS,  # a cluster asks each target what it is made of (core.runtime.hardware)
    # every kind of run is a record of core.runtime.runs: the history knows no feature
    "store": {"jobs", "runtime"} | BASICS,
    # a room's tables are the store's; what it pools, a benchmark's, a browser's and a quantization's runs (types)
    "classroom": {"store", "tutorial", "bench", "quantize", "runtime"} | BASICS,
    # a browser's run has a benchmark's headline and statistics; its page embeds JSON as the graph's
    "browser": {"bench", "graph"} | LIBRARIES | BASICS,
    # Tune measures with Benchmark's harness; its variants are Quantize's
    "tune": {"bench", "quantize"} | LIBRARIES | BASICS,
    # a server for the variant Tune chose, made with Quantize's tools when only the float32 model is given
    "deploy": {"quantize"} | LIBRARIES | BASICS,
    # Decode's job for a small model lays out its graph in the same worker (core/decode/graphed.py)
    "decode": {"graph"} | LIBRARIES | BASICS,
}
# names for ONNX protobuf messages: parameters so named are typed with onnx's classes, never Any
PROTO_NAMES = {"model", "graph", "node", "proto", "tensor", "initializer", "attribute", "original", "optimized"}


def _modules() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def _typing_only(tree: ast.Module) -> set[int]:
    """Line numbers of the imports under ``if TYPE_CHECKING:`` (names for the type checker, not dependencies)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            lines |= {n.lineno for child in node.body for n in ast.walk(child)}
    return lines


def _core_imports(path: Path, *, typing_too: bool = True) -> set[str]:
    """The second component of every core.X import in ``path`` (module level and inside functions)."""
    tree = ast.parse(path.read_text())
    skipped = set() if typing_too else _typing_only(tree)
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names if node.module == "core"]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        if getattr(node, "lineno", None) in skipped:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "core" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("where", ["core", "app"])
def test_no_module_is_over_500_lines_and_no_page_over_250(where: str) -> None:
    paths = _modules() if where == "core" else APP
    limit = {p: 250 if p.parent.name == "app_pages" else 500 for p in paths}
    long = {str(p.relative_to(ROOT)): n for p in paths if (n := len(p.read_text().splitlines())) > limit[p]}
    assert not long


@pytest.mark.parametrize("where", ["core", "app"])
def test_no_function_is_over_80_lines(where: str) -> None:
    long = []
    for path in _modules() if where == "core" else APP:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 80:
                    long.append(f"{path.relative_to(ROOT)}:{node.name} ({length} lines)")
    assert not long


def test_core_never_imports_streamlit() -> None:
    for path in _modules():
        tree = ast.parse(path.read_text())
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert "streamlit" not in imported, path


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_features_depend_on_libraries_and_never_on_each_other(part: str) -> None:
    for path in sorted((CORE / part).rglob("*.py")):
        # the job table names every feature's request and result for the type checker, and imports none of them
        typing_too = path != CORE / "jobs" / "registry.py"
        strays = _core_imports(path, typing_too=typing_too) - ALLOWED[part] - {part}
        assert not strays, f"{path.relative_to(CORE)} imports core.{', core.'.join(sorted(strays))}"


def _handle_types() -> dict[str, tuple[typing.Any, typing.Any]]:
    """Each handle's (request, result) types, as the job table annotates them."""
    names: dict[str, typing.Any] = {}
    for node in ast.walk(ast.parse(Path(registry.__file__).read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("core."):
            module = importlib.import_module(node.module)
            names.update({a.name: getattr(module, a.name) for a in node.names})
    found = {}
    for name, annotation in registry.__annotations__.items():
        if annotation.startswith("Job["):
            request, result = eval(annotation, {**vars(registry), **names}).__args__  # our own source
            found[getattr(registry, name).name] = (request, result)
    return found


HANDLES = _handle_types()


@pytest.mark.parametrize("name", JOBS.names())
def test_every_job_takes_one_frozen_keyword_only_request_and_its_handle_says_which(name: str) -> None:
    signature = signature_of(JOBS.get(name).target)
    assert list(signature.parameters) == ["request"], f"{name} takes {list(signature.parameters)}, not one request"
    request = signature.parameters["request"]
    assert dataclasses.is_dataclass(request), f"{name}'s request is not a dataclass"
    frozen = request.__dataclass_params__.frozen  # type: ignore[attr-defined]
    kw_only = all(f.kw_only for f in dataclasses.fields(request))
    assert frozen and kw_only, f"{request.__name__} is not frozen and keyword-only"
    assert signature.result is not typing.Any, f"{name} does not say what it returns"
    assert HANDLES[name] == (request, signature.result), f"the handle of {name} names other types than its function"


def _dataclasses(paths: list[Path]) -> list[tuple[str, int, bool]]:
    """(place, fields, keyword-only) of every dataclass defined in ``paths``."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            for deco in node.decorator_list:
                call = deco if isinstance(deco, ast.Call) else None
                if ast.unparse(call.func if call else deco) != "dataclass":
                    continue
                fields = [
                    s for s in node.body if isinstance(s, ast.AnnAssign) and "ClassVar" not in ast.unparse(s.annotation)
                ]
                kw_only = call is not None and any(
                    k.arg == "kw_only" and ast.unparse(k.value) == "True" for k in call.keywords
                )
                found.append((f"{path.relative_to(ROOT)}:{node.name}", len(fields), kw_only))
    return found


def test_records_of_more_than_three_fields_are_keyword_only() -> None:
    positional = [place for place, fields, kw_only in _dataclasses(_modules() + APP) if fields > 3 and not kw_only]
    assert not positional


def _strings(path: Path) -> set[str]:
    return {n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant) and n.value}


def test_no_page_ui_or_command_names_a_job_by_a_string() -> None:
    """Pages, ui/ and the command line call handles (core.jobs.BENCH, ...): mypy checks every call."""
    names = set(JOBS.names())
    for path in [*APP, *sorted((CORE / "cli").glob("*.py"))]:
        named = _strings(path) & names
        assert not named, f"{path.relative_to(ROOT)} names job(s) {sorted(named)} by a string"
        assert "JobSpec" not in path.read_text(), f"{path.relative_to(ROOT)} builds a JobSpec instead of a request"


def test_onnx_protos_are_typed_as_such() -> None:
    """A parameter that holds a ModelProto, GraphProto, NodeProto... says so (onnx's classes, imported under
    TYPE_CHECKING), never Any."""
    untyped = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for arg in node.args.args + node.args.kwonlyargs:
                    if arg.arg in PROTO_NAMES and arg.annotation is not None and ast.unparse(arg.annotation) == "Any":
                        untyped.append(f"{path.relative_to(ROOT)}:{node.name}({arg.arg})")
    assert not untyped


def test_every_page_is_in_the_table_of_pages_and_links_through_it() -> None:
    from ui.pages import PAGES

    scripts = {str(p.relative_to(ROOT)) for p in sorted((ROOT / "app_pages").glob("*.py"))}
    assert {p.path for p in PAGES} == scripts
    assert len({p.step for p in PAGES}) == len(PAGES)
    for path in APP:
        if path.name != "pages.py":
            assert "app_pages/" not in path.read_text(), f"{path.relative_to(ROOT)} links a page by its path"


def test_every_download_button_leaves_the_page_as_it_is() -> None:
    """A download button that reruns the page on its click races the rerun: a deferred file's callable is
    registered again under a new id while the browser asks for the old one, and on a busy server the download
    never comes. Each passes on_click="ignore": the browser downloads, and nothing runs."""
    rerunning = []
    for path in APP:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "download_button":
                ignore = [k for k in node.keywords if k.arg == "on_click"]
                if not ignore or not (isinstance(ignore[0].value, ast.Constant) and ignore[0].value.value == "ignore"):
                    rerunning.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not rerunning, rerunning


def test_the_job_handles_are_listed_once_in_the_job_table() -> None:
    """core.jobs offers the table's handles without naming them again: a new job is one line in the registry."""
    import core.jobs

    handles = {name for name, value in vars(registry).items() if isinstance(value, registry.Job)}
    source = (CORE / "jobs" / "__init__.py").read_text()
    named = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)} | _strings(
        CORE / "jobs" / "__init__.py"
    )
    assert len(handles) == len(JOBS.names()) and not handles & named
    assert set(registry.__all__) <= set(core.jobs.__all__)
    assert all(getattr(core.jobs, name) is getattr(registry, name) for name in handles)


def test_settings_stand_below_every_feature_and_the_zoo() -> None:
    """Every part of core reads its settings: core.settings itself reads nothing above it (the zoo checks the start
    sample where the app reads them, ui.session.settings)."""
    assert _core_imports(CORE / "settings.py") <= BASICS - {"settings"}


def _imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at module level or inside a function (``from ui import x`` as ``ui.x``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


@pytest.mark.parametrize("shared", ["jobs.py", "pages.py"])
def test_the_shared_ui_imports_no_features_view_and_calls_its_hooks_instead(shared: str) -> None:
    """What cuts across pages (a room's pages, its board, the upgrade offer) registers itself in ui/hooks.py when
    its view is imported; the helpers every page uses never import a feature's view."""
    views = {m for m in _imported_modules(ROOT / "ui" / shared) if m.rsplit(".", 1)[-1].endswith("_view")}
    assert not views, f"ui/{shared} imports {sorted(views)}"


def _compared_with(path: Path, values: set[str]) -> list[str]:
    """Where ``path`` compares something with one of ``values`` (==, !=, in, not in), as path:line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            constants = {n.value for side in sides for n in ast.walk(side) if isinstance(n, ast.Constant)}
            if constants & values:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_a_language_is_one_row_of_the_table_and_no_code_asks_which_language_it_speaks() -> None:
    """core.i18n.LANGUAGES holds what differs between languages (own name, Babel's locale, the html lang tag, a
    chart's fonts): nothing outside core/i18n.py compares a language's code ("zh") to decide something."""
    from core.i18n import LANGUAGES

    codes = set(LANGUAGES)
    places = [p for p in [*_modules(), *APP] if p != CORE / "i18n.py"]
    assert not [where for p in places for where in _compared_with(p, codes)]
    assert all(row.code == code and row.name and row.babel and row.html for code, row in LANGUAGES.items())


def test_no_run_is_told_apart_by_a_kind_in_its_settings() -> None:
    """A run's kind is its record's type (core.runtime.runs: a tagged union), never a ``settings["kind"]`` string.
    Only the history's one reader of what earlier versions wrote (core/store/kinds.py) and the migration that moved
    the kind into its column read that entry."""
    import re

    entry = re.compile(r"""settings\s*(\[|\.get\(|\.pop\(|\.setdefault\()\s*["']kind["']|["']kind["']\s*:\s*KIND\b""")
    earlier = {CORE / "store" / "kinds.py", CORE / "store" / "migrations" / "versions" / "v5_run_kinds.py"}
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in [*_modules(), *APP]
        if path not in earlier
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if entry.search(line)
    ]
    assert not found


def _classes_named(name: str) -> list[str]:
    """Where a class called ``name`` is defined, in core, ui and the pages."""
    return [
        str(path.relative_to(ROOT))
        for path in [*_modules(), *APP]
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and node.name == name
    ]


def test_a_session_configuration_is_one_class_below_the_features_that_use_it() -> None:
    """Tune chooses a SessionConfig, Deploy serves it and the load test opens it: one class in core/runtime, and no
    feature keeps a copy of its keys and defaults (core/deploy had a dict-based twin with its own checks)."""
    from core.runtime.session_config import SessionConfig

    assert _classes_named("SessionConfig") == ["core/runtime/session_config.py"]
    keys = {f.name for f in dataclasses.fields(SessionConfig)}
    copies = []
    for path in sorted((CORE / "deploy").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if "DEFAULTS" in {ast.unparse(t) for t in targets}:
                    copies.append(f"{path.relative_to(ROOT)}:{node.lineno} DEFAULTS")
            if isinstance(node, ast.Dict):
                named = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
                if len(named & keys) >= 3:
                    copies.append(f"{path.relative_to(ROOT)}:{node.lineno} a dict of session keys")
    assert not copies


def _kind_compared_with(path: Path, names: set[str]) -> list[str]:
    """Where ``path`` compares a kind, a plan's values or a key (``kind == "uniform"``, ``key == "nnapi"``) with one
    of ``names``, as path:line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        asked = {s.id if isinstance(s, ast.Name) else s.attr for s in sides if isinstance(s, (ast.Name, ast.Attribute))}
        constants = {n.value for side in sides for n in ast.walk(side) if isinstance(n, ast.Constant)}
        if asked & {"kind", "values", "key"} and constants & names:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_a_simulated_provider_is_a_row_of_its_table_and_nothing_branches_on_its_name() -> None:
    """Which providers Partition simulates is core/partition/simulations.py's table: a new simulation is one row
    (its key, the provider, its rule for the ops it takes), and no module asks ``key == "nnapi"``."""
    from core.partition.simulations import SIMULATED

    places = [p for p in [*_modules(), *APP] if p != CORE / "partition" / "simulations.py"]
    assert not [where for p in places for where in _kind_compared_with(p, set(SIMULATED))]
    assert all(row.key == key and callable(row.takes) for key, row in SIMULATED.items())


def test_a_value_kind_is_a_row_of_its_table_and_nothing_branches_on_its_name() -> None:
    """How an input's values are made is core/model/values.py's table: a new kind is one row (how to make the
    values, describe them, write them in a notebook, its words and its --value word), and no module asks
    ``kind == "uniform"`` to decide what to do (ui just translates the row's words)."""
    from core.model.values import VALUE_KINDS

    places = [p for p in [*_modules(), *APP] if p != CORE / "model" / "values.py"]
    assert not [where for p in places for where in _kind_compared_with(p, set(VALUE_KINDS))]
    assert all(row.name == name and row.label and row.notebook for name, row in VALUE_KINDS.items())


def test_an_export_is_described_by_one_options_class_below_export_and_the_notebook() -> None:
    """The Export page, the command line and a notebook's export cell write the same torch.onnx.export call from one
    ExportOptions in core/model, with its defaults (the notebook had a copy, ExportChoice, with its own)."""
    assert _classes_named("ExportOptions") == ["core/model/export_options.py"]
    assert not _classes_named("ExportChoice")


def test_a_pages_title_is_written_once_below_the_pages_and_the_notebook() -> None:
    """ui/pages.py's rows and the notebook's headings read one table of titles, core.page_titles (the notebook had
    its own copy of seven): no other table maps the pages' steps to marked titles."""
    from core.notebook import STEPS
    from core.page_titles import PAGE_TITLES
    from ui.pages import PAGES

    assert list(PAGE_TITLES) == [p.step for p in PAGES]
    assert all(p.title == PAGE_TITLES[p.step] for p in PAGES) and all(STEPS[s] == PAGE_TITLES[s] for s in STEPS)
    titles = {f"N_({title!r})" for title in PAGE_TITLES.values()}  # as ast.unparse writes a marked title
    copies = []
    for path in [*_modules(), *APP]:
        if path == CORE / "page_titles.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                marked = [v for v in node.values if isinstance(v, ast.Call) and ast.unparse(v.func) == "N_"]
                if len(keys & set(PAGE_TITLES)) >= 3 and marked:
                    copies.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.keyword) and node.arg == "title" and ast.unparse(node.value) in titles:
                copies.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not copies


# where the server may use a regular expression, and on what: each on text of a bounded size, never a note
_SERVER_PATTERNS = {"ui/text.py": "escaping Markdown, one character class", "ui/upload_spool.py": "a session id"}


def test_notes_cross_as_data_and_nothing_parses_a_sentence_back() -> None:
    """A note is a template key and its values (core/notes.py), said in the reader's language at the edge: no
    module turns templates into patterns to find a sentence's values again (that matching was quadratic on a
    model's text and froze a hosted server), the pages and ui use no regular expression but the two listed, and
    no severity is read from a sentence's first word."""
    assert not (CORE / "recorded.py").exists()
    for path in [*_modules(), *APP]:
        text = path.read_text()
        where = path.relative_to(ROOT).as_posix()
        assert "core.recorded" not in text, where
        assert "Formatter().parse" not in text and "_FORMATTER" not in text, where
        assert not any(f"{n}.startswith(" in text for n in ("note", "headline", "said")), where
        if path in APP and ("import re\n" in text or "from re import" in text):
            assert where in _SERVER_PATTERNS, f"{where} uses regular expressions in the server"


# record fields core still fills with a sentence it translated (issue 47): each said why, to be made notes in turn
_SENTENCES_LEFT = {
    # a variant's or a candidate's error: ONNX Runtime's message, for one reader, as an exception carries it
    "core/quantize/lm.py .error": "an error",
    "core/quantize/quantizer.py .error": "an error",
    "core/tune/sessions.py .error": "an error",
    "core/tune/tuner.py .error": "an error",
    # a variant's name, translated where it is made
    "core/quantize/lm.py LMVariant.label": "a name",
    "core/quantize/quantizer.py Variant.label": "a name",
    # kept in English on purpose for the command line's JSON; the page writes it anew (core.partition.words)
    "core/partition/partitioner.py .summary": "English, written again at the edge",
}


def test_no_record_of_core_holds_a_sentence_core_translated() -> None:
    """Core records a note (a key and its values) where it would write a sentence: no record of core (a
    dataclass) gets, for a field typed ``str``, a value core made with ``_``, ``ngettext`` or ``pgettext`` — the
    translated call itself, its ``.format``, an f-string, a join or a list of them, a local name bound to one, or
    what a function or method of core returns that is made so (followed through imports, to a fixed point),
    given to the record's constructor, to ``dataclasses.replace`` or assigned to its attribute
    (tests/house_sentences.py). A field typed ``Note | str`` is a note's: the ``str`` reads a sentence an earlier
    version kept. The places left (``_SENTENCES_LEFT``) are listed with why, and shrink; none may be added."""
    from tests.house_sentences import sentences_in_records

    found = set(sentences_in_records(ROOT))
    assert found - set(_SENTENCES_LEFT) == set(), "a record of core is given a translated sentence: use a note"
    assert set(_SENTENCES_LEFT) - found == set(), "a place left is mended: take it off _SENTENCES_LEFT"


def test_the_sentence_check_finds_a_sentence_however_it_reaches_a_record(tmp_path: Path) -> None:
    """The check above, on a made-up core: a sentence given directly, through a name, a list it was appended to, a
    helper, a method, ``dataclasses.replace`` and an attribute is found; a note, a key and an error are not."""
    from tests.house_sentences import PLANTED, PLANTED_FOUND, sentences_in_records

    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "made.py").write_text(PLANTED)
    assert set(sentences_in_records(tmp_path)) == PLANTED_FOUND


def test_an_uploaded_files_bytes_are_read_only_through_ui_uploads() -> None:
    """The server writes an upload to disk and Streamlit's record of it holds no bytes (ui/upload_spool.py): a page
    that reads an UploadedFile's ``getvalue()`` or ``getbuffer()`` gets nothing (and where Streamlit does hold the
    bytes, ``getbuffer()`` copies them on every run: a 1.34 GB model took the server to 5 GB). ui/uploads.py alone
    reads them: ``save``, ``read_bytes``, ``size_of``."""
    import re

    reads = re.compile(r"\.(getvalue|getbuffer)\(\)")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in APP
        if path != ROOT / "ui" / "uploads.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if reads.search(line)
    ]
    assert not found
