// The pacer's two Lua scripts (src/api/pacer.ts): every check-and-update of a key runs in one of them, so two
// processes cannot both decide a key is free.

// KEYS: state hash, holders zset, waiters zset (id → arrival), waiter liveness zset (id → expiry).
// ARGV: now, permit id, concurrency, lockTtlMs, minSpacingMs, baseDelayMs, maxDelayMs, stateTtlMs, pollMs, graceMs
// → {1, 0, "ok"} | {0, waitMs, "blocked"} | {0, waitMs, "busy"}
// Waiters are served first come, first served: without the queue a process that releases and at once
// acquires again would starve the processes polling for the key.
export const ACQUIRE_LUA = `
local now = tonumber(ARGV[1])
local id = ARGV[2]
local concurrency = tonumber(ARGV[3])
local lockTtl = tonumber(ARGV[4])
local minSpacing = tonumber(ARGV[5])
local base = tonumber(ARGV[6])
local maxDelay = tonumber(ARGV[7])
local stateTtl = tonumber(ARGV[8])
local poll = tonumber(ARGV[9])
local grace = tonumber(ARGV[10])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local dead = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
if #dead > 0 then
  redis.call('ZREM', KEYS[3], unpack(dead))
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
end
-- Keep (or take) a place in the queue, alive until the caller is due back from its sleep.
local function wait(ms, sleepMs, reason)
  redis.call('ZADD', KEYS[3], 'NX', now, id)
  redis.call('ZADD', KEYS[4], now + sleepMs + grace, id)
  local last = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
  local ttl = math.ceil(tonumber(last[2]) - now) + grace
  redis.call('PEXPIRE', KEYS[3], ttl)
  redis.call('PEXPIRE', KEYS[4], ttl)
  return {0, ms, reason}
end
local s = redis.call('HMGET', KEYS[1], 'blockedUntil', 'level', 'lastSend')
local blockedUntil = tonumber(s[1]) or 0
local level = tonumber(s[2]) or 0
local lastSend = tonumber(s[3]) or 0
local spacing = minSpacing
if level > 0 then spacing = math.max(spacing, math.min(maxDelay, base * 2 ^ (level - 1))) end
local nextAt = lastSend + spacing
if blockedUntil > nextAt then nextAt = blockedUntil end
if nextAt > now then
  local ms = math.ceil(nextAt - now)
  return wait(ms, ms, 'blocked')
end
local held = redis.call('ZCARD', KEYS[2])
local rank = redis.call('ZRANK', KEYS[3], id)
if not rank then rank = redis.call('ZCARD', KEYS[3]) end
if held + rank >= concurrency then
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  local ms = poll
  if first[2] then ms = math.ceil(tonumber(first[2]) - now) end
  return wait(ms, math.min(ms, poll), 'busy')
end
redis.call('ZREM', KEYS[3], id)
redis.call('ZREM', KEYS[4], id)
redis.call('ZADD', KEYS[2], now + lockTtl, id)
redis.call('PEXPIRE', KEYS[2], lockTtl * 2)
redis.call('HSET', KEYS[1], 'lastSend', now)
redis.call('PEXPIRE', KEYS[1], math.max(blockedUntil - now, 0) + stateTtl)
return {1, 0, 'ok'}
`;

// KEYS: state hash, holders zset, the key's release channel.
// ARGV: now, permit id, outcome, acquiredAt, baseDelayMs, maxDelayMs, maxLevel, jitterFactor, relaxAfter, stateTtlMs, releaser
// → {level, blockedUntil}
export const RELEASE_LUA = `
local now = tonumber(ARGV[1])
local outcome = ARGV[3]
local acquiredAt = tonumber(ARGV[4])
local base = tonumber(ARGV[5])
local maxDelay = tonumber(ARGV[6])
local maxLevel = tonumber(ARGV[7])
local jitterFactor = tonumber(ARGV[8])
local relaxAfter = tonumber(ARGV[9])
local stateTtl = tonumber(ARGV[10])
redis.call('ZREM', KEYS[2], ARGV[2])
local s = redis.call('HMGET', KEYS[1], 'blockedUntil', 'level', 'successes', 'throttledAt')
local blockedUntil = tonumber(s[1]) or 0
local level = tonumber(s[2]) or 0
local successes = tonumber(s[3]) or 0
local throttledAt = tonumber(s[4]) or 0
if outcome == 'throttled' then
  -- A request sent before the last throttle signal carries no new information: don't escalate twice.
  if acquiredAt >= throttledAt and level < maxLevel then level = level + 1 end
  if level < 1 then level = 1 end
  local delay = math.min(maxDelay, math.ceil(base * 2 ^ (level - 1) * jitterFactor))
  if now + delay > blockedUntil then blockedUntil = now + delay end
  successes = 0
  throttledAt = now
elseif outcome == 'success' and level > 0 then
  successes = successes + 1
  if successes >= relaxAfter then
    level = level - 1
    successes = 0
  end
end
redis.call('HSET', KEYS[1], 'blockedUntil', blockedUntil, 'level', level, 'successes', successes, 'throttledAt', throttledAt)
redis.call('PEXPIRE', KEYS[1], math.max(blockedUntil - now, 0) + stateTtl)
redis.call('PUBLISH', KEYS[3], ARGV[11])
return {level, blockedUntil}
`;
