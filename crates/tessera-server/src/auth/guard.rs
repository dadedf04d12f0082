//! Abuse guards: failed-signature blocking (D2.9) and GCRA rate limits per account and per IP
//! (D2.10, governor). All in memory; every limit can be turned off with 0.
use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

use crate::config::SecurityConfig;

/// The outcome of a limit check, with what the RateLimit headers report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitInfo {
    pub limit: u32,
    pub remaining: u32,
    /// Seconds until the bucket is full again (RateLimit-Reset) or, when refused, until the next
    /// request is allowed (Retry-After).
    pub reset_secs: u64,
}

type Keyed<K> = RateLimiter<K, DefaultKeyedStateStore<K>, DefaultClock, StateInformationMiddleware>;

/// A keyed GCRA limiter; `None` when turned off.
pub struct Limiter<K: std::hash::Hash + Eq + Clone> {
    inner: Option<(Keyed<K>, u32, Duration)>,
}

impl<K: std::hash::Hash + Eq + Clone> Limiter<K> {
    pub fn per_minute(per_minute: u32, burst: u32) -> Self {
        let inner = NonZeroU32::new(per_minute).map(|rate| {
            let burst = NonZeroU32::new(burst.max(1)).unwrap_or(rate);
            let quota = Quota::per_minute(rate).allow_burst(burst);
            let period = Duration::from_secs(60) / rate.get();
            (RateLimiter::keyed(quota).with_middleware::<StateInformationMiddleware>(), burst.get(), period)
        });
        Limiter { inner }
    }

    /// Counts one request for `key`. `Err` carries the wait.
    pub fn check(&self, key: &K) -> Result<Option<LimitInfo>, LimitInfo> {
        let Some((lim, burst, period)) = &self.inner else { return Ok(None) };
        match lim.check_key(key) {
            Ok(snapshot) => {
                let remaining = snapshot.remaining_burst_capacity();
                let reset = period.as_secs_f64() * f64::from(burst - remaining.min(*burst));
                Ok(Some(LimitInfo { limit: *burst, remaining, reset_secs: reset.ceil() as u64 }))
            }
            Err(not_until) => {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                Err(LimitInfo { limit: *burst, remaining: 0, reset_secs: wait.as_secs_f64().ceil().max(1.0) as u64 })
            }
        }
    }

