# Sourced by scripts/demo, scripts/test and scripts/bench: make .venv and install into it.
# Re-installs only when pyproject.toml changes, so repeated runs start at once.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "scripts: creating .venv with $($python --version)" >&2
    "$python" -m venv .venv
fi
stamp=".venv/.installed-$(sha1sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
    echo "scripts: installing sessionary and its dev tools into .venv" >&2
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet --editable . --group dev
    rm -f .venv/.installed-*
    touch "$stamp"
fi
