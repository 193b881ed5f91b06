// The pacer's two Lua scripts (src/api/pacer.ts): every check-and-update of a key runs in one of them, so two
// processes cannot both decide a key is free. The state hash's fields are described in src/api/pacer.ts.

// KEYS: state hash, holders zset, waiters zset (id → arrival), waiter liveness zset (id → expiry).
// ARGV: now, permit id, concurrency, lockTtlMs, startRate, minRate, maxRate, stateTtlMs, pollMs, graceMs, idleMs
// → {1, paced, "ok"} | {0, waitMs, "blocked"} | {0, waitMs, "busy"}
// paced: 1 when the caller came as soon as the pace allowed (it was waiting for it), 0 when it came more than
// one interval later: then its success does not raise the rate (a pace nobody uses proves nothing).
// Waiters are served first come, first served: without the queue a process that releases and at once
// acquires again would starve the processes polling for the key.
export const ACQUIRE_LUA = `
local now = tonumber(ARGV[1])
local id = ARGV[2]
local concurrency = tonumber(ARGV[3])
local lockTtl = tonumber(ARGV[4])
local startRate = tonumber(ARGV[5])
local minRate = tonumber(ARGV[6])
local maxRate = tonumber(ARGV[7])
local stateTtl = tonumber(ARGV[8])
local poll = tonumber(ARGV[9])
local grace = tonumber(ARGV[10])
local idle = tonumber(ARGV[11])
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
local s = redis.call('HMGET', KEYS[1], 'blockedUntil', 'lastSend', 'rate', 'learned')
local blockedUntil = tonumber(s[1]) or 0
local lastSend = tonumber(s[2]) or 0
local rate = tonumber(s[3])
local learned = tonumber(s[4])
-- A key idle for a while (a new run) starts again at what it learned, or at the start rate.
local fresh = rate == nil or now - math.max(lastSend, blockedUntil) > idle
if fresh then rate = learned or startRate end
rate = math.min(maxRate, math.max(minRate, rate))
local interval = 1000 / rate
local nextAt = lastSend + interval
if fresh then nextAt = 0 end
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
redis.call('HSET', KEYS[1], 'lastSend', now, 'rate', rate)
local paced = 1
if fresh then
  -- A new run measures its throughput from its first call, and ends any hold episode of the last run.
  redis.call('HSET', KEYS[1], 'winCount', 0, 'winBusy', 0, 'inHold', 0)
elseif now - nextAt > interval then
  paced = 0
end
redis.call('PEXPIRE', KEYS[1], math.max(blockedUntil - now, 0) + stateTtl)
return {1, paced, 'ok'}
`;

