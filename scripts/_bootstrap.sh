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
# The web viewer's browser test drives Debian's chromium through its chromedriver (no
# browser download): install them when missing and apt-get can be used (as root).
if { [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; } \
    && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "scripts: installing chromium and chromium-driver for the viewer's browser test" >&2
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver \
            >/dev/null 2>&1; then
        apt-get update -qq >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null \
            || echo "scripts: could not install chromium; the browser test will say so" >&2
    fi
fi
