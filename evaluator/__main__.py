"""``python -m evaluator``: the evaluator's command line."""

import sys

from evaluator.cli import main

sys.exit(main())
