//! The guards several instances share through Redis (D17.1): the replay claims of D2.6, the
//! rate-limit counters of D2.10 and the failed-auth counters and blocks of D2.9. Every signed
//! request costs exactly one round trip: one Lua script (atomic on the server) checks the per-IP
//! limit, a block of the key and IP pair, the replay epoch, claims the signature and the nonce
//! (`SET … NX PX`) and counts the account limit. A refused request costs one round trip too
//! (its script counts the IP and the failure). Keys are `<key_prefix>…` (default `tessera:`).
//!
//! Redis is only the shared memory of the guards: PostgreSQL stays the one store of record. When
//! Redis does not answer within `redis.timeout_ms`, the instance marks it down: signed requests
//! are refused with 503 `replay_store_unavailable` (fail closed, D17.2), every limit fails open,
//! and a probe every 250 ms brings it back without a restart.
//!
//! Redis emptied (restarted without its data) is a process restart for the replay store
//! (D17.39): `<prefix>replay:epoch` holds when the shared store began; the signed script writes it
//! anew when it is missing and refuses timestamps older than it.
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::ConnectionManager;
use redis::{Script, Value};
use secrecy::ExposeSecret as _;
use tokio::sync::{mpsc, oneshot};

use crate::auth::guard::LimitInfo;
use crate::config::{RedisConfig, SecurityConfig};

/// GCRA over a key holding the theoretical arrival time in microseconds (server time, so that
/// instances with drifting clocks count alike). `{allowed, remaining, µs}`: when allowed, the
/// time until the bucket is full again; when refused, the wait before the next request.
/// An emission interval of 0 turns the limit off.
const LUA_COMMON: &str = r#"
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function gcra(key, now, emission, burst)
  if emission <= 0 then return {1, -1, 0} end
  local tat = tonumber(redis.call('GET', key))
  if not tat or tat < now then tat = now end
  local new_tat = tat + emission
  local allow_at = new_tat - emission * burst
  if now < allow_at then return {0, 0, allow_at - now} end
  redis.call('SET', key, string.format('%d', new_tat), 'PX', math.max(1, math.ceil((new_tat - now) / 1000)))
  return {1, math.floor((now - allow_at) / emission), new_tat - now}
end
-- The IP limit, then a block of the key and IP pair: a refusal to answer at once, or nil and
-- the IP limit's figures.
local function ip_and_block(ip_key, block_key, emission, burst, now)
  local ip = gcra(ip_key, now, emission, burst)
  if ip[1] == 0 then return {2, ip[3]}, ip end
  local blocked = redis.call('PTTL', block_key)
  if blocked > 0 then return {1, blocked}, ip end
  return nil, ip
end
"#;

/// The handlers, one per kind of request, each over its own keys `K` and arguments `A` (below:
/// `K[i]` is `KEYS[KO + i]`, `A[i]` is `ARGV[AO + i]`), at the batch's `now` (µs).
///
/// `signed`, a verified signed request. K: epoch, ip limit, pair block, signature, nonce,
/// account limit. A: timestamp ms, instance now ms, claim ttl ms, ip emission µs, ip burst,
/// account emission µs, account burst. Answers `{2, wait}` IP limited, `{1, pttl}` pair blocked,
/// `{3}` older than the epoch, `{4}` replayed, or `{0, ip remaining, ip reset, account allowed,
/// remaining, µs}`.
///
/// `admitted`, an admitted domain-key request. K: ip limit, pair block, account limit. A: ip
/// emission, ip burst, account emission, account burst. Answers as `signed` without 3, 4.
///
/// `refused`, a refused request (or, with a failure limit of 0, any request only the IP limit
/// applies to). K: ip limit, block, failure counter. A: ip emission, ip burst, failure limit (0:
/// count nothing), window ms, block ms. Answers `{2, wait}`, `{1, pttl}` blocked, or `{0, ip
/// remaining, ip reset}`.
///
/// `give_back`, one unit back to an account bucket. K: the bucket. A: its emission µs.
const LUA_HANDLERS: &str = r#"
-- The handlers read their keys and arguments in place: KEYS[KO + i], ARGV[AO + i] (no table
-- per request). EPOCH caches the replay epoch for the rest of the batch.
local KO, AO, EPOCH = 0, 0, nil
local H = {}
H.signed = function(now)
  local refused, ip = ip_and_block(KEYS[KO + 2], KEYS[KO + 3], tonumber(ARGV[AO + 4]), tonumber(ARGV[AO + 5]), now)
  if refused then return refused end
  local epoch = EPOCH
  if not epoch then
    epoch = tonumber(redis.call('GET', KEYS[KO + 1]))
    if not epoch then
      epoch = tonumber(ARGV[AO + 2])
      redis.call('SET', KEYS[KO + 1], ARGV[AO + 2])
    end
    EPOCH = epoch
  end
  if tonumber(ARGV[AO + 1]) < epoch then return {3} end
  if not redis.call('SET', KEYS[KO + 4], '1', 'NX', 'PX', ARGV[AO + 3]) then return {4} end
  if not redis.call('SET', KEYS[KO + 5], '1', 'NX', 'PX', ARGV[AO + 3]) then return {4} end
  local acct = gcra(KEYS[KO + 6], now, tonumber(ARGV[AO + 6]), tonumber(ARGV[AO + 7]))
  return {0, ip[2], ip[3], acct[1], acct[2], acct[3]}
