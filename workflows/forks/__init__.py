"""forks."""
