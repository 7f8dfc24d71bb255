"""``python -m toolnexus`` runs the CLI."""

from .cli.app import main

main()
