"""Settings from environment variables, checked at start-up: a bad value stops the process."""

from __future__ import annotations

import functools
import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from services.runtime import cpus
from services.runtime.redis_client import RedisUrlError, check_url


class SettingsError(RuntimeError):
    pass


def _int(name: str, default: int, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise SettingsError(f"{name} must be >= {minimum}, got {value}")
    return value


def _bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if raw == "":
        return default
    if raw not in ("true", "false", "1", "0"):
        raise SettingsError(f"{name} must be true or false, got {raw!r}")
    return raw in ("true", "1")


def _str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name) or default
    if value is None:
        raise SettingsError(f"{name} is required")
    return value


def secret(name: str) -> str:
    """A secret setting: the variable ``name``, or the contents of the file ``<name>_FILE``
    names (one trailing newline dropped). Kubernetes mounts its Secrets as files so that a
    secret is not in every process's environment; '' when neither is set."""
    path, value = os.environ.get(f"{name}_FILE", ""), os.environ.get(name, "")
    if path and value:
        raise SettingsError(f"{name} and {name}_FILE are both set: set one of them")
    if not path:
        return value
    try:
        return Path(path).read_text().removesuffix("\n")
    except (OSError, UnicodeDecodeError) as error:
        raise SettingsError(f"{name}_FILE: cannot read {path!r} ({error})") from None


def _token_secret() -> bytes:
    value = secret("MOGAMES_TOKEN_SECRET")
    if not value:
        raise SettingsError("MOGAMES_TOKEN_SECRET is required (or MOGAMES_TOKEN_SECRET_FILE naming its file)")
    if len(value) < 16:
        raise SettingsError("MOGAMES_TOKEN_SECRET must be at least 16 characters")
    return value.encode()


def _address(name: str, default: str) -> str:
    value = _str(name, default)
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise SettingsError(f"{name} must be host:port, got {value!r}")
    return value


def _bot_worker_priority() -> str:
    value = os.environ.get("MOGAMES_BOT_WORKER_PRIORITY", "").strip() or "idle"
    if value != "idle" and not (value.isdigit() and 0 <= int(value) <= 19):
        raise SettingsError(f"MOGAMES_BOT_WORKER_PRIORITY must be idle or a niceness 0-19, got {value!r}")
    return value


def _bot_cpus() -> frozenset[int]:
    """The CPUs the bot workers get to themselves (services/runtime/cpus.py); none: they share."""
    own = _int("MOGAMES_BOT_OWN_CPUS", 0)
    try:
        return cpus.split(cpus.allowed(), own)[1]
    except ValueError as error:
        raise SettingsError(f"MOGAMES_BOT_OWN_CPUS={own}: {error}") from None


def _optional_address(name: str, default: str) -> str | None:
    """host:port, or None when the variable is set but empty (the feature is off)."""
    if os.environ.get(name) == "":
        return None
    return _address(name, default)


def _origins(name: str) -> tuple[str, ...]:
    origins = tuple(o.strip().rstrip("/") for o in os.environ.get(name, "").split(",") if o.strip())
    for origin in origins:
        if origin != "*" and urlparse(origin).scheme not in ("http", "https"):
            raise SettingsError(f"{name} must list origins like https://example.com, got {origin!r}")
    return origins


def _redis_url(name: str, default: str) -> str:
    value = _str(name, default)
    try:
        check_url(value)
    except RedisUrlError as error:
        raise SettingsError(f"{name} {error}") from None
    return value


LOG_LEVELS = ("debug", "info", "warning", "error")


def _log_level() -> str:
    level = _str("MOGAMES_LOG_LEVEL", "info").lower()
    if level not in LOG_LEVELS:
        raise SettingsError(f"MOGAMES_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, got {level!r}")
    return level


def _is_set(name: str) -> bool:
    return bool(os.environ.get(name))


