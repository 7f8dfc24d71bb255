"""The ``toolnexus`` command line. Only this package imports typer and rich."""
