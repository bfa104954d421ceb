"""Benchmarks of sessionary against raw sqlite3 and its peers; not part of the package."""
