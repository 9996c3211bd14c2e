"""TLS at the gateway with a certificate made here, and plaintext only on loopback."""

from __future__ import annotations

import datetime
import ipaddress
import os
import subprocess
import sys
from pathlib import Path

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from grpc_health.v1 import health_pb2, health_pb2_grpc

from clients.game_client import GameClient
from gateway.server import build as build_gateway
from services.runtime.settings import GatewaySettings


def _self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "gateway.crt", directory / "gateway.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


async def test_gateway_serves_tls_with_its_certificate_and_refuses_plaintext_clients(cluster, tmp_path):
    cert, key = _self_signed(tmp_path)
    settings = GatewaySettings(
        listen="127.0.0.1:0",
        backends={"happy_mochi": tuple(cluster.replicas_addresses["happy_mochi"])},
        shutdown_grace_s=1,
        log_level="warning",
        tls_cert=str(cert),
        tls_key=str(key),
    )
    gateway, _checker, pools, port = await build_gateway(settings)
    await gateway.start()
    try:
        credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        async with grpc.aio.secure_channel(f"localhost:{port}", credentials) as channel:
            reply = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=10
            )
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
            match = await GameClient(channel, "happy_mochi").create(2)
            joined = await GameClient(channel, "happy_mochi").join(match.match_id, "over-tls")
            assert joined.token
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as plaintext:
            try:
                await health_pb2_grpc.HealthStub(plaintext).Check(health_pb2.HealthCheckRequest(), timeout=3)
            except grpc.aio.AioRpcError as error:
                assert error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
            else:
                raise AssertionError("a plaintext client got an answer from the TLS port")
    finally:
        await gateway.stop(None)
        for pool in pools:
            await pool.close()


def _gateway_exit(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MOGAMES_")}
    return subprocess.run(
        [sys.executable, "-m", "gateway"],
        env={**clean, "MOGAMES_BACKENDS_HAPPY_MOCHI": "127.0.0.1:50061", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_gateway_refuses_plaintext_on_a_public_address(tmp_path):
    result = _gateway_exit({"MOGAMES_GATEWAY_LISTEN": "0.0.0.0:0"})
    assert result.returncode != 0
    assert "not a loopback address" in result.stderr and "MOGAMES_TLS_CERT" in result.stderr
    cert, _key = _self_signed(tmp_path)
    half = _gateway_exit({"MOGAMES_GATEWAY_LISTEN": "0.0.0.0:0", "MOGAMES_TLS_CERT": str(cert)})
    assert half.returncode != 0 and "set both or neither" in half.stderr


def test_gateway_listens_on_loopback_by_default(monkeypatch):
    for name in [k for k in os.environ if k.startswith("MOGAMES_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("MOGAMES_BACKENDS_HAPPY_MOCHI", "127.0.0.1:50061")
    assert GatewaySettings.from_env().listen == "127.0.0.1:50051"
