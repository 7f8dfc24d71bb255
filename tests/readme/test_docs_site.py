"""The documentation site (issue 46): its generated reference agrees with the program, each
thing is said on one page, and a broken example in any page fails the suite.

The generators are the MkDocs hook's own functions (``docs/hooks/reference.py``), called here
without a build: "The CLI reference generator is tested against ``--help`` for every command (a
function test, not a full build)". ``make docs`` builds the site itself.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from paths import REPO, doc_files

HOOKS = REPO / "docs" / "hooks"
sys.path.insert(0, str(HOOKS))
try:
    import reference  # docs/hooks/reference.py: the site's generators
finally:
    sys.path.remove(str(HOOKS))


def _commands() -> list[pytest.ParameterSet]:
    return [
        pytest.param(path, command, id=" ".join(path))
        for path, command in reference.walk_commands(reference.cli_root())
    ]


def _help(path: tuple[str, ...]) -> str:
    from typer.testing import CliRunner

    from toolnexus.cli.app import get_app

    ran = CliRunner().invoke(get_app(), [*path[1:], "--help"], terminal_width=400)
    assert ran.exit_code == 0, ran.output
    return ran.output


def _help_flags(text: str) -> set[str]:
    """The flags of the help's option rows (its first column), without click's ``--help``."""
    flags: set[str] = set()
    section = ""
    for line in text.splitlines():
        if re.match(r"^[A-Z][a-z]+:$", line):
            section = line
        elif section == "Options:" and line.startswith("  -"):
            first = re.split(r"\s{2,}", line.strip())[0]
            flags |= set(re.findall(r"(?<![\w<])(--?[A-Za-z][\w-]*)", first))
    return flags - {"--help"}


@functools.cache
def _cli_markdown() -> str:
    return reference.cli_markdown()


def _section(path: tuple[str, ...]) -> str:
    text = _cli_markdown()
    start = text.index(f"## `{' '.join(path)}`")
    end = text.find("\n## `", start + 1)
    return text[start : end if end > 0 else None]


@pytest.mark.parametrize("path, command", _commands())
def test_the_cli_reference_shows_what_help_shows(path: tuple[str, ...], command: Any) -> None:
    """Issue 46: every CLI command and option, generated from ``typer.main.get_command(app)``:
    the page's section of each command has its usage line, its arguments and exactly the options
    its ``--help`` lists."""
    shown = _help(path)
    section = _section(path)
    usage = shown.splitlines()[0].removeprefix("Usage: ")
    assert f"```text\n{usage}\n```" in section
    rows = [line for line in section.splitlines() if line.startswith("| `-")]
    documented = {flag for row in rows for flag in re.findall(r"`(--?[\w-]+)`", row.split("|")[1])}
    assert documented == _help_flags(shown)
    if "\nArguments:\n" in shown:
        names = re.findall(r"^  (\S+)  ", shown.split("\nArguments:\n")[1].split("\n\n")[0], re.M)
        for name in names:
            assert f"| `{name}` |" in section, name
    if "\nCommands:\n" in shown:
        for name in re.findall(r"^  ([\w-]+)  ", shown.split("\nCommands:\n")[1], re.M):
            assert f"## `{' '.join((*path, name))}`" in _cli_markdown(), name


def test_every_environment_variable_of_an_option_is_listed() -> None:
    page = reference.environment_markdown()
    for _, command in reference.walk_commands(reference.cli_root()):
        for param in command.params:
            names = [param.envvar] if isinstance(param.envvar, str) else param.envvar or []
            for env in names:
                assert f"| `{env}` |" in page, env


def test_the_records_page_names_every_record_field() -> None:
    import dataclasses

    from toolnexus.records.model import DecisionRecord, ErrorRecord

    page = reference.records_markdown()
    for cls in (DecisionRecord, ErrorRecord):
        for field in dataclasses.fields(cls):
            assert f"| `{field.name}` |" in page, field.name


def test_every_marker_names_a_generator_and_every_generator_is_used() -> None:
    used = set()
    for page in doc_files():
        for name in reference.MARKER.findall(page.read_text(encoding="utf-8")):
            assert name in reference.GENERATORS, f"{page}: no generator {name!r}"
            used.add(name)
    assert used == set(reference.GENERATORS)


def _nav_pages(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from _nav_pages(item)
    elif isinstance(node, dict):
        for value in node.values():
            yield from _nav_pages(value)


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    """mkdocs --strict warns of an orphan page (validation.omitted_files); this says which."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = set(_nav_pages(config["nav"]))
    docs = REPO / "docs"
    pages = {p.relative_to(docs).as_posix() for p in docs.rglob("*.md")}
    assert nav == pages


