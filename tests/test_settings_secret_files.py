"""Secrets read from files (a Kubernetes Secret mounted as files), not only from the environment."""

from __future__ import annotations

import pytest

from services.runtime.settings import GatewaySettings, ServiceSettings, SettingsError, secret
from services.workers.settings import WebhookSettings, WorkerSettings


def test_a_secret_comes_from_the_file_its_file_variable_names(tmp_path, monkeypatch):
    (tmp_path / "token").write_text("file-secret-0123456789\n")
    (tmp_path / "password").write_text("pw from a file")
    (tmp_path / "hook").write_text("hook-secret-0123456789")
    monkeypatch.delenv("MOGAMES_TOKEN_SECRET", raising=False)
    monkeypatch.delenv("MOGAMES_REDIS_PASSWORD", raising=False)
    monkeypatch.setenv("MOGAMES_TOKEN_SECRET_FILE", str(tmp_path / "token"))
    monkeypatch.setenv("MOGAMES_REDIS_PASSWORD_FILE", str(tmp_path / "password"))
    monkeypatch.setenv("MOGAMES_WEBHOOK_SECRET_FILE", str(tmp_path / "hook"))
    monkeypatch.setenv("MOGAMES_WEBHOOK_URL", "https://hooks.example.com/mogames")
    monkeypatch.setenv("MOGAMES_BACKENDS_HAPPY_MOCHI", "127.0.0.1:50061")
    service = ServiceSettings.from_env("happy_mochi")
    assert (service.token_secret, service.redis_password) == (b"file-secret-0123456789", "pw from a file")
    gateway = GatewaySettings.from_env()
    assert (gateway.token_secret, gateway.redis_password) == (b"file-secret-0123456789", "pw from a file")
    assert WorkerSettings.from_env().redis_password == "pw from a file"
    assert WebhookSettings.from_env().secret == b"hook-secret-0123456789"


def test_a_secret_set_twice_or_unreadable_stops_with_its_name(tmp_path, monkeypatch):
    monkeypatch.setenv("MOGAMES_REDIS_PASSWORD", "in the environment")
    monkeypatch.setenv("MOGAMES_REDIS_PASSWORD_FILE", str(tmp_path / "password"))
    with pytest.raises(SettingsError, match="MOGAMES_REDIS_PASSWORD and MOGAMES_REDIS_PASSWORD_FILE"):
        secret("MOGAMES_REDIS_PASSWORD")
    monkeypatch.delenv("MOGAMES_REDIS_PASSWORD")
    with pytest.raises(SettingsError, match="MOGAMES_REDIS_PASSWORD_FILE: cannot read"):
        secret("MOGAMES_REDIS_PASSWORD")
    monkeypatch.delenv("MOGAMES_REDIS_PASSWORD_FILE")
    assert secret("MOGAMES_REDIS_PASSWORD") == ""
    monkeypatch.delenv("MOGAMES_TOKEN_SECRET", raising=False)
    monkeypatch.delenv("MOGAMES_TOKEN_SECRET_FILE", raising=False)
    with pytest.raises(SettingsError, match="MOGAMES_TOKEN_SECRET is required"):
        ServiceSettings.from_env("happy_mochi")
