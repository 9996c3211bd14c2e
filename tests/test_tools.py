"""make test names what it needs beyond Python in one line, before running anything."""

from __future__ import annotations

import pytest

from deploy import tools


def test_what_make_test_needs_is_named_with_how_to_install_it(monkeypatch):
    assert tools.missing() == [], "this machine has nginx, chromium, kubectl and promtool"
    monkeypatch.setattr(tools, "CHROMIUM_PATHS", ())
    monkeypatch.setattr(tools, "nginx_executable", lambda: None)
    with pytest.raises(SystemExit) as stopped:
        tools.main()
    assert str(stopped.value) == (
        "make test needs nginx (apt-get install nginx-light), chromium (apt-get install chromium); "
        "install them and run it again"
    )
