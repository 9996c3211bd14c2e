"""Which waiting tickets FindMatch seats together: similar ratings first, wider the longer
they wait.

A ticket carries its player's rating mean (mu) on the game's ladder (services/workers;
players without a session, and players never rated, count as the model's starting mu). A
group forms around the oldest waiting ticket that has enough others within its window:
its nearest in mu, each no further than the window. The window starts at ``WINDOW_MU``,
widens by ``WIDEN_MU_PER_S`` for each second the ticket has waited, and is unlimited once
it has waited half its wait_seconds, so that the second half of every wait seats it with
whoever waits, as matchmaking did before ratings (and bots fill after the whole wait).
The ``SCAN`` oldest live tickets of a pool are considered at each poll.
"""

from __future__ import annotations

from services.runtime.redis_client import RedisClient
from services.workers.ladders import Ladders
from services.workers.ratings import DEFAULT_MU

WINDOW_MU = 2.0
WIDEN_MU_PER_S = 2.0
SCAN = 200

# Lua, after the matchmaker's shared functions (`live` and `now_ms` are not used here: a
# ticket's liveness is read with its rating in one HMGET). `waiting` lists the live waiting
# tickets, oldest first, dropping from the queue those whose callers are gone; `choose`
# answers a group's ticket ids, oldest first, or nil.
CHOOSE = f"""
local function waiting(queue, prefix, now, live_ms)
  local found, offset = {{}}, 0
  while #found < {SCAN} do
    local batch = redis.call('ZRANGE', queue, offset, offset + 99)
    if #batch == 0 then break end
    for _, member in ipairs(batch) do
      local key = prefix .. 'ticket:' .. member
      local f = redis.call('HMGET', key, 'state', 'seen', 'mu', 'since', 'wait')
      if f[1] == 'waiting' and tonumber(f[2]) ~= nil and now - tonumber(f[2]) <= live_ms then
        table.insert(found, {{id = member, mu = tonumber(f[3]) or {DEFAULT_MU!r},
                             since = tonumber(f[4]) or now, wait = tonumber(f[5]) or 0}})
        offset = offset + 1
      else
        redis.call('ZREM', queue, member)
        if f[1] == 'waiting' then redis.call('HSET', key, 'state', 'gone') end
      end
    end
  end
  return found
end
local function window(ticket, now)
  local waited = now - ticket.since
  if ticket.wait > 0 and 2 * waited >= ticket.wait then return math.huge end
  return {WINDOW_MU!r} + {WIDEN_MU_PER_S!r} * waited / 1000
end
-- minimum < players: the caller's wait is over and bots fill the seats nobody takes; the
-- group is then the caller and its nearest, whatever their distance.
local function choose(found, caller, players, minimum, now)
  local order, at = {{}}, {{}}
  for i = 1, #found do order[i] = i end
  table.sort(order, function(a, b)
    if found[a].mu ~= found[b].mu then return found[a].mu < found[b].mu end
    return a < b
  end)
  for place, i in ipairs(order) do at[i] = place end
  for a = 1, #found do
    local anchor = found[a]
    if minimum >= players or anchor.id == caller then
      local w = minimum >= players and window(anchor, now) or math.huge
      local group, lo, hi = {{a}}, at[a] - 1, at[a] + 1
      while #group < players and (lo >= 1 or hi <= #order) do
        local below = lo >= 1 and anchor.mu - found[order[lo]].mu or math.huge
        local above = hi <= #order and found[order[hi]].mu - anchor.mu or math.huge
        if math.min(below, above) > w then break end
        if below <= above then
          table.insert(group, order[lo])
          lo = lo - 1
        else
          table.insert(group, order[hi])
          hi = hi + 1
        end
      end
      if #group >= minimum then
        -- Oldest first: the group id starts with its oldest member's (who finishes it).
        table.sort(group)
        local ids = {{}}
        for _, i in ipairs(group) do table.insert(ids, found[i].id) end
        return ids
      end
    end
  end
  return nil
end
"""


async def rating_of(redis: RedisClient, game: str, player: str) -> float:
    """The mu a ticket is paired by: the player's on the game's ladder, else the starting one."""
    if not player:
        return DEFAULT_MU
    return (await Ladders(redis).rating(game, player)).skill.mu
