"""The test session's gRPC core settings are the servers' own (services/runtime/grpc_core.py):
this package loads before any test module, and so before grpc."""

from services.runtime.grpc_core import apply_core_settings

apply_core_settings()
