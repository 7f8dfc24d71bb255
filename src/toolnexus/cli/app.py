"""Placeholder entry point until the CLI issue lands."""

from __future__ import annotations


def main() -> None:
    from .. import __version__

    print(f"toolnexus {__version__}")
