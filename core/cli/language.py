"""The language a command speaks: ``--lang``, else the environment's locale; English for ``--json``.

Apart from core.cli.common, so that ``python -m core`` reads its arguments without importing the job machinery and
the model records (a command that starts its worker first, as inspect does, starts it sooner).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping

from core.i18n import DEFAULT, LANGUAGES, from_locale

__all__ = ["add_language_argument", "choose_language", "environment_language"]


def add_language_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lang",
        choices=sorted(LANGUAGES),
        default=None,
        help="the language of what the commands print (en or zh; default: from LC_ALL, LC_MESSAGES, LANG or "
        "LANGUAGE, else English); --json output is English whatever the language",
    )


def environment_language(environ: Mapping[str, str] | None = None) -> str:
    """The language the environment asks for: the first of LC_ALL, LC_MESSAGES, LANG and LANGUAGE that is set
    (LANGUAGE's first entry, "zh_CN:en"); zh_* is Chinese, anything else English."""
    env = os.environ if environ is None else environ
    for name in ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"):
        value = env.get(name, "").split(":")[0].split(".")[0]
        if value:
            return from_locale(value)
    return DEFAULT


def choose_language(args: argparse.Namespace) -> str:
    """The language a command speaks: --lang, else the environment's; English for --json (its output is read by
    programs, and its text fields stay the same whatever the reader's locale)."""
    if getattr(args, "json", False):
        return DEFAULT
    return str(getattr(args, "lang", None) or environment_language())
