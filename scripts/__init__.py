"""The set-up step's and the corpora's programs, each run as ``python scripts/<name>.py``.

A package so that the programs, the benchmarks and the tests import one another by one name
(``from scripts.fetch_assets import pyfeat_test_data``, ``from scripts import synth_speech``)
instead of putting this folder on ``sys.path``, and so the import contract in ``pyproject.toml``
covers them: they may use every package of the suite, and none of the suite's packages uses
them. Repository tools, not part of the installed wheel.

``platform_services.py`` runs with the system's Python before the environment exists, so it and
this file import nothing outside the standard library.
"""