end
H.admitted = function(now)
  local refused, ip = ip_and_block(KEYS[KO + 1], KEYS[KO + 2], tonumber(ARGV[AO + 1]), tonumber(ARGV[AO + 2]), now)
  if refused then return refused end
  local acct = gcra(KEYS[KO + 3], now, tonumber(ARGV[AO + 3]), tonumber(ARGV[AO + 4]))
  return {0, ip[2], ip[3], acct[1], acct[2], acct[3]}
end
H.refused = function(now)
  local ip = gcra(KEYS[KO + 1], now, tonumber(ARGV[AO + 1]), tonumber(ARGV[AO + 2]))
  if ip[1] == 0 then return {2, ip[3]} end
  local limit = tonumber(ARGV[AO + 3])
  if limit > 0 then
    local blocked = redis.call('PTTL', KEYS[KO + 2])
    if blocked > 0 then return {1, blocked} end
    local n = redis.call('INCR', KEYS[KO + 3])
    if n == 1 then redis.call('PEXPIRE', KEYS[KO + 3], ARGV[AO + 4]) end
    if n >= limit then
      redis.call('SET', KEYS[KO + 2], '1', 'PX', ARGV[AO + 5])
      redis.call('DEL', KEYS[KO + 3])
    end
  end
  return {0, ip[2], ip[3]}
end
H.give_back = function(now)
  local tat = tonumber(redis.call('GET', KEYS[KO + 1]))
  if not tat then return {0} end
  local back = tat - tonumber(ARGV[AO + 1])
  if back <= now then
    redis.call('DEL', KEYS[KO + 1])
  else
    redis.call('SET', KEYS[KO + 1], string.format('%d', back), 'PX', math.max(1, math.ceil((back - now) / 1000)))
  end
  return {1}
end
"#;

/// The one script every round trip runs: a batch of requests, each `handler, #keys, #args,
/// args…` in ARGV after the count, its keys in order in KEYS. Answers one reply per request.
/// One `TIME` and at most one read of the replay epoch for the batch: its requests arrived
/// together, and nothing else writes the epoch while the script runs.
const LUA_BATCH: &str = r#"
local now = now_us()
local out = {}
local ki, ai = 0, 1
for i = 1, tonumber(ARGV[1]) do
  local h, nk, na = H[ARGV[ai + 1]], tonumber(ARGV[ai + 2]), tonumber(ARGV[ai + 3])
  ai = ai + 3
  KO, AO = ki, ai
  out[i] = h(now)
  ki, ai = ki + nk, ai + na
end
return out
"#;

/// The most requests one round trip carries.
const BATCH_MAX: usize = 64;

/// Round trips in a row past the time limit that mark Redis down.
const SLOW_IN_A_ROW: usize = 5;

/// The shared verdict on one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Over the per-IP limit.
    IpLimited(LimitInfo),
    /// The key and IP pair (or, for unknown key ids, the IP) is blocked: seconds left.
    Blocked(u64),
    /// Signed before the shared store began (Redis was emptied): a stale timestamp.
    BeforeEpoch,
    Replayed,
    /// Admitted: the IP limit's figures and the account limit's verdict (`None`: off).
    Admitted {
        ip: Option<LimitInfo>,
        account: Option<Result<LimitInfo, LimitInfo>>,
    },
}

