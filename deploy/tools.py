"""What ``make test`` needs beyond Python and a C compiler, found or named in one line.

The deploy tests run Debian's nginx (the grpc_pass front), kubectl (kustomize) and
promtool (Debian's prometheus package: the alert and recording rules), the browser tests
drive Chromium. ``python -m deploy.tools`` exits 1 with one line naming
what is missing and how to install it, else prints nothing.
"""

from __future__ import annotations

import os
import shutil
import sys

from deploy.nginx import nginx_executable

# Debian's chromium: the binary itself (/usr/bin/chromium is a wrapper script).
CHROMIUM_PATHS = ("/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")


def chromium_executable() -> str | None:
    return next((path for path in CHROMIUM_PATHS if os.access(path, os.X_OK)), None)


def missing() -> list[str]:
    """What is not installed, each with what installs it."""
    absent = []
    if nginx_executable() is None:
        absent.append("nginx (apt-get install nginx-light)")
    if chromium_executable() is None:
        absent.append("chromium (apt-get install chromium)")
    if shutil.which("kubectl") is None:
        absent.append("kubectl (https://kubernetes.io/docs/tasks/tools/)")
    if shutil.which("promtool") is None:
        absent.append("promtool (apt-get install --no-install-recommends prometheus)")
    return absent


def main() -> None:
    absent = missing()
    if absent:
        sys.exit(f"make test needs {', '.join(absent)}; install them and run it again")


if __name__ == "__main__":
    main()
