//! Passcodes and opaque session tokens, shared by my-tickets (D8) and the reseller portal
//! (D10.1, D15.4, D16.16): 6-digit codes and 256-bit tokens from the OS RNG, stored only as
//! keyed hashes (the keyring's HMAC) and compared in constant time; the D8.2 send limits.
//! Nothing here is logged.
use rand::Rng;

use super::crypto::Keyring;
use crate::store::customers::RecentSends;

/// A passcode lives 10 minutes (D8.2).
pub const CODE_LIFE_MS: i64 = 10 * 60_000;
/// One passcode per recipient (and campaign, for my-tickets) per minute (D8.2).
pub const RESEND_COOLDOWN_MS: i64 = 60_000;
/// At most 5 passcodes per recipient per hour (D8.2).
pub const SENDS_PER_HOUR: i64 = 5;
/// A portal session lives 12 hours after its last use (D10.1).
pub const PORTAL_SESSION_MS: i64 = 12 * 3_600_000;

/// A fresh 6-digit passcode.
pub fn new_code() -> String {
    format!("{:06}", rand::rngs::OsRng.gen_range(0..1_000_000u32))
}

/// A fresh opaque token (`prefix` + 64 hex digits).
pub fn new_token(prefix: &str) -> String {
    let bytes: [u8; 32] = rand::rngs::OsRng.gen();
    format!("{prefix}{}", hex::encode(bytes))
}

/// What a challenge stores of its code: bound to the challenge, so a code hash is useless
/// for any other challenge.
pub fn code_hash(keyring: &Keyring, challenge_id: &str, code: &str) -> String {
    keyring.hash_secret(&format!("otp:{challenge_id}:{code}"))
}

/// Constant-time check of a presented code.
pub fn code_matches(keyring: &Keyring, challenge_id: &str, code: &str, stored: &str) -> bool {
    keyring.secret_matches(&format!("otp:{challenge_id}:{code}"), stored)
}

/// Whether a presented code is 6 digits (anything else is a 400 before any store read).
pub fn is_code(code: &str) -> bool {
    code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit())
}

/// A send refused by the D8.2 limits: wait this long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Throttled {
    pub retry_after_secs: u64,
    pub message: &'static str,
}

fn secs(ms: i64) -> u64 {
    u64::try_from((ms + 999) / 1000).unwrap_or(1).max(1)
}

/// The resend cooldown and the hourly cap of D8.2 over the recipient's recent challenges.
pub fn send_allowed(recent: &RecentSends, now: i64) -> Result<(), Throttled> {
    if let Some(newest) = recent.newest_in_campaign.filter(|t| now - t < RESEND_COOLDOWN_MS) {
        return Err(Throttled {
            retry_after_secs: secs(newest + RESEND_COOLDOWN_MS - now),
            message: "a passcode was sent to this address less than 60 seconds ago",
        });
    }
    if recent.last_hour >= SENDS_PER_HOUR {
        let oldest = recent.oldest_in_hour.unwrap_or(now);
        return Err(Throttled {
            retry_after_secs: secs(oldest + 3_600_000 - now),
            message: "5 passcodes were sent to this address in the last hour",
        });
    }
    Ok(())
}