/// What a refused request counts against (D2.9).
pub enum Failure<'a> {
    /// Only the IP limit (a malformed or inactive credential).
    Nothing,
    /// An unknown key id from this IP.
    UnknownKey,
    /// A bad signature or secret for this key id from this IP.
    BadSecret(&'a str),
}

/// Redis did not answer (or answered nonsense) within the time limit.
#[derive(Debug, Clone, Copy)]
pub struct Unavailable;

/// Per-minute rate and burst as a GCRA emission interval (µs) and burst; (0, 0) when off.
fn gcra_args(per_minute: u32, burst: u32) -> (u64, u32) {
    if per_minute == 0 {
        return (0, 0);
    }
    (60_000_000 / u64::from(per_minute), burst.max(1))
}

/// What the guards and their connection drivers share.
struct Core {
    timeout: Duration,
    down: AtomicBool,
    /// Round trips in a row that did not answer in time.
    slow: AtomicUsize,
    batch: Script,
}

/// One request's script call waiting for its batch.
struct Call {
    handler: &'static str,
    keys: Vec<String>,
    args: Vec<u64>,
    reply: oneshot::Sender<Result<Vec<i64>, Unavailable>>,
}

type Calls = Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Call>>>;

pub struct SharedGuards {
    connections: Vec<ConnectionManager>,
    calls: mpsc::UnboundedSender<Call>,
    core: Arc<Core>,
    prefix: String,
    ip: (u64, u32),
    account: (u32, u32),
    failure_limit: u32,
    failure_window_ms: u64,
    block_ms: u64,
}

