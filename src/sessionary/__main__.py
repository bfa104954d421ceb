"""Run the command line: `python -m sessionary ...` is the same as `sessionary ...`."""

from sessionary.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
