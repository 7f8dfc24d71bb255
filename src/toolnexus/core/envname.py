"""The environment-variable name rule, written once: ``[A-Za-z_][A-Za-z0-9_]*``.

Used by ``api_key_env`` checks (the library and the CLI) and by ``${NAME}`` expansion in base URLs
and headers (``ENV_REF``). Imports nothing from the package, so the CLI can
import it without loading the library.
"""

from __future__ import annotations

import re

__all__ = ["ENV_NAME", "ENV_NAME_PATTERN", "ENV_REF"]

#: A POSIX-portable variable name: what ``api_key_env`` and ``${NAME}`` accept.
ENV_NAME_PATTERN = r"[A-Za-z_][A-Za-z0-9_]*"
#: The whole string is a variable name (use ``fullmatch``).
ENV_NAME = re.compile(ENV_NAME_PATTERN)
#: A ``${NAME}`` reference; group 1 is the name.
ENV_REF = re.compile(r"\$\{(" + ENV_NAME_PATTERN + r")\}")
