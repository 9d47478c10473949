"""The translation catalogs against the code (docs/i18n.md): every string the code marks is translated, nothing is
left over, nothing is fuzzy, both sides have the same placeholders, and every catalog compiles. And the code holds
no translations of its own: they live in the catalogs only."""

from __future__ import annotations

import ast
import io
import re
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from core import i18n

ROOT = Path(__file__).resolve().parents[2]
TRANSLATED = [code for code in i18n.LANGUAGES if code != i18n.DEFAULT]
PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}|%(?:\([A-Za-z_]+\))?[sdrf]")
Key = tuple[str | None, str]  # (context, msgid)


@pytest.fixture(scope="module")
def marked() -> dict[Key, str | None]:
    """What the code marks, as `make messages` extracts it: (context, msgid) → its plural form, if any."""
    with (ROOT / "babel.cfg").open() as f:
        method_map, options_map = parse_mapping_cfg(f)
    found: dict[Key, str | None] = {}
    for _file, _line, message, _comments, context in extract_from_dir(
        str(ROOT), method_map, options_map, keywords=DEFAULT_KEYWORDS
    ):
        singular, plural = (message[0], message[1]) if isinstance(message, tuple) else (message, None)
        found[(context, singular)] = plural
    assert len(found) > 100, "the extraction found almost nothing: is babel.cfg still right?"
    return found


def _catalog(code: str) -> Catalog:
    with (i18n.LOCALE_DIR / code / "LC_MESSAGES" / "messages.po").open("rb") as f:
        return read_po(f, locale=code)


def _entries(catalog: Catalog) -> dict[Key, object]:
    return {(m.context, m.id[0] if isinstance(m.id, tuple) else m.id): m for m in catalog if m.id}


@pytest.mark.parametrize("code", TRANSLATED)
def test_every_string_the_code_marks_is_in_the_catalog_and_nothing_else_is(
    code: str, marked: dict[Key, str | None]
) -> None:
    entries = _entries(_catalog(code))
    missing = sorted(str(k) for k in marked.keys() - entries.keys())
    unused = sorted(str(k) for k in entries.keys() - marked.keys())
    assert not missing, f"not in locale/{code}: {missing}; run `make messages`, then translate them"
    assert not unused, f"in locale/{code} but no longer in the code: {unused}; run `make messages`"
    assert not _catalog(code).obsolete, "obsolete (#~) entries: run `make messages`, which drops them"
    for key, plural in marked.items():
        message = entries[key]
        assert (message.id[1] if isinstance(message.id, tuple) else None) == plural, f"{key}: its plural changed"


@pytest.mark.parametrize("code", TRANSLATED)
def test_every_entry_is_translated_not_fuzzy_with_the_same_placeholders(code: str) -> None:
    for message in _catalog(code):
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        assert not message.fuzzy, f"fuzzy: {ids[0]!r}"
        assert all(strings), f"not translated: {ids[0]!r}"
        wanted = sorted(PLACEHOLDER.findall(ids[-1]))
        for string in strings:
            assert sorted(PLACEHOLDER.findall(string)) == wanted, f"placeholders differ: {ids[0]!r} → {string!r}"


@pytest.mark.parametrize("code", TRANSLATED)
def test_every_catalog_compiles_and_the_app_reads_it(code: str) -> None:
    catalog = _catalog(code)
    problems = [(m.id, errors) for m, errors in catalog.check()]
    assert not problems, problems
    write_mo(io.BytesIO(), catalog)
    assert catalog.plural_forms == "nplurals=1; plural=0;"  # Chinese: one form for every count
    with i18n.using(code):
        assert i18n._("Model") != "Model"
        one, many = (i18n.ngettext("{count} model", "{count} models", n) for n in (1, 3))
        assert one == many


def test_english_is_the_code_itself_with_two_plural_forms_and_english_numbers() -> None:
    with i18n.using("en"):
        assert i18n._("Model") == "Model"
        assert i18n.ngettext("{count} model", "{count} models", 1) == "{count} model"
        assert i18n.ngettext("{count} model", "{count} models", 2) == "{count} models"
        assert i18n.number(1234567.25, 1) == "1,234,567.2"
    with i18n.using("zh"):
        assert i18n.number(1234567) == "1,234,567"


def test_an_english_whole_number_is_written_as_babel_writes_it_without_its_locale_data() -> None:
    """A command's fixed cost (issue #51): English counts skip Babel's locale data, and read the same."""
    from babel.numbers import format_decimal

    values = [0, 7, -7, 999, 1000, -1000, 256_074, 1_234_567, 10**15, -(10**12) + 7]
    with i18n.using("en"):
        assert [i18n.number(v) for v in values] == [format_decimal(v, locale="en") for v in values]
        assert [i18n.number(v, 0) for v in values] == [format_decimal(v, "#,##0", locale="en") for v in values]
        assert i18n.number(2.675, 2) == "2.68" and i18n.number(1.0) == "1"  # a float still goes to Babel