// KEYS: state hash, holders zset, the key's release channel.
// ARGV: now, permit id, outcome, acquiredAt, minRate, maxRate, holdMs, maxHoldMs, jitterFactor, stateTtlMs,
//       releaser, cut, increase, learnAfter, paced, slowStart
// → {rate (string), blockedUntil}
//
// success: slow start (× slowStart per success: 2 by default, the rate doubles every call) until the key's first
//   cut ever, then additive increase (`increase` × the rate set by the last cut, per second of calls), for
//   calls that came when the pace allowed them. A success after a cut's hold ends the episode; that hold is
//   kept as the next episode's hold after its cut. Before the first cut, a rate that ran `learnAfter`
//   successes clean is learned (safe).
// throttled (new information only: sent after the last refusal): the first two refusals in a row hold the
//   key holdMs, then 2 × holdMs, and change nothing else: the next call probes, and a probe that succeeds
//   shows lone refusals (faults, not a filter: no cut). A third refusal in a row (the second, on a key whose
//   filter needed long holds before) shows a filter that has not decayed: the rate is cut to the lower of
//   rate × cut and the throughput measured since the last cut (successes over their intervals at the pace,
//   plus the holds after cuts: idle time and time in flight are left out) — the learned safe rate from then
//   on — and the key is held for twice the last hold, or the hold that worked last time if longer;
//   refusals that follow before any success double the hold.
export const RELEASE_LUA = `
local now = tonumber(ARGV[1])
local outcome = ARGV[3]
local acquiredAt = tonumber(ARGV[4])
local minRate = tonumber(ARGV[5])
local maxRate = tonumber(ARGV[6])
local holdBase = tonumber(ARGV[7])
local maxHold = tonumber(ARGV[8])
local jitterFactor = tonumber(ARGV[9])
local stateTtl = tonumber(ARGV[10])
local cut = tonumber(ARGV[12])
local increase = tonumber(ARGV[13])
local learnAfter = tonumber(ARGV[14])
local paced = ARGV[15] == '1'
local slowStart = tonumber(ARGV[16])
redis.call('ZREM', KEYS[2], ARGV[2])
local f = {'blockedUntil', 'throttledAt', 'rate', 'learned', 'refusedRate', 'cutRate', 'holdMs', 'workedHold', 'inHold', 'clean', 'winBusy', 'winCount', 'lostMs'}
local v = redis.call('HMGET', KEYS[1], unpack(f))
local blockedUntil = tonumber(v[1]) or 0
local throttledAt = tonumber(v[2]) or 0
local rate = tonumber(v[3])
local learned = tonumber(v[4])
local refusedRate = tonumber(v[5]) or 0
local cutRate = tonumber(v[6]) or 0
local holdMs = tonumber(v[7]) or 0
local workedHold = tonumber(v[8]) or 0
local inHold = tonumber(v[9]) or 0
local clean = tonumber(v[10]) or 0
local winBusy = tonumber(v[11]) or 0
local winCount = tonumber(v[12]) or 0
local lostMs = tonumber(v[13]) or 0
if rate == nil then
  redis.call('PUBLISH', KEYS[3], ARGV[11])
  return {'0', blockedUntil}
end
-- Only what was sent after the last refusal tells something new (requests in flight then do not count twice).
local current = acquiredAt >= throttledAt
-- inHold: 0 none; 1 refused once, held holdBase; 2 refused twice, held 2 × holdBase; 3 cut, held. A key whose
-- filter needed long holds before (workedHold ≥ 16 × holdBase: 16 s by default) is cut at its second refusal already.
if outcome == 'throttled' and current then
  local lone = inHold == 0 or (inHold == 1 and workedHold < 16 * holdBase)
  if lone then
    holdMs = math.min(maxHold, holdBase * 2 ^ inHold)
    inHold = inHold + 1
  elseif inHold == 3 then
    holdMs = math.min(maxHold, holdMs * 2)
  else
    -- What got through since the last cut, over the time the pace and the filter took: each success's
    -- interval and the holds after refusals (lone refusals' holds left out: they may have been faults).
    -- Nothing got through: nothing measured. One cut never goes below cut^6 (1/64).
    local measured = rate
    if winBusy > 0 and winCount > 0 then measured = math.max(winCount * 1000 / winBusy, rate * cut ^ 6) end
    refusedRate = rate
    rate = math.max(minRate, math.min(rate * cut, measured))
    cutRate = rate
    learned = rate
    holdMs = math.min(maxHold, math.max(holdMs * 2, workedHold))
    inHold = 3
    winBusy = 0
    winCount = 0
  end
  clean = 0
  throttledAt = now
  local untilMs = now + math.ceil(holdMs * jitterFactor)
  if untilMs > blockedUntil then
    local extra = untilMs - math.max(now, blockedUntil)
    lostMs = lostMs + extra
    if not lone then winBusy = winBusy + extra end
    blockedUntil = untilMs
  end
elseif outcome == 'success' then
  winCount = winCount + 1
  winBusy = winBusy + 1000 / rate
  if current then
    -- After lone refusals (faults, not a filter that needed to decay) nothing is cut or learned.
    if inHold == 3 then workedHold = holdMs end
    inHold = 0
    if paced and refusedRate == 0 then
      rate = rate * slowStart
    elseif paced then
      rate = rate + increase * cutRate / rate
    end
    rate = math.min(maxRate, math.max(minRate, rate))
    clean = clean + 1
    -- What ran clean is safe until the first refusal; after it, what the filter let through (the cut rate).
    if clean >= learnAfter and refusedRate == 0 then learned = rate end
  end
end
redis.call('HSET', KEYS[1], 'blockedUntil', blockedUntil, 'throttledAt', throttledAt, 'rate', rate, 'refusedRate', refusedRate,
  'cutRate', cutRate, 'holdMs', holdMs, 'workedHold', workedHold, 'inHold', inHold, 'clean', clean,
  'winCount', winCount, 'winBusy', winBusy, 'lostMs', lostMs)
if learned ~= nil then redis.call('HSET', KEYS[1], 'learned', learned) end
redis.call('PEXPIRE', KEYS[1], math.max(blockedUntil - now, 0) + stateTtl)
redis.call('PUBLISH', KEYS[3], ARGV[11])
return {tostring(rate), blockedUntil}
`;