def _metrics_listen() -> str:
    """MOGAMES_METRICS_LISTEN: host:port of the /metrics endpoint, or '' (off) when unset."""
    return _address("MOGAMES_METRICS_LISTEN", "") if os.environ.get("MOGAMES_METRICS_LISTEN") else ""


IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def _networks(name: str) -> tuple[IPNetwork, ...]:
    """Comma-separated addresses or networks (``10.0.0.5``, ``10.0.0.0/8``, ``::1``)."""
    networks = []
    for entry in (e.strip() for e in os.environ.get(name, "").split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise SettingsError(
                f"{name} must list IP addresses or networks (10.0.0.5, 10.0.0.0/8), got {entry!r}"
            ) from None
    return tuple(networks)


@dataclass(frozen=True)
class InputLimits:
    """Bounds on client input, in every process that decodes requests."""

    # Whole request, in bytes (gRPC refuses larger ones with RESOURCE_EXHAUSTED).
    max_message_bytes: int = 64 * 1024
    # Any one string or bytes field, in characters (bytes).
    max_string: int = 256
    # Any one repeated field, in entries; a creator's custom map has its own bound.
    max_repeated: int = 256
    max_layout_tiles: int = 200
    # Metadata whose value identifies a client to the rate limits (e.g. ``x-forwarded-for``
    # set by a trusted proxy); empty: the peer's IP address.
    client_id_metadata: str = ""
    # Peers (addresses or networks) whose word on who the client is counts: their
    # ``mogames-client`` or client_id_metadata header names the client. Anyone else is
    # named by its own address, whatever it sends (services/runtime/limits.client_id).
    trusted_proxies: tuple[IPNetwork, ...] = ()

    @functools.cached_property
    def smallest_bound(self) -> int:
        """The tightest of the string and repeated-field bounds."""
        return min(self.max_string, self.max_repeated, self.max_layout_tiles)

    @classmethod
    def from_env(cls) -> InputLimits:
        return cls(
            max_message_bytes=_int("MOGAMES_MAX_MESSAGE_BYTES", 64 * 1024, minimum=1024),
            max_string=_int("MOGAMES_MAX_STRING", 256, minimum=64),
            max_repeated=_int("MOGAMES_MAX_REPEATED", 256, minimum=16),
            max_layout_tiles=_int("MOGAMES_MAX_LAYOUT_TILES", 200, minimum=16),
            client_id_metadata=os.environ.get("MOGAMES_CLIENT_ID_METADATA", "").strip().lower(),
            trusted_proxies=_networks("MOGAMES_TRUSTED_PROXIES"),
        )


@dataclass(frozen=True)
class ServiceSettings:
    """A game service process."""

    game: str
    listen: str
    redis_url: str
    token_secret: bytes
    finished_ttl_s: int
    abandon_after_s: int
    game_stream_maxlen: int
    shutdown_grace_s: int
    log_level: str
    # A client-chosen seed lets the match creator know every deal: fine for tests, replays
    # and tournaments with public seeds (turn it on there), cheating anywhere else.
    allow_client_seed: bool = False
    # Used when the URL carries none (services/runtime/redis_client.py).
    redis_password: str | None = None
    # Player lifecycle (README, "Seats, timers and bots").
    token_ttl_s: int = 7 * 24 * 3600
    bot_think_ms: int = 300
    # The searching bots' worker processes per replica (services/runtime/bot_pool.py), how they
    # give way to it ("idle": SCHED_IDLE, or a niceness), and CPUs of their own (empty: shared).
    bot_workers: int = 1
    bot_worker_priority: str = "idle"
    bot_cpus: frozenset[int] = frozenset()
    # How often each replica looks for due timers, bot moves and idle matches, and how long
    # one replica holds a due match before another may take it over.
    scheduler_tick_ms: int = 200
    scheduler_lease_ms: int = 5000
    # A live match whose seat to move, watched here, has had no prompt this long is reported.
    stall_after_s: int = 300
    # Input limits at the edge (services.runtime.limits), checked before any conversion.
    limits: InputLimits = field(default_factory=lambda: InputLimits())
    # Per-client abuse limits on CreateMatch/JoinMatch, shared by every replica through Redis.
    # 0 turns a limit off (the defaults below are off; from_env turns them on).
    create_per_window: int = 0
    join_per_window: int = 0
    rate_window_s: int = 60
    max_waiting_per_client: int = 0
    # Matches one signed-in player may hold seats in while they wait or play (0 = no cap).
    max_matches_per_player: int = 0
    metrics_listen: str = ""
    # Seconds before a client is asked to reconnect (services.runtime.serving.new_server); 0, never.
    # A service's clients are gateways, each holding one connection per replica and following the
    # replicas by itself (gateway.discovery): aging that connection would cut every stream behind
    # it at once, and they would all reconnect at once. MOGAMES_MAX_CONNECTION_AGE_S is the gateway's.
    max_connection_age_s: int = 0
    # GetView / WatchMatch without a token (the public view and events); a match can also
    # refuse them itself (TableOptions.no_spectators).
    spectators: bool = True
    # A quiet WatchMatch or PlayMatch sends a Heartbeat this often, so proxies keep the stream
    # (their idle timeouts are a minute or more) and a vanished client is noticed at the next write
    # (keepalive pings notice it within 40 s anyway). A heartbeat is a message per stream through the
    # service and the gateway: nearly all a waiting seat's CPU (docs/benchmarks.md, bench-capacity).
    heartbeat_s: float = 30.0
    # Start-up waits this long for a Redis it cannot reach (one still loading its data is
    # waited for until it is done), then stops with one line.
    redis_wait_s: int = 30
    # Moves after which a match still going ends ABANDONED ("move_cap"); 0 = the game's
    # own cap (GameInfo.move_cap).
    max_moves: int = 0

    @classmethod
    def from_env(cls, game: str | None = None) -> ServiceSettings:
        from services.catalog import GAME_PACKAGES

        game = game or _str("MOGAMES_GAME")
        if game not in GAME_PACKAGES:
            raise SettingsError(f"MOGAMES_GAME must be one of {', '.join(GAME_PACKAGES)}, got {game!r}")
        return cls(
            game=game,
            listen=_address("MOGAMES_LISTEN", "127.0.0.1:50061"),
            redis_url=_redis_url("MOGAMES_REDIS_URL", "redis://127.0.0.1:6379/0"),
            token_secret=_token_secret(),
            finished_ttl_s=_int("MOGAMES_FINISHED_TTL_S", 24 * 3600, minimum=1),
            abandon_after_s=_int("MOGAMES_ABANDON_AFTER_S", 3600, minimum=1),
            game_stream_maxlen=_int("MOGAMES_GAME_STREAM_MAXLEN", 100_000, minimum=1),
            shutdown_grace_s=_int("MOGAMES_SHUTDOWN_GRACE_S", 10),
            log_level=_log_level(),
            allow_client_seed=_bool("MOGAMES_ALLOW_CLIENT_SEED", False),
            redis_password=secret("MOGAMES_REDIS_PASSWORD") or None,
            token_ttl_s=_int("MOGAMES_TOKEN_TTL_S", 7 * 24 * 3600, minimum=1),
            bot_think_ms=_int("MOGAMES_BOT_THINK_MS", 300),
            bot_workers=_int("MOGAMES_BOT_WORKERS", 1, minimum=1),
            bot_worker_priority=_bot_worker_priority(),
            bot_cpus=_bot_cpus(),
            scheduler_tick_ms=_int("MOGAMES_SCHEDULER_TICK_MS", 200, minimum=10),
            scheduler_lease_ms=_int("MOGAMES_SCHEDULER_LEASE_MS", 5000, minimum=100),
            stall_after_s=_int("MOGAMES_STALL_AFTER_S", 300, minimum=1),
            limits=InputLimits.from_env(),
            create_per_window=_int("MOGAMES_CREATE_LIMIT", 30),
            join_per_window=_int("MOGAMES_JOIN_LIMIT", 120),
            rate_window_s=_int("MOGAMES_RATE_WINDOW_S", 60, minimum=1),
            max_waiting_per_client=_int("MOGAMES_MAX_WAITING_PER_CLIENT", 10),
            max_matches_per_player=_int("MOGAMES_MAX_MATCHES_PER_PLAYER", 100),
            metrics_listen=_metrics_listen(),
            spectators=_bool("MOGAMES_SPECTATORS", True),
            heartbeat_s=_int("MOGAMES_HEARTBEAT_S", 30, minimum=1),
            redis_wait_s=_int("MOGAMES_REDIS_WAIT_S", 30),
            max_moves=_int("MOGAMES_MAX_MOVES", 0),
        )


@dataclass(frozen=True)
class GatewaySettings:
    """The gateway: one public port, and each game's backend replicas."""

    listen: str
    backends: dict[str, tuple[str, ...]]
    shutdown_grace_s: int
    log_level: str
    # The web port (Connect, gRPC-Web and the browser page); None = off.
    web_listen: str | None = None
    # Origins other than the page's own that browsers may call the web port from (CORS).
    web_origins: tuple[str, ...] = ()
    # The built browser page served on the web port.
    web_root: str = "clients/web/dist"
    # False when web_listen is only the default: a busy default port then leaves the web
    # port off (with a warning) instead of stopping the gateway.
    web_listen_chosen: bool = True
    # The lobby's match list and matchmaking pools (the services' Redis).
    redis_url: str = "redis://127.0.0.1:6379/0"
    # FindMatch waits at most this long when the request sets no wait_seconds.
    find_wait_s: int = 30
    limits: InputLimits = field(default_factory=lambda: InputLimits())
    metrics_listen: str = ""
    # PEM files of the gateway's certificate chain and key; without them the gateway speaks
    # plaintext, which it does only on a loopback address unless allow_plaintext is set.
    tls_cert: str = ""
    tls_key: str = ""
    allow_plaintext: bool = False
    max_connection_age_s: int = 300
    redis_password: str | None = None
    # A plaintext port serving only grpc.health.v1 (for the kubelet's native gRPC probes,
    # which cannot speak TLS); '' = off.
    health_listen: str = ""
    # The players service's replicas (MOGAMES_BACKENDS_PLAYERS); none: not routed.
    players_backends: tuple[str, ...] = ()
    # The services' token secret, when set: FindMatch checks player sessions with it.
    token_secret: bytes = b""

    @classmethod
    def from_env(cls) -> GatewaySettings:
        from services.catalog import GAME_PACKAGES

        accepted = [f"MOGAMES_BACKENDS_{game.upper()}" for game in (*GAME_PACKAGES, "players")]
        unknown = sorted(k for k in os.environ if k.startswith("MOGAMES_BACKENDS_") and k not in accepted)
        if unknown:
            raise SettingsError(f"{', '.join(unknown)}: no such game; accepted names: {', '.join(accepted)}")
        backends: dict[str, tuple[str, ...]] = {}
        for game in GAME_PACKAGES:
            addresses = _backends(f"MOGAMES_BACKENDS_{game.upper()}")
            if addresses:
                backends[game] = addresses
        if not backends:
            raise SettingsError("set MOGAMES_BACKENDS_<GAME> (e.g. MOGAMES_BACKENDS_HAPPY_MOCHI) for a game")
        settings = cls(
            listen=_address("MOGAMES_GATEWAY_LISTEN", "127.0.0.1:50051"),
            backends=backends,
            shutdown_grace_s=_int("MOGAMES_SHUTDOWN_GRACE_S", 10),
            log_level=_log_level(),
            web_listen=_optional_address("MOGAMES_WEB_LISTEN", "127.0.0.1:8080"),
            web_origins=_origins("MOGAMES_WEB_ORIGINS"),
            web_root=_str("MOGAMES_WEB_ROOT", "clients/web/dist"),
            web_listen_chosen="MOGAMES_WEB_LISTEN" in os.environ,
            redis_url=_redis_url("MOGAMES_REDIS_URL", "redis://127.0.0.1:6379/0"),
            find_wait_s=_int("MOGAMES_FIND_WAIT_S", 30, minimum=1),
            limits=InputLimits.from_env(),
            metrics_listen=_metrics_listen(),
            tls_cert=_readable("MOGAMES_TLS_CERT"),
            tls_key=_readable("MOGAMES_TLS_KEY"),
            allow_plaintext=_bool("MOGAMES_ALLOW_PLAINTEXT", False),
            max_connection_age_s=_int("MOGAMES_MAX_CONNECTION_AGE_S", 300, minimum=1),
            redis_password=secret("MOGAMES_REDIS_PASSWORD") or None,
            health_listen=_address("MOGAMES_HEALTH_LISTEN", "") if _is_set("MOGAMES_HEALTH_LISTEN") else "",
            players_backends=_backends("MOGAMES_BACKENDS_PLAYERS"),
            token_secret=secret("MOGAMES_TOKEN_SECRET").encode(),
        )
        if bool(settings.tls_cert) != bool(settings.tls_key):
            raise SettingsError("MOGAMES_TLS_CERT and MOGAMES_TLS_KEY go together: set both or neither")
        if not settings.tls_cert and not settings.allow_plaintext and not is_loopback(settings.listen):
            raise SettingsError(
                f"MOGAMES_GATEWAY_LISTEN={settings.listen} is not a loopback address: set MOGAMES_TLS_CERT "
                "and MOGAMES_TLS_KEY, or MOGAMES_ALLOW_PLAINTEXT=true behind a proxy that encrypts"
            )
        web = settings.web_listen
        if web and not settings.tls_cert and not settings.allow_plaintext and not is_loopback(web):
            raise SettingsError(
                f"MOGAMES_WEB_LISTEN={web} is not a loopback address: set MOGAMES_TLS_CERT and "
                "MOGAMES_TLS_KEY (the web port then serves HTTPS), or MOGAMES_ALLOW_PLAINTEXT=true "
                "behind a proxy that encrypts"
            )
        return settings


def _backends(name: str) -> tuple[str, ...]:
    addresses = tuple(a.strip() for a in os.environ.get(name, "").split(",") if a.strip())
    for address in addresses:
        if not address.rpartition(":")[2].isdigit():
            raise SettingsError(f"{name} must list host:port addresses, got {address!r}")
    return addresses


def is_loopback(address: str) -> bool:
    host = address.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _readable(name: str) -> str:
    """A path to a file this process can read, or '' when unset."""
    path = os.environ.get(name, "")
    if path and not os.access(path, os.R_OK):
        raise SettingsError(f"{name}: cannot read {path!r}")
    return path


@dataclass(frozen=True)
class OidcProvider:
    """The OpenID Connect provider whose ID tokens sign players in (docs/players.md)."""

    issuer: str
    audience: str
    # Where its public keys are: the provider's JWKS URL, or a file holding the JWKS.
    jwks_url: str = ""
    jwks_file: str = ""


def _oidc_provider() -> OidcProvider | None:
    """MOGAMES_OIDC_ISSUER, MOGAMES_OIDC_AUDIENCE and one of MOGAMES_OIDC_JWKS_URL or
    MOGAMES_OIDC_JWKS_FILE together, or none of them (provider sign-in off)."""
    issuer, audience, url, path = (
        os.environ.get(f"MOGAMES_OIDC_{n}", "").strip()
        for n in ("ISSUER", "AUDIENCE", "JWKS_URL", "JWKS_FILE")
    )
    if not (issuer or audience or url or path):
        return None
    if not issuer or not audience:
        raise SettingsError("MOGAMES_OIDC_ISSUER and MOGAMES_OIDC_AUDIENCE go together: set both")
    if urlparse(issuer).scheme not in ("https", "http") or not urlparse(issuer).netloc:
        raise SettingsError(
            f"MOGAMES_OIDC_ISSUER must be a URL like https://accounts.example.com, got {issuer!r}"
        )
    if bool(url) == bool(path):
        raise SettingsError(
            "set one of MOGAMES_OIDC_JWKS_URL or MOGAMES_OIDC_JWKS_FILE for the provider's keys"
        )
    if url and (urlparse(url).scheme not in ("https", "http") or not urlparse(url).netloc):
        raise SettingsError(f"MOGAMES_OIDC_JWKS_URL must be an http(s) URL, got {url!r}")
    return OidcProvider(issuer, audience, url, _readable("MOGAMES_OIDC_JWKS_FILE"))


@dataclass(frozen=True)
class PlayersSettings:
    """The players service (services/players): sign-in, sessions, profiles, my matches."""

    listen: str
    redis_url: str
    token_secret: bytes
    shutdown_grace_s: int = 10
    log_level: str = "info"
    redis_password: str | None = None
    # A session token's life, and its refresh token's (single use, exchanged for a new pair).
    session_ttl_s: int = 3600
    refresh_ttl_s: int = 30 * 24 * 3600
    # Sign-ins (and refreshes) one player may make per window, and one client address.
    sign_ins_per_window: int = 30
    sign_ins_per_client: int = 300
    sign_in_window_s: int = 600
    oidc: OidcProvider | None = None
    # How long a finished match stays in its players' ListMyMatches.
    finished_listed_s: int = 7 * 24 * 3600
    # A quiet WatchMyTurns sends a Heartbeat this often (as a game's streams do).
    heartbeat_s: float = 30.0
    limits: InputLimits = field(default_factory=lambda: InputLimits())
    metrics_listen: str = ""
    # As ServiceSettings.max_connection_age_s (never: its clients are gateways).
    max_connection_age_s: int = 0
    # As ServiceSettings.redis_wait_s.
    redis_wait_s: int = 30

    @classmethod
    def from_env(cls) -> PlayersSettings:
        return cls(
            listen=_address("MOGAMES_LISTEN", "127.0.0.1:50071"),
            redis_url=_redis_url("MOGAMES_REDIS_URL", "redis://127.0.0.1:6379/0"),
            token_secret=_token_secret(),
            shutdown_grace_s=_int("MOGAMES_SHUTDOWN_GRACE_S", 10),
            log_level=_log_level(),
            redis_password=secret("MOGAMES_REDIS_PASSWORD") or None,
            session_ttl_s=_int("MOGAMES_SESSION_TTL_S", 3600, minimum=1),
            refresh_ttl_s=_int("MOGAMES_REFRESH_TTL_S", 30 * 24 * 3600, minimum=60),
            sign_ins_per_window=_int("MOGAMES_SIGN_IN_LIMIT", 30),
            sign_ins_per_client=_int("MOGAMES_SIGN_IN_CLIENT_LIMIT", 300),
            sign_in_window_s=_int("MOGAMES_SIGN_IN_WINDOW_S", 600, minimum=1),
            oidc=_oidc_provider(),
            finished_listed_s=_int("MOGAMES_FINISHED_LISTED_S", 7 * 24 * 3600, minimum=60),
            heartbeat_s=_int("MOGAMES_HEARTBEAT_S", 30, minimum=1),
            limits=InputLimits.from_env(),
            metrics_listen=_metrics_listen(),
            redis_wait_s=_int("MOGAMES_REDIS_WAIT_S", 30),
        )
