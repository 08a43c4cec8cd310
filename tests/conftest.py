"""Shared test configuration: settings come from tests/settings.py (see pyproject.toml)."""