    /// Forgets idle keys (run periodically).
    pub fn retain_recent(&self) {
        if let Some((lim, _, _)) = &self.inner {
            lim.retain_recent();
            lim.shrink_to_fit();
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Window {
    started_ms: i64,
    count: u32,
    blocked_until_ms: i64,
}

/// Counts authentication failures and blocks what fails too often (D2.9):
/// bad signatures per (key id, IP), unknown key ids per IP. A block on a (key, IP) pair never
/// touches other keys used from the same IP, and an IP blocked for probing unknown key ids is
/// refused only for unknown key ids, so tenants sharing the IP keep working.
pub struct FailureGuard {
    limit: u32,
    window_ms: i64,
    block_ms: i64,
    pairs: Mutex<HashMap<(String, IpAddr), Window>>,
    probes: Mutex<HashMap<IpAddr, Window>>,
}

const MAX_TRACKED: usize = 100_000;

impl FailureGuard {
    pub fn new(cfg: &SecurityConfig) -> Self {
        FailureGuard {
            limit: cfg.auth_failure_limit,
            window_ms: cfg.auth_failure_window_secs as i64 * 1000,
            block_ms: cfg.auth_block_secs as i64 * 1000,
            pairs: Mutex::new(HashMap::new()),
            probes: Mutex::new(HashMap::new()),
        }
    }

    fn blocked<K: std::hash::Hash + Eq>(map: &Mutex<HashMap<K, Window>>, key: &K, now_ms: i64) -> Option<u64> {
        let map = map.lock().unwrap_or_else(|p| p.into_inner());
        map.get(key)
            .filter(|w| w.blocked_until_ms > now_ms)
            .map(|w| ((w.blocked_until_ms - now_ms + 999) / 1000) as u64)
    }

    fn record<K: std::hash::Hash + Eq>(&self, map: &Mutex<HashMap<K, Window>>, key: K, now_ms: i64) {
        if self.limit == 0 {
            return;
        }
        let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_TRACKED {
            map.retain(|_, w| w.blocked_until_ms > now_ms || now_ms - w.started_ms < self.window_ms);
        }
        let w = map.entry(key).or_insert(Window { started_ms: now_ms, count: 0, blocked_until_ms: 0 });
        if now_ms - w.started_ms >= self.window_ms {
            *w = Window { started_ms: now_ms, count: 0, blocked_until_ms: w.blocked_until_ms };
        }
        w.count += 1;
        if w.count >= self.limit {
            w.blocked_until_ms = now_ms + self.block_ms;
            w.count = 0;
            w.started_ms = now_ms;
        }
    }

    /// Seconds left on a block of this key id from this IP.
    pub fn pair_blocked(&self, key_id: &str, ip: IpAddr, now_ms: i64) -> Option<u64> {
        if self.limit == 0 {
            return None;
        }
        Self::blocked(&self.pairs, &(key_id.to_string(), ip), now_ms)
    }

    /// Seconds left on a block of this IP for unknown key ids.
    pub fn probe_blocked(&self, ip: IpAddr, now_ms: i64) -> Option<u64> {
        if self.limit == 0 {
            return None;
        }
        Self::blocked(&self.probes, &ip, now_ms)
    }

    pub fn bad_signature(&self, key_id: &str, ip: IpAddr, now_ms: i64) {
        if self.limit == 0 {
            return; // off: not even the key id is copied
        }
        self.record(&self.pairs, (key_id.to_string(), ip), now_ms);
    }

    pub fn unknown_key(&self, ip: IpAddr, now_ms: i64) {
        self.record(&self.probes, ip, now_ms);
    }
}

/// Every guard the HTTP layer consults.
pub struct Guards {
    pub per_account: Limiter<std::sync::Arc<str>>,
    pub per_ip: Limiter<IpAddr>,
    pub failures: FailureGuard,
    account_rate: u32,
    account_burst: u32,
    /// Limiters for accounts that set a tighter `security.rateLimitPerMinute`, one per rate.
    tighter: Mutex<HashMap<u32, std::sync::Arc<Limiter<std::sync::Arc<str>>>>>,
}

impl Guards {
    pub fn new(cfg: &SecurityConfig) -> Self {
        Guards {
            per_account: Limiter::per_minute(cfg.rate_limit_per_account, cfg.rate_limit_per_account_burst),
            per_ip: Limiter::per_minute(cfg.rate_limit_per_ip, cfg.rate_limit_per_ip_burst),
            failures: FailureGuard::new(cfg),
            account_rate: cfg.rate_limit_per_account,
            account_burst: cfg.rate_limit_per_account_burst,
            tighter: Mutex::new(HashMap::new()),
        }
    }

    /// Whether requests are counted per account at all (the platform limit is on): only then
    /// does an admitted request need a place for its RateLimit headers.
    pub fn limits_accounts(&self) -> bool {
        self.account_rate > 0
    }

    /// Counts one request of an account. An account may set its own limit in `security`
    /// settings, but only a tighter one: an override at or above the platform limit (or with the
    /// platform limit off) changes nothing.
    pub fn check_account(
        &self,
        account_id: &std::sync::Arc<str>,
        own_per_minute: Option<u32>,
    ) -> Result<Option<LimitInfo>, LimitInfo> {
        let tighter = own_per_minute.filter(|own| *own > 0 && self.account_rate > 0 && *own < self.account_rate);
        let Some(rate) = tighter else { return self.per_account.check(account_id) };
        let limiter = {
            let mut map = self.tighter.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(rate)
                .or_insert_with(|| std::sync::Arc::new(Limiter::per_minute(rate, self.account_burst.min(rate))))
                .clone()
        };
        limiter.check(account_id)
    }

    /// Forgets idle keys in every limiter.
    pub fn retain_recent(&self) {
        self.per_account.retain_recent();
        self.per_ip.retain_recent();
        for l in self.tighter.lock().unwrap_or_else(|p| p.into_inner()).values() {
            l.retain_recent();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn ten_failures_block_the_pair_and_only_the_pair() {
        let g = FailureGuard::new(&Config::defaults().security);
        let ip: IpAddr = [10, 0, 0, 1].into();
        for _ in 0..9 {
            g.bad_signature("k1", ip, 1_000);
        }
        assert_eq!(g.pair_blocked("k1", ip, 1_000), None);
        g.bad_signature("k1", ip, 1_000);
        assert_eq!(g.pair_blocked("k1", ip, 1_000), Some(300));
        assert_eq!(g.pair_blocked("k2", ip, 1_000), None);
        assert_eq!(g.pair_blocked("k1", [10, 0, 0, 2].into(), 1_000), None);
        assert_eq!(g.pair_blocked("k1", ip, 301_000), None);
    }

    #[test]
    fn failures_spread_beyond_the_window_do_not_block() {
        let g = FailureGuard::new(&Config::defaults().security);
        let ip: IpAddr = [10, 0, 0, 1].into();
        for i in 0..20 {
            g.unknown_key(ip, i * 7_000);
        }
        assert_eq!(g.probe_blocked(ip, 140_000), None);
    }

    #[test]
    fn the_limiter_refuses_past_the_burst_and_reports_the_wait() {
        let l: Limiter<u8> = Limiter::per_minute(60, 3);
        for left in [2, 1, 0] {
            assert_eq!(l.check(&1).expect("allowed").expect("on").remaining, left);
        }
        let refused = l.check(&1).expect_err("refused");
        assert!(refused.reset_secs >= 1);
        assert!(l.check(&2).is_ok());
        assert!(Limiter::<u8>::per_minute(0, 0).check(&1).expect("off").is_none());
    }
}
