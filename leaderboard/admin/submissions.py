"""Admin for submissions and evaluations (verify, flag, rescore)."""
