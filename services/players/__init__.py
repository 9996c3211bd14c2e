"""The players service (``python -m services.players``): mogames.players.v1.Players.

Who plays across matches and devices: guest and OpenID Connect sign-in, sessions, profiles,
the player's matches and turn notices (docs/players.md).

Where its parts live:
- ``server``: the process (settings: ``services.runtime.settings.PlayersSettings``).
- ``servicer``: translates protobuf to the modules below and nothing else; it resolves the
  caller's session (``sessions.Sessions.player_of``) once per call.
- ``sessions``, ``accounts``, ``oidc``: sign-in, refresh, profile, delete.
- ``my_matches``: ListMyMatches and WatchMyTurns, from the per-player indexes the game
  services write after their commits (``services.runtime.activity``); ``turns_hub``: one
  pub/sub connection per process for every WatchMyTurns stream.
- ``ratings``: GetRating, GetLeaderboard, ListRatingHistory. ``notifications``:
  UpdateNotificationSettings. The servicer hands those calls, with the caller's player id
  ("" when the call carried no session), to ``ratings.RatingHandlers`` and
  ``notifications.NotificationHandlers``; replace their bodies (they answer UNIMPLEMENTED
  until then) and add what they need to ``server.build`` (it passes the Redis client and
  settings). The workers (notifier, ratings) are processes of their own, not this one.
"""
