from services.runtime.grpc_core import apply_core_settings

apply_core_settings()

from gateway.server import cli  # noqa: E402  (grpc loads after its core settings)

cli()
