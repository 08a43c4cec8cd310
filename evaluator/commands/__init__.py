"""One module per ``python -m evaluator`` subcommand; see :mod:`evaluator.cli`."""