impl SharedGuards {
    /// Connects lazily: an instance whose Redis is unreachable at start starts anyway (D17.39)
    /// and answers signed requests 503 until it is back. Starts one driver per connection (so
    /// it must be called inside the runtime); they stop when the guards are dropped.
    pub fn new(redis: &RedisConfig, security: &SecurityConfig) -> anyhow::Result<Self> {
        let client = redis::Client::open(redis.url.expose_secret())
            .map_err(|e| anyhow::anyhow!("redis.url (REDIS_URL) is not a Redis URL: {:?}", e.kind()))?;
        let timeout = Duration::from_millis(redis.timeout_ms);
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout.max(Duration::from_millis(500))))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_millis(250));
        let connections = (0..redis.connections.max(1))
            .map(|_| ConnectionManager::new_lazy_with_config(client.clone(), config.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow::anyhow!("redis: {e}"))?;
        let core = Arc::new(Core {
            timeout,
            down: AtomicBool::new(false),
            slow: AtomicUsize::new(0),
            batch: Script::new(&format!("{LUA_COMMON}{LUA_HANDLERS}{LUA_BATCH}")),
        });
        let (calls, receiver) = mpsc::unbounded_channel();
        let receiver: Calls = Arc::new(tokio::sync::Mutex::new(receiver));
        for conn in &connections {
            tokio::spawn(drive(conn.clone(), receiver.clone(), core.clone()));
        }
        Ok(SharedGuards {
            connections,
            calls,
            core,
            prefix: redis.key_prefix.clone(),
            ip: gcra_args(security.rate_limit_per_ip, security.rate_limit_per_ip_burst),
            account: (security.rate_limit_per_account, security.rate_limit_per_account_burst),
            failure_limit: security.auth_failure_limit,
            failure_window_ms: security.auth_failure_window_secs * 1000,
            block_ms: security.auth_block_secs * 1000,
        })
    }

    /// Whether the last round trip failed (until the probe sees Redis answer again).
    pub fn is_down(&self) -> bool {
        self.core.down.load(Ordering::Relaxed)
    }

    fn key(&self, parts: &[&str]) -> String {
        let mut k = String::with_capacity(self.prefix.len() + parts.iter().map(|p| p.len() + 1).sum::<usize>());
        k.push_str(&self.prefix);
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                k.push(':');
            }
            k.push_str(p);
        }
        k
    }

    /// An account's bucket, one per rate (as in memory, D2.10): an account that sets its own
    /// limit starts that limit with a full bucket.
    fn account_key(&self, account_id: &str, emission: u64) -> String {
        self.key(&["rl", "acct", account_id, &emission.to_string()])
    }

    /// Gives back the unit a request spent of its account's limit, when a later check refused it.
    pub async fn give_back(&self, account_id: &str, own_per_minute: Option<u32>) {
        let (emission, _) = self.account_args(own_per_minute);
        if emission > 0 {
            let key = self.account_key(account_id, emission);
            let _ = self.run("give_back", vec![key], vec![emission]).await;
        }
    }

    /// The account limit's emission and burst, with an account's own tighter limit (D2.10):
    /// an override at or above the platform limit changes nothing.
    fn account_args(&self, own_per_minute: Option<u32>) -> (u64, u32) {
        let (rate, burst) = self.account;
        match own_per_minute.filter(|own| *own > 0 && rate > 0 && *own < rate) {
            Some(own) => gcra_args(own, burst.min(own)),
            None => gcra_args(rate, burst),
        }
    }

    /// Queues one request's call for the next batch and waits for its answer.
    async fn run(&self, handler: &'static str, keys: Vec<String>, args: Vec<u64>) -> Result<Vec<i64>, Unavailable> {
        if self.is_down() {
            return Err(Unavailable);
        }
        let (reply, answer) = oneshot::channel();
        let started = Instant::now();
        if self.calls.send(Call { handler, keys, args, reply }).is_err() {
            return Err(Unavailable);
        }
        let result = answer.await.unwrap_or(Err(Unavailable));
        crate::telemetry::metrics::redis_round_trip(handler, started.elapsed().as_secs_f64());
        if result.is_err() {
            crate::telemetry::metrics::redis_error(handler);
        }
        result
    }

    /// The one round trip of a verified signed request.
    #[allow(clippy::too_many_arguments)]
    pub async fn signed(
        &self,
        ip: &str,
        key_id: &str,
        account_id: &str,
        own_per_minute: Option<u32>,
        nonce: &str,
        mac: &[u8; 32],
        timestamp_ms: i64,
        now_ms: i64,
        claim_ttl_ms: i64,
    ) -> Result<Verdict, Unavailable> {
        let epoch = self.key(&["replay", "epoch"]);
        let ip_key = self.key(&["rl", "ip", ip]);
        let block = self.key(&["auth", "block", key_id, ip]);
        let signature = self.key(&["replay", "s", &hex::encode(&mac[..16])]);
        let nonce = self.key(&["replay", "n", key_id, nonce]);
        let (acct_em, acct_burst) = self.account_args(own_per_minute);
        let account = self.account_key(account_id, acct_em);
        let args = [
            timestamp_ms.max(0) as u64,
            now_ms.max(0) as u64,
            claim_ttl_ms.max(1) as u64,
            self.ip.0,
            u64::from(self.ip.1),
            acct_em,
            u64::from(acct_burst),
        ];
        let v = self.run("signed", vec![epoch, ip_key, block, signature, nonce, account], args.to_vec()).await?;
        Ok(match v[0] {
            3 => Verdict::BeforeEpoch,
            4 => Verdict::Replayed,
            _ => self.verdict(&v, self.ip.1, acct_burst),
        })
    }

    /// The one round trip of an admitted domain-key request.
    pub async fn admitted(
        &self,
        ip: &str,
        key_id: &str,
        account_id: &str,
        own_per_minute: Option<u32>,
    ) -> Result<Verdict, Unavailable> {
        let ip_key = self.key(&["rl", "ip", ip]);
        let block = self.key(&["auth", "block", key_id, ip]);
        let (acct_em, acct_burst) = self.account_args(own_per_minute);
        let account = self.account_key(account_id, acct_em);
        if self.ip.0 == 0 && acct_em == 0 && self.failure_limit == 0 {
            // Nothing to count and no block can exist: no round trip.
            return Ok(Verdict::Admitted { ip: None, account: None });
        }
        let args = [self.ip.0, u64::from(self.ip.1), acct_em, u64::from(acct_burst)];
        let v = self.run("admitted", vec![ip_key, block, account], args.to_vec()).await?;
        Ok(self.verdict(&v, self.ip.1, acct_burst))
    }

    /// The one round trip of a refused request, or of a request only the IP limit applies to
    /// (`Failure::Nothing`).
    pub async fn refused(&self, ip: &str, failure: Failure<'_>) -> Result<Verdict, Unavailable> {
        let ip_key = self.key(&["rl", "ip", ip]);
        let (block, counter, limit) = match failure {
            Failure::Nothing => (self.key(&["auth", "none"]), self.key(&["auth", "none"]), 0),
            Failure::UnknownKey => {
                (self.key(&["auth", "probe-block", ip]), self.key(&["auth", "probe", ip]), self.failure_limit)
            }
            Failure::BadSecret(key_id) => {
                (self.key(&["auth", "block", key_id, ip]), self.key(&["auth", "fail", key_id, ip]), self.failure_limit)
            }
        };
        if self.ip.0 == 0 && limit == 0 {
            // Nothing to count: no round trip.
            return Ok(Verdict::Admitted { ip: None, account: None });
        }
        let args = [self.ip.0, u64::from(self.ip.1), u64::from(limit), self.failure_window_ms, self.block_ms];
        let v = self.run("refused", vec![ip_key, block, counter], args.to_vec()).await?;
        Ok(self.verdict(&v, self.ip.1, 0))
    }

    fn verdict(&self, v: &[i64], ip_burst: u32, account_burst: u32) -> Verdict {
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        match at(0) {
            2 => Verdict::IpLimited(LimitInfo {
                limit: ip_burst,
                remaining: 0,
                reset_secs: secs_up(at(1), 1_000_000).max(1),
            }),
            1 => Verdict::Blocked(secs_up(at(1), 1_000).max(1)),
            _ => {
                let ip = (at(1) >= 0 && self.ip.0 > 0).then(|| LimitInfo {
                    limit: ip_burst,
                    remaining: at(1) as u32,
                    reset_secs: secs_up(at(2), 1_000_000),
                });
                let account = (v.len() >= 6 && at(4) >= 0).then(|| {
                    let info = |remaining| LimitInfo {
                        limit: account_burst,
                        remaining,
                        reset_secs: secs_up(at(5), 1_000_000),
                    };
                    if at(3) == 1 {
                        Ok(info(at(4) as u32))
                    } else {
                        Err(LimitInfo { reset_secs: secs_up(at(5), 1_000_000).max(1), ..info(0) })
                    }
                });
                Verdict::Admitted { ip, account }
            }
        }
    }

    /// Whether Redis answers now (readiness, and the probe that ends a "down" spell).
    pub async fn ping(&self) -> bool {
        self.ping_one(&self.connections[0]).await
    }

    async fn ping_one(&self, conn: &ConnectionManager) -> bool {
        let mut conn = conn.clone();
        let answer = tokio::time::timeout(self.core.timeout, redis::cmd("PING").query_async::<String>(&mut conn)).await;
        matches!(answer, Ok(Ok(ref s)) if s == "PONG")
    }

    /// Writes the replay epoch unless the shared store already has one (D17.39): at start, and
    /// when Redis answers again after an outage, so that the requests that follow are not older
    /// than it. (The signed script writes it too, when Redis was emptied unseen; the request
    /// that finds it missing is then refused as stale, as after a restart.) Marks Redis down
    /// when it does not answer.
    pub async fn begin_epoch(&self, now_ms: i64) -> bool {
        let mut conn = self.connections[0].clone();
        let key = self.key(&["replay", "epoch"]);
        let mut cmd = redis::cmd("SET");
        cmd.arg(&key).arg(now_ms).arg("NX");
        let set = cmd.query_async::<Value>(&mut conn);
        let ok =
            matches!(tokio::time::timeout(self.core.timeout.max(Duration::from_millis(500)), set).await, Ok(Ok(_)));
        if !ok {
            tracing::warn!("redis does not answer; signed requests answer 503 until it does");
            self.core.down.store(true, Ordering::Relaxed);
        }
        ok
    }

    /// Whether every connection answers (a broken one reconnects on its first command).
    async fn ping_all(&self) -> bool {
        for conn in &self.connections {
            if !self.ping_one(conn).await {
                return false;
            }
        }
        true
    }

    /// Runs until cancelled: while Redis is marked down, asks every 250 ms whether it answers
    /// again, and lifts the mark when it does.
    pub async fn probe(&self, cancel: tokio_util::sync::CancellationToken) {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tick.tick() => {}
            }
            if self.is_down() && self.ping_all().await && self.begin_epoch(crate::domain::time::now_ms()).await {
                tracing::info!("redis answers again; signed requests are served");
                self.core.down.store(false, Ordering::Relaxed);
            }
        }
    }
}

