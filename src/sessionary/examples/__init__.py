"""Runnable examples: `sessionary examples` lists them; run one with `python -m`.

Run `python -m sessionary.examples.NAME`; each works in the current directory and prints
the same whenever it runs.
"""
