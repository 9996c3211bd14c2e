"""Every Redis key the platform uses, in one place.

Per-match keys carry the match id as a ``{hash tag}`` so that all keys of one match
live in one Redis Cluster slot and one Lua script may touch them together.
"""

PREFIX = "mg"


def match(match_id: str) -> str:
    """Hash: ``rev`` (compare-and-set counter of every write) and ``doc`` (JSON)."""
    return f"{PREFIX}:{{{match_id}}}:match"


def tail(match_id: str) -> str:
    """List of the match's latest commits' events, one element per commit (services.runtime.store)."""
    return f"{PREFIX}:{{{match_id}}}:tail"


def archive(match_id: str) -> str:
    """List of the match's older commits, each element a zlib-compressed chunk of them."""
    return f"{PREFIX}:{{{match_id}}}:archive"


def requests(match_id: str) -> str:
    """String of the match's ``SubmitMove`` request records, 12 bytes each (services.runtime.store)."""
    return f"{PREFIX}:{{{match_id}}}:requests"


def outbox(match_id: str) -> str:
    """List of the match's committed activity notices not yet delivered: appended to its game's
    activity stream (on a cluster, where the stream is in another slot) and told to its
    players. Each element one commit's entries, pushed by the commit script and removed once
    delivered (services.runtime.outbox)."""
    return f"{PREFIX}:{{{match_id}}}:outbox"


def game_moves(game: str) -> str:
    """Capped stream of every accepted move of one game, for downstream consumers."""
    return f"{PREFIX}:game:{game}:moves"


def due(game: str) -> str:
    """Sorted set of one game's live matches, scored by when a server action is next due
    (a turn deadline, a bot's move, the idle reaper), Unix ms on Redis's clock."""
    return f"{PREFIX}:game:{game}:due"


def outbox_marks(game: str) -> str:
    """Sorted set of one game's ``<match id>/<rev>`` marks, each written with (one Redis) or
    before (a cluster) a commit that fills the match's outbox, scored by when (Unix ms on
    Redis's clock), removed once the outbox is delivered; the scheduler sweeps the old ones
    (services.runtime.outbox)."""
    return f"{PREFIX}:game:{game}:outbox"


def public_matches(game: str) -> str:
    """Sorted set of one game's public matches (TableOptions.public), scored by creation ms."""
    return f"{PREFIX}:game:{game}:public"


def matchmaking(game: str, players: int, part: str) -> str:
    """One matchmaking pool's keys (queue, tickets, groups), all under one hash tag per
    (game, players) so one Lua script may touch them together."""
    return f"{PREFIX}:{{mm:{game}:{players}}}:{part}"


def rate_window(method: str, client: str, window: int) -> str:
    """Fixed-window counter of one client's calls of one method (services.runtime.limits)."""
    return f"{PREFIX}:rate:{method}:{client}:{window}"


def client_waiting(client: str) -> str:
    """Sorted set of the matches one client created that still wait for players (score: created at)."""
    return f"{PREFIX}:client:{client}:waiting"


def match_creator(match_id: str) -> str:
    """Which client created a waiting match, so its start can be taken off that client's count."""
    return f"{PREFIX}:{{{match_id}}}:creator"


def notify(match_id: str) -> str:
    """Pub/sub channel told the new version after every commit of the match (the watch hub's
    wake-up call; the events stream stays the source of truth). It carries the match's hash
    tag so that a sharded-pub/sub deployment publishes it from the match's own slot."""
    return f"{PREFIX}:{{{match_id}}}:notify"


def match_of_notify(channel: str) -> str:
    """The match id of a ``notify`` channel name."""
    return channel[channel.index("{") + 1 : channel.rindex("}")]


def activity(game: str) -> str:
    """Capped stream of one game's player-facing notices (your turn, started, ended, timed
    out), read by the notifier and ratings workers' consumer groups."""
    return f"{PREFIX}:game:{game}:activity"


def notify_dead_letters() -> str:
    """Stream of webhook notifications given up after the configured tries (services.workers)."""
    return f"{PREFIX}:notify:dead"


def notify_settings(player_id: str) -> str:
    """Hash of one player's webhook settings: quiet hours (``start``, ``end``, ``zone``)."""
    return f"{PREFIX}:{{p:{player_id}}}:notify"


def muted_matches(player_id: str) -> str:
    """Sorted set of the match ids one player switched "notify me" off for (score: when)."""
    return f"{PREFIX}:{{p:{player_id}}}:muted"


def ladder(ladder_name: str, part: str) -> str:
    """One rating ladder's keys, all under one hash tag so one script updates a match's
    players, the leaderboard and the match's marker together: ``board`` (sorted set by
    ordinal), ``player:<id>`` (hash: mu, sigma, matches), ``history:<id>`` (list, newest
    first), ``rated:<match id>`` (the marker that the match was counted)."""
    return f"{PREFIX}:{{ladder:{ladder_name}}}:{part}"


# A player's keys share the hash tag ``{p:<player id>}``: one slot, one script.


def player_profile(player_id: str) -> str:
    """Hash: display name, locale, creation ms, the device and identity keys that sign in to it."""
    return f"{PREFIX}:{{p:{player_id}}}:profile"


def player_deleted(player_id: str) -> str:
    """String, set when the player is deleted and kept as long as a session lives: the
    sessions still held are stateless, and this is what refuses them a seat."""
    return f"{PREFIX}:{{p:{player_id}}}:deleted"


def player_matches(player_id: str) -> str:
    """Sorted set of the player's matches (``<game>/<match id>``), scored by their last commit ms."""
    return f"{PREFIX}:{{p:{player_id}}}:matches"


def player_match_facts(player_id: str) -> str:
    """Hash ``<game>/<match id>`` -> the match's facts as of its latest commit, with the rev."""
    return f"{PREFIX}:{{p:{player_id}}}:facts"


def player_turns(player_id: str) -> str:
    """Pub/sub channel of the player's notices, for WatchMyTurns."""
    return f"{PREFIX}:{{p:{player_id}}}:turns"


def device(device_digest: str) -> str:
    """Hash of a guest device (by a digest of its id): its player and its secret's digest."""
    return f"{PREFIX}:device:{device_digest}"


def identity(identity_digest: str) -> str:
    """String: the player an OpenID Connect identity (a digest of issuer and subject) signs in to."""
    return f"{PREFIX}:identity:{identity_digest}"


def refresh_token(token_digest: str) -> str:
    """String: the player a refresh token (by its digest) renews a session of; single use."""
    return f"{PREFIX}:refresh:{token_digest}"
