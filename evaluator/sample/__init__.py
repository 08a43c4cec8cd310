"""The sample benchmark: task scripts for real npm pages, and the builder (see build.py)."""
