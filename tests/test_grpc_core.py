"""The gRPC core settings (services/runtime/grpc_core.py): this grpc release knows every
experiment they turn off, each entry point applies them before grpc loads, and a value
already in the environment stays."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from services.runtime.grpc_core import EXPERIMENTS

# A server and a client call on loopback, with the settings applied first: grpc reads them
# when its core starts and names any experiment it does not know on stderr.
_SERVE_ONE_CALL = """
from services.runtime.grpc_core import apply_core_settings
apply_core_settings()
import asyncio, os, grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

async def main():
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        answer = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
    await server.stop(None)
    print(os.environ["GRPC_EXPERIMENTS"], answer.status == health_pb2.HealthCheckResponse.SERVING)

asyncio.run(main())
"""


def _run(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_this_grpc_knows_every_experiment_the_settings_turn_off() -> None:
    env = {k: v for k, v in os.environ.items() if k != "GRPC_EXPERIMENTS"}
    done = _run(_SERVE_ONE_CALL, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [EXPERIMENTS, "True"]
    assert "Unknown experiment" not in done.stderr, done.stderr


def test_a_value_already_set_stays_and_grpc_loaded_first_is_refused() -> None:
    done = _run(_SERVE_ONE_CALL, {**os.environ, "GRPC_EXPERIMENTS": ""})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"]  # the empty value printed as nothing: grpc's defaults
    late = "import grpc\nfrom services.runtime.grpc_core import apply_core_settings\napply_core_settings()"
    refused = _run(late, dict(os.environ))
    assert refused.returncode != 0 and "grpc is loaded already" in refused.stderr


def test_the_test_session_and_the_entry_points_apply_them() -> None:
    """This session got them from tests/__init__.py; ``python -m services`` and ``python -m
    gateway`` apply them before importing their servers."""
    assert "GRPC_EXPERIMENTS" in os.environ
    for entry in ("services/__main__.py", "gateway/__main__.py"):
        source = Path(entry).read_text(encoding="utf-8")
        assert source.index("apply_core_settings()") < source.index("import cli"), entry