def _paragraphs(text: str) -> Iterator[str]:
    """Prose paragraphs (code blocks left out), whitespace folded."""
    text = re.sub(r"^( *)```.*?^\1```", "", text, flags=re.M | re.S)
    for para in re.split(r"\n\s*\n", text):
        folded = " ".join(para.split())
        if len(folded) >= 200:
            yield folded


def duplicated_paragraphs(files: list[Path]) -> list[str]:
    seen: dict[str, str] = {}
    twice = []
    for path in files:
        for para in _paragraphs(path.read_text(encoding="utf-8")):
            if para in seen and seen[para] != path.name + str(path.parent):
                twice.append(f"{seen[para]} and {path}: {para[:80]}...")
            seen.setdefault(para, path.name + str(path.parent))
    return twice


def test_no_paragraph_of_200_characters_is_on_two_pages() -> None:
    """Issue 46 item 5: "a test fails when a paragraph of 200 characters or more appears in two
    pages (README included)"."""
    assert duplicated_paragraphs(doc_files()) == []


def test_a_paragraph_copied_to_a_second_page_is_found(tmp_path: Path) -> None:
    para = "A paragraph long enough to count. " * 8
    (tmp_path / "a.md").write_text(f"# A\n\n{para}\n", encoding="utf-8")
    (tmp_path / "b.md").write_text(f"# B\n\n{para}\n\n```sh\n{para}\n```\n", encoding="utf-8")
    assert len(duplicated_paragraphs([tmp_path / "a.md", tmp_path / "b.md"])) == 1


def test_the_readme_is_one_screen() -> None:
    """Issue 46 item 1: README <= 150 lines."""
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 150


def test_a_broken_code_block_in_a_page_fails_the_runner(tmp_path: Path) -> None:
    """Acceptance: "A deliberately broken code block in a page fails make test": a page the
    runner was never told about is found, and its broken block fails the check that runs it."""
    from readme import test_readme_examples as runner

    page = tmp_path / "docs" / "how-to" / "new.md"
    page.parent.mkdir(parents=True)
    page.write_text("# New\n\n```python\nraise SystemExit('broken')\n```\n", encoding="utf-8")
    (tmp_path / "README.md").write_text("# R\n", encoding="utf-8")
    (block,) = runner.readme_blocks(tmp_path)
    assert block.where == "docs/how-to/new.md:3"
    with pytest.raises(AssertionError, match=re.escape("docs/how-to/new.md:3 exited 1")):
        runner.check_python(block.where, block.text, tmp_path, {"PATH": ""})


def test_the_exit_codes_page_maps_every_record_code_to_its_exit_code() -> None:
    from toolnexus.core.failures import EXIT_FOR_CODE

    page = reference.exit_codes_markdown()
    for code, exit_code in EXIT_FOR_CODE.items():
        assert re.search(rf"^\| `{code}` \| [^|]+ \| `{exit_code}` \|$", page, re.M), code


def test_the_site_builds_strictly_and_fetches_nothing() -> None:
    """Issue 46 item 3: ``--strict`` with the three link checks at ``warn`` (so an orphan page or
    a broken link fails), ``theme.font: false`` and no plugin that fetches at build time."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["strict"] is True
    for check in ("omitted_files", "absolute_links", "unrecognized_links", "anchors"):
        assert config["validation"][check] == "warn", check
    assert config["theme"]["font"] is False
    plugins = {p if isinstance(p, str) else next(iter(p)) for p in config["plugins"]}
    assert plugins <= {"search", "mkdocstrings"}, plugins
    assert "mkdocs build --strict" in (REPO / "Makefile").read_text(encoding="utf-8")


def test_every_link_of_the_readme_and_contributing_names_a_file() -> None:
    """The README links into the site (issue 46 item 1); MkDocs checks the site's own links, not
    these."""
    for page in (REPO / "README.md", REPO / "CONTRIBUTING.md"):
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if not target.startswith(("http://", "https://")):
                assert (page.parent / target).exists(), f"{page.name}: {target}"
