"""Admin for task sets and tasks (curation)."""