/// One connection's driver: takes every call queued (up to [`BATCH_MAX`]), runs them as one
/// batch in one round trip, and answers each. Under load the calls that arrive while a batch is
/// on the wire form the next one, so Redis runs one script and the two sides one write and one
/// read for many requests; with one request at a time a batch is that one request.
async fn drive(mut conn: ConnectionManager, calls: Calls, core: Arc<Core>) {
    let mut batch: Vec<Call> = Vec::with_capacity(BATCH_MAX);
    loop {
        {
            let mut queue = calls.lock().await;
            match queue.recv().await {
                Some(c) => batch.push(c),
                None => return,
            }
            while batch.len() < BATCH_MAX {
                match queue.try_recv() {
                    Ok(c) => batch.push(c),
                    Err(_) => break,
                }
            }
        }
        let mut invocation = core.batch.prepare_invoke();
        invocation.arg(batch.len());
        for c in &batch {
            invocation.arg(c.handler).arg(c.keys.len()).arg(c.args.len());
            for a in &c.args {
                invocation.arg(*a);
            }
            for k in &c.keys {
                invocation.key(k.as_str());
            }
        }
        let answer = tokio::time::timeout(core.timeout, invocation.invoke_async::<Value>(&mut conn)).await;
        let items = match answer {
            Ok(Ok(Value::Array(items))) if items.len() == batch.len() => items,
            Ok(Err(e)) if e.is_timeout() => {
                core.too_slow();
                answer_all(&mut batch);
                continue;
            }
            Err(_) => {
                core.too_slow();
                answer_all(&mut batch);
                continue;
            }
            other => {
                // Refused, dropped, an error of the server or a reply of another shape: Redis
                // is away until the probe sees it answer.
                let why = match other {
                    Ok(Err(e)) => e.to_string(),
                    _ => "an unexpected reply".to_string(),
                };
                tracing::warn!(error = %why, "redis round trip failed; signed requests answer 503 until it is back");
                core.down.store(true, Ordering::Relaxed);
                answer_all(&mut batch);
                continue;
            }
        };
        core.slow.store(0, Ordering::Relaxed);
        for (c, item) in batch.drain(..).zip(items) {
            let _ = c.reply.send(ints(item).ok_or(Unavailable));
        }
    }
}

