"""A process that cannot start says why in one line and exits with code 1: Redis
unreachable (after its wait), a refused password, a port in use, a malformed Redis URL."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from deploy.redis_server import free_port, redis_executable, wait_for_port
from tests.conftest import TOKEN_SECRET

PASSWORD = "right-password"


@pytest.fixture(scope="module")
def password_redis(tmp_path_factory) -> Iterator[int]:
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    config = workdir / "redis.conf"
    config.write_text(f'port {port}\nbind 127.0.0.1\nsave ""\nrequirepass "{PASSWORD}"\ndir "{workdir}"\n')
    process = subprocess.Popen([redis_executable(), str(config)], stdout=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        yield port
    finally:
        process.terminate()
        process.wait(10)


def start(program: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MOGAMES_")}
    args = ["-m", "gateway"] if program == "gateway" else ["-m", "services", program]
    settings = {"MOGAMES_TOKEN_SECRET": TOKEN_SECRET.decode(), "MOGAMES_LOG_LEVEL": "error", **env}
    return subprocess.run(
        [sys.executable, *args], env={**base, **settings}, capture_output=True, text=True, timeout=60
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def test_an_unreachable_redis_is_waited_for_then_named(tmp_path):
    port = free_port()
    env = {"MOGAMES_REDIS_URL": f"redis://127.0.0.1:{port}/0", "MOGAMES_REDIS_WAIT_S": "1"}
    line = one_line(start("mori", {**env, "MOGAMES_LISTEN": f"127.0.0.1:{free_port()}"}))
    assert line.startswith("mogames mori: cannot start: Redis at redis://127.0.0.1:")
    assert "unreachable after 1 s" in line


def test_a_refused_password_is_named(password_redis):
    url = f"redis://127.0.0.1:{password_redis}/0"
    listen = {"MOGAMES_LISTEN": f"127.0.0.1:{free_port()}"}
    for password in ("wrong", None):
        env = {
            "MOGAMES_REDIS_URL": url,
            **listen,
            **({"MOGAMES_REDIS_PASSWORD": password} if password else {}),
        }
        line = one_line(start("mori", env))
        assert f"Redis at {url} refused the password" in line and "MOGAMES_REDIS_PASSWORD" in line
    # In the URL: named without it.
    line = one_line(
        start("mori", {"MOGAMES_REDIS_URL": f"redis://:wrong@127.0.0.1:{password_redis}/0", **listen})
    )
    assert "refused the password" in line and "wrong" not in line


def test_a_port_in_use_is_named(password_redis):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {
            "MOGAMES_REDIS_URL": f"redis://:{PASSWORD}@127.0.0.1:{password_redis}/0",
            "MOGAMES_LISTEN": f"127.0.0.1:{port}",
        }
        line = one_line(start("mori", env))
        assert (
            line == f"mogames mori: cannot start: cannot listen on 127.0.0.1:{port}: Address already in use"
        )
        gateway = {
            "MOGAMES_BACKENDS_MORI": "127.0.0.1:1",
            "MOGAMES_GATEWAY_LISTEN": f"127.0.0.1:{port}",
            "MOGAMES_WEB_LISTEN": "",
        }
        assert f"cannot listen on 127.0.0.1:{port}" in one_line(start("gateway", gateway))
        web = {**gateway, "MOGAMES_GATEWAY_LISTEN": "127.0.0.1:0", "MOGAMES_WEB_LISTEN": f"127.0.0.1:{port}"}
        assert f"cannot listen on 127.0.0.1:{port} (MOGAMES_WEB_LISTEN)" in one_line(start("gateway", web))


@pytest.mark.parametrize(
    "url",
    [
        "redis:/127.0.0.1:37010",
        "redis:127.0.0.1:37010",
        "redis://127.0.0.1:port/0",
        "redis://:6379/0",
        "unix://",
    ],
)
def test_a_malformed_redis_url_is_refused_not_reinterpreted(url):
    line = one_line(start("mori", {"MOGAMES_REDIS_URL": url}))
    assert line.startswith("mogames: bad settings: MOGAMES_REDIS_URL must be")
    gateway = {"MOGAMES_REDIS_URL": url, "MOGAMES_BACKENDS_MORI": "127.0.0.1:1", "MOGAMES_WEB_LISTEN": ""}
    assert "MOGAMES_REDIS_URL must be" in one_line(start("gateway", gateway))
