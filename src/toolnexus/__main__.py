"""``python -m toolnexus`` runs the CLI."""

from .cli import main

main()