def test_a_browser_locale_picks_its_language_and_anything_else_is_english() -> None:
    assert [i18n.from_locale(t) for t in ("zh-CN", "zh-TW", "zh", "ZH_hans", "en-GB", "fr-FR", "", None)] == [
        *["zh"] * 4,
        *["en"] * 4,
    ]


def _strings(path: Path) -> list[tuple[int, str]]:
    """The string literals of ``path`` that the program uses (its docstrings, which only document, left out)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_the_code_holds_no_translations_of_its_own() -> None:
    """Chinese words belong in locale/, never in dictionaries in the code (the language picker's "中文" excepted)."""
    han = re.compile(r"[\u4e00-\u9fff]")
    sources = [*(ROOT / "core").rglob("*.py"), *(ROOT / "ui").glob("*.py"), *(ROOT / "app_pages").glob("*.py")]
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text[:40]!r}"
        for path in [*sources, ROOT / "streamlit_app.py"]
        for line, text in _strings(path)
        if han.search(text) and text != i18n.LANGUAGES["zh"].name
    ]
    assert not found, found


def test_a_catalog_is_compiled_once_and_kept_for_the_next_process_until_its_text_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Babel's parse of the Chinese catalog took 0.1 s of every process in that language (a command, each job's
    worker); the first one keeps the compiled catalog beside the .po, keyed by its text, and a later process reads
    it without Babel. A changed .po is compiled anew and the stale file goes; a folder that cannot be written (a
    worker's read-only view) is compiled in memory, as before."""
    import subprocess
    import sys

    folder = tmp_path / "locale" / "zh" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    po = folder / "messages.po"
    po.write_bytes((i18n.LOCALE_DIR / "zh" / "LC_MESSAGES" / "messages.po").read_bytes())
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path / "locale")
    i18n.translations.cache_clear()
    try:
        first = i18n.translations("zh").gettext("Model")
        kept = list(folder.glob("messages.*.mo"))
        assert first != "Model" and len(kept) == 1
        script = (
            "import sys; from pathlib import Path; from core import i18n; "
            f"i18n.LOCALE_DIR = Path({str(tmp_path / 'locale')!r}); "
            "said = i18n.translations('zh').gettext('Model'); "
            "print(said == sys.argv[1], 'babel.messages.pofile' in sys.modules)"
        )
        done = subprocess.run([sys.executable, "-c", script, first], capture_output=True, text=True, cwd=ROOT)
        assert done.stdout.split() == ["True", "False"], done.stdout + done.stderr  # read, not parsed again

        po.write_text(po.read_text(encoding="utf-8").replace(f'msgstr "{first}"', 'msgstr "模型甲"', 1), "utf-8")
        i18n.translations.cache_clear()
        assert i18n.translations("zh").gettext("Model") == "模型甲"
        assert [p.name for p in folder.glob("messages.*.mo")] != [k.name for k in kept]
        assert len(list(folder.glob("messages.*.mo"))) == 1 and not list(folder.glob(".messages*"))

        def refused(self: Path, data: bytes) -> int:
            raise PermissionError("a read-only view")

        monkeypatch.setattr(Path, "write_bytes", refused)
        for mo in folder.glob("messages.*.mo"):
            mo.unlink()
        i18n.translations.cache_clear()
        assert i18n.translations("zh").gettext("Model") == "模型甲"  # compiled in memory
        assert not list(folder.glob("*.mo")) and not list(folder.glob(".messages*"))
    finally:
        i18n.translations.cache_clear()


@pytest.mark.parametrize("damage", ["cut short", "garbage", "empty"])
def test_a_kept_catalog_that_is_cut_short_or_garbled_is_compiled_again_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    """A kept .mo that is not whole (a disk that filled, a copy cut short, two threads of one server compiling at
    once) made gettext raise in every process of that language, each page and job's worker: it is compiled again
    from the .po, and the kept file mended."""
    folder = tmp_path / "locale" / "zh" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    (folder / "messages.po").write_bytes((i18n.LOCALE_DIR / "zh" / "LC_MESSAGES" / "messages.po").read_bytes())
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path / "locale")
    i18n.translations.cache_clear()
    try:
        said = i18n.translations("zh").gettext("Model")
        (kept,) = folder.glob("messages.*.mo")
        whole = kept.read_bytes()
        kept.write_bytes(
            {"cut short": whole[: len(whole) * 2 // 3], "garbage": b"\x00garbage" * 64, "empty": b""}[damage]
        )
        i18n.translations.cache_clear()
        assert i18n.translations("zh").gettext("Model") == said != "Model"
        assert kept.read_bytes() == whole
    finally:
        i18n.translations.cache_clear()
