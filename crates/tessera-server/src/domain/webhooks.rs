//! Outbound webhooks (D17.24–27, D17.41): the event types, the endpoint secret's format, the
//! Standard Webhooks signature and the retry schedule. No I/O.
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use rand::RngCore as _;
use sha2::Sha256;

str_enum! {
    /// What an event reports (D17.25): the spec's four, then the ones wave 3 adds.
    pub enum EventType {
        TicketPurchaseConfirmed = "ticket.purchase.confirmed",
        VotePaymentSuccess = "vote.payment.success",
        DonationPaymentSuccess = "donation.payment.success",
        CampaignStatusUpdated = "campaign.status.updated",
        PaymentFailed = "payment.failed",
        PaymentRefunded = "payment.refunded",
        TicketCheckedIn = "ticket.checked_in",
        WithdrawalSucceeded = "withdrawal.succeeded",
        WithdrawalFailed = "withdrawal.failed",
    } else "must be one of ticket.purchase.confirmed, vote.payment.success, donation.payment.success, campaign.status.updated, payment.failed, payment.refunded, ticket.checked_in, withdrawal.succeeded, withdrawal.failed"
}

/// The prefix of an endpoint's signing secret (Standard Webhooks).
pub const SECRET_PREFIX: &str = "whsec_";

/// A new endpoint secret: `whsec_` and the base64 of 32 random bytes.
pub fn new_secret() -> String {
    let mut key = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut key);
    format!("{SECRET_PREFIX}{}", STANDARD.encode(key))
}

/// `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` under the secret's decoded bytes
/// (the part after `whsec_`); `None` when the secret does not decode.
pub fn signature(secret: &str, id: &str, timestamp_secs: i64, body: &str) -> Option<String> {
    let key = STANDARD.decode(secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret)).ok()?;
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&key).ok()?;
    mac.update(format!("{id}.{timestamp_secs}.{body}").as_bytes());
    Some(format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes())))
}

/// The delays before each retry, milliseconds (D17.26): after the first failure 5 s, then
/// 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. An event whose last retry fails is marked failed.
pub const RETRY_DELAYS_MS: [i64; 7] = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

/// An endpoint that has failed without a success for this long is disabled (D17.26).
pub const FAILING_DISABLES_AFTER_MS: i64 = 5 * 24 * 3_600_000;

/// After a rotation the previous secret signs too, for this long (D17.27).
pub const ROTATION_GRACE_MS: i64 = 24 * 3_600_000;

/// The delay before retry number `failures` (1 after the first failure), scaled by
/// `webhooks.retry_scale` and spread by `jitter` in −1..=1 (±20 %); `None` when the retries are
/// used up.
pub fn retry_delay_ms(failures: i64, scale: f64, jitter: f64) -> Option<i64> {
    let index = usize::try_from(failures.checked_sub(1)?).ok()?;
    let base = *RETRY_DELAYS_MS.get(index)? as f64;
    let delay = base * scale * (1.0 + 0.2 * jitter.clamp(-1.0, 1.0));
    Some(delay.round().max(0.0) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_has_seven_retries_scaled_and_jittered_within_twenty_percent() {
        assert_eq!(retry_delay_ms(1, 1.0, 0.0), Some(5_000));
        assert_eq!(retry_delay_ms(7, 1.0, 0.0), Some(36_000_000));
        assert_eq!(retry_delay_ms(8, 1.0, 0.0), None);
        assert_eq!(retry_delay_ms(0, 1.0, 0.0), None);
        assert_eq!(retry_delay_ms(2, 0.001, 0.0), Some(300));
        assert_eq!(retry_delay_ms(1, 1.0, 1.0), Some(6_000));
        assert_eq!(retry_delay_ms(1, 1.0, -5.0), Some(4_000));
    }

    #[test]
    fn the_signature_is_the_standard_webhooks_one() {
        // The Standard Webhooks specification's own example.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = r#"{"test": 2432232314}"#;
        let sig = signature(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body);
        assert_eq!(sig.as_deref(), Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="));
        assert!(new_secret().starts_with("whsec_"));
        assert!(signature(&new_secret(), "a", 1, "b").is_some());
    }
}
