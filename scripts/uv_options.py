"""The options that make ``uv pip install`` fetch from where ``pip install`` would on this machine.

The set-up step installs the suite's Python environment with uv (about 14 s on a fresh 2-core
machine where pip took 64 s: it fetches, unpacks and links in parallel), but a machine's package
sources are written in pip's configuration (``pip.conf``, ``PIP_*``), which uv does not read. This
reads them through ``pip config list`` and prints one uv option per line, for the shell:

    mapfile -t opts < <(python scripts/uv_options.py) && uv pip install "${opts[@]}" ...

pip considers every index's versions together, so uv is told to as well
(``--index-strategy unsafe-best-match``); uv's own default takes a package from the first index
that has it, which here is an extra index holding only an old release. Standard library only.
"""

from __future__ import annotations

import ast
import subprocess
import sys

OPTION_OF = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}
"""pip's configuration keys (in any section: ``global``, ``install``, ``:env:``) and uv's options."""
SEPARATE_VALUES = {"extra-index-url", "find-links", "constraint"}
"""Keys whose value may hold several, separated by white space."""
SECTION_PRECEDENCE = {"global": 0, "install": 1, ":env:": 2}
"""pip reads ``global``, then ``install``, then the environment: a later one wins."""


def pip_configuration(python: str = sys.executable) -> dict[str, str]:
    """``pip config list`` of ``python``'s pip, as key -> value with the winning section's value."""
    listed = subprocess.run(
        [python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    ).stdout
    chosen: dict[str, tuple[int, str]] = {}
    for line in listed.splitlines():
        name, _, quoted = line.partition("=")
        section, _, key = name.rpartition(".")
        if key not in OPTION_OF or not quoted:
            continue
        try:
            value = str(ast.literal_eval(quoted))
        except (SyntaxError, ValueError):
            continue
        rank = SECTION_PRECEDENCE.get(section, 0)
        if key not in chosen or rank >= chosen[key][0]:
            chosen[key] = (rank, value)
    return {key: value for key, (_, value) in chosen.items()}


def uv_options(configuration: dict[str, str]) -> list[str]:
    """uv's options for pip's ``configuration`` (see :func:`pip_configuration`)."""
    options = ["--index-strategy", "unsafe-best-match"]
    for key, option in OPTION_OF.items():
        value = configuration.get(key, "")
        for one in value.split() if key in SEPARATE_VALUES else [value.strip()]:
            if one:
                options += [option, one]
    return options


def main() -> int:
    print("\n".join(uv_options(pip_configuration())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