/// Answers every call of a batch that got no answer: unavailable.
fn answer_all(batch: &mut Vec<Call>) {
    for c in batch.drain(..) {
        let _ = c.reply.send(Err(Unavailable));
    }
}

/// A handler's reply: an array of integers.
fn ints(v: Value) -> Option<Vec<i64>> {
    match v {
        Value::Array(items) if !items.is_empty() => items
            .into_iter()
            .map(|v| match v {
                Value::Int(n) => Some(n),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

impl Core {
    /// A round trip that did not answer in time refuses its own requests; only several in a
    /// row mark Redis down (one slow answer on a loaded machine is not an outage).
    fn too_slow(&self) {
        if self.slow.fetch_add(1, Ordering::Relaxed) + 1 >= SLOW_IN_A_ROW {
            tracing::warn!(
                timeout_ms = self.timeout.as_millis() as u64,
                "redis does not answer in time; signed requests answer 503 until it does"
            );
            self.down.store(true, Ordering::Relaxed);
        }
    }
}

/// A duration in `unit`s per second, rounded up to whole seconds.
fn secs_up(amount: i64, per_second: i64) -> u64 {
    (amount.max(0) as u64).div_ceil(per_second as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_become_emission_intervals() {
        assert_eq!(gcra_args(0, 10), (0, 0));
        assert_eq!(gcra_args(1200, 200), (50_000, 200));
        assert_eq!(gcra_args(600, 0), (100_000, 1));
        assert_eq!(secs_up(1, 1_000_000), 1);
        assert_eq!(secs_up(0, 1_000_000), 0);
        assert_eq!(secs_up(300_000, 1_000), 300);
    }
}
