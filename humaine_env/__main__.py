"""``python -m humaine_env``: the same as the ``humaine-env`` command."""

import sys

from humaine_env.cli import main

sys.exit(main())
