//! Notification delivery (D9.2, D13, D16.11): what one attempt at a queued notification sends,
//! by which transport, and what follows. The message is rendered from what the store knows
//! (`crate::views::notifications`), then sent by e-mail over the account's `notifications.email`
//! SMTP server or the platform's `[email]` (plain SMTP only where private endpoints are allowed,
//! D17.7), or by SMS over the account's own HTTP gateway or Africa's Talking
//! (`notifications.sms.provider`, D18.4; `crate::providers::messaging`). Attempts: at once, then
//! 1 m, 5 m, 30 m, 2 h and 6 h after the attempt before (× `notifications.retry_scale`, D11.4);
//! after the sixth failure the notification is `failed` with its last error. A message that
//! cannot be rendered, or that its peer refuses for good (Africa's Talking's InvalidPhoneNumber),
//! fails at once with the reason. A passcode is scrubbed from the stored
//! payload once the message is final. Secrets (SMTP password, SMS key, passcodes, QR tokens) go
//! into messages only, never into a log line or an error text.
use std::time::Duration;

use serde_json::{json, Value};

use crate::domain::notifications::{carries_passcode, Rendered};
use crate::domain::settings::{BrandingSettings, NotificationsSettings, SmsProvider, SmtpTls};
use crate::domain::time::now_ms;
use crate::providers::messaging::{email, sms, Failure};
use crate::state::AppState;
use crate::store::notifications::Notification;
use crate::telemetry::metrics;
use crate::views::notifications::{self as view, EventFacts, TICKETS_CONFIRMED_EVENT};

/// Delays before attempts 2 to 6, milliseconds (D9.2).
pub const RETRY_DELAYS_MS: [i64; 5] = [60_000, 300_000, 1_800_000, 7_200_000, 21_600_000];
/// Attempts before `failed`.
pub const MAX_ATTEMPTS: i64 = 6;

/// The delay after failed attempt `attempt` (1-based), scaled.
pub fn retry_delay_ms(attempt: i64, scale: f64) -> i64 {
    let i = usize::try_from(attempt.clamp(1, 5) - 1).unwrap_or(0);
    (RETRY_DELAYS_MS[i] as f64 * scale).round() as i64
}

/// What one attempt leaves for the notification's job.
#[derive(Debug, PartialEq)]
pub enum Attempted {
    /// There was nothing to attempt (the notification is gone, or not queued): the job ends.
    Nothing,
    /// The notification is final (sent or failed) and its job ended with it.
    Final,
    /// The attempt failed: the job runs again after `delay_ms`.
    Retry { delay_ms: i64, error: String },
}

/// One attempt at notification `id` at `now`: render, send, and record the outcome.
pub async fn attempt(state: &AppState, id: &str, now: i64) -> anyhow::Result<Attempted> {
    let Some(n) = state.store.notification_by_id(id).await? else {
        return Ok(Attempted::Nothing);
    };
    let Some(attempt) = state.store.start_attempt(&n.id, now).await? else {
        return Ok(Attempted::Nothing);
    };
    let scrub = carries_passcode(&n.event_type).then(|| json!({"scrubbed": true}));
    let (rendered, branding) = match render_branded(state, &n).await {
        Ok(r) => r,
        Err(reason) => {
            tracing::warn!(notification = %n.id, event_type = %n.event_type, %reason, "notification cannot be rendered; failed");
            state
                .store
                .notification_failed(&n.id, &format!("cannot render: {reason}"), scrub.as_ref(), now_ms())
                .await?;
            view::forget_rendered(&n.id);
            return Ok(Attempted::Final);
        }
    };
    let channel: &'static str = n.channel.as_str();
    let sent = match n.channel.as_str() {
        "sms" => send_sms(state, &n, &branding, &rendered).await,
        _ => send_email(state, &n, &branding, &rendered).await.map_err(Failure::from),
    };
    match sent {
        Ok(()) => {
            tracing::info!(notification = %n.id, channel = %n.channel, event_type = %n.event_type, attempt, "notification sent");
            state.store.notification_sent(&n.id, scrub.as_ref(), now_ms()).await?;
            view::forget_rendered(&n.id);
            metrics::notification_outcome(channel, "sent");
            Ok(Attempted::Final)
        }
        Err(Failure { error, permanent }) if permanent || attempt >= MAX_ATTEMPTS => {
            tracing::warn!(notification = %n.id, channel = %n.channel, attempt, permanent, %error, "notification failed for good");
            state.store.notification_failed(&n.id, &error, scrub.as_ref(), now_ms()).await?;
            view::forget_rendered(&n.id);
            metrics::notification_outcome(channel, "failed");
            Ok(Attempted::Final)
        }
        Err(Failure { error, .. }) => {
            let delay_ms = retry_delay_ms(attempt, state.config.notifications.retry_scale);
            tracing::warn!(notification = %n.id, channel = %n.channel, attempt, delay_ms, %error, "notification attempt failed; retrying");
            state.store.notification_retry(&n.id, &error, now).await?;
            metrics::notification_outcome(channel, "retry");
            Ok(Attempted::Retry { delay_ms, error })
        }
    }
}

/// The account's branding (D13.4), typed.
async fn branding(state: &AppState, account_id: &str) -> anyhow::Result<BrandingSettings> {
    Ok(BrandingSettings::from_value(&state.store.settings_category(account_id, "branding").await?))
}

/// The account's `notifications` settings, typed (sealed secrets as stored).
async fn notifications_settings(state: &AppState, account_id: &str) -> Result<NotificationsSettings, String> {
    let v = state.store.settings_category(account_id, "notifications").await.map_err(|e| e.to_string())?;
    Ok(NotificationsSettings::from_value(&v))
}

/// Renders a notification: `payload.title/html/text` when given (direct message), else the
/// event type's template with what the store knows of it. Fails with a reason rather than send
/// an empty body.
pub async fn render(state: &AppState, n: &Notification) -> Result<Rendered, String> {
    Ok(render_branded(state, n).await?.0)
}

/// [`render`], with the account's branding it read: the attempt's sender name may come from it,
/// so one attempt reads it once.
async fn render_branded(state: &AppState, n: &Notification) -> Result<(Rendered, BrandingSettings), String> {
    let branding = branding(state, &n.account_id).await.map_err(|e| format!("settings: {e}"))?;
    let rendered = if view::is_direct(n) {
        view::direct(n, &branding)?
    } else {
        let facts = event_facts(state, n).await?;
        view::event(n, &branding, facts).await?
    };
    Ok((rendered, branding))
}

fn payload_str<'a>(payload: &'a Value, key: &str) -> Option<&'a str> {
    payload.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
}

/// What an event's message shows beyond its payload: the campaign's title (`payload.campaignId`
/// looked up, else `payload.campaign`), and a confirmation's tickets (at least one).
async fn event_facts(state: &AppState, n: &Notification) -> Result<EventFacts, String> {
    let p = &n.payload;
    let campaign = match payload_str(p, "campaignId") {
        Some(id) => match state.store.campaign(&n.account_id, id).await {
            Ok(c) => c.title,
            Err(_) => "your campaign".into(),
        },
        None => payload_str(p, "campaign").unwrap_or("your campaign").to_string(),
    };
    let mut tickets = Vec::new();
    if n.event_type == TICKETS_CONFIRMED_EVENT {
        let reference = payload_str(p, "reference").ok_or("ticket.purchase.confirmed needs payload.reference")?;
        tickets = state.store.account_tickets_of(&n.account_id, reference).await.map_err(|e| e.to_string())?;
        if tickets.is_empty() {
            return Err(format!("no tickets were issued for {reference}"));
        }
    }
    Ok(EventFacts { campaign, tickets })
}

/// Where and as whom the account's e-mail goes out: its own SMTP server when set, else the
/// platform's; plain SMTP (the password and the mail in clear) only where private endpoints are
/// allowed.
fn smtp_for(
    state: &AppState,
    account_id: &str,
    notifications: &NotificationsSettings,
    branding: &BrandingSettings,
) -> Result<email::Smtp, String> {
    let platform_from = state.config.email.from.clone();
    let allow_private = state.config.security.allow_private_endpoints;
    let extra_ca_file = state.config.security.extra_ca_file.clone();
    let timeout = Duration::from_millis(state.config.providers.timeout_ms.max(1000));
    let smtp = if let Some(e) = &notifications.email {
        let password =
            state.unseal_setting(account_id, "notifications.config.email.password", e.password_sealed.as_deref());
        let credentials = e.username.clone().map(|u| (u, password.unwrap_or_default()));
        let from = match (&e.from_address, e.from_name.as_deref().or(branding.platform_name.as_deref())) {
            (Some(a), Some(n)) => format!("{} <{a}>", n.replace(['<', '>', '"'], "")),
            (Some(a), None) => a.to_string(),
            (None, _) => platform_from,
        };
        let (host, port, tls, guard_host) = (e.host.clone(), e.port, e.tls, !allow_private);
        email::Smtp { host, port, tls, credentials, from, guard_host, extra_ca_file, timeout }
    } else {
        let e = state.config.email.endpoint()?.ok_or(
            "no SMTP server: the account has no notifications.email settings and the platform no [email] smtp_url",
        )?;
        let (host, port, tls, credentials) = (e.host, e.port, e.tls, e.credentials);
        email::Smtp { host, port, tls, credentials, from: platform_from, guard_host: false, extra_ca_file, timeout }
    };
    if smtp.tls == SmtpTls::None && !allow_private {
        return Err(
            "plain SMTP (smtpTls none, smtp_url ?tls=none) is refused: private endpoints are not allowed".into()
        );
    }
    Ok(smtp)
}

/// Sends one e-mail.
async fn send_email(
    state: &AppState,
    n: &Notification,
    branding: &BrandingSettings,
    m: &Rendered,
) -> Result<(), String> {
    let notifications = notifications_settings(state, &n.account_id).await?;
    let smtp = smtp_for(state, &n.account_id, &notifications, branding)?;
    email::send(&smtp, &n.recipient, m).await
}

/// Sends one SMS over the account's `notifications.sms.provider`: its own HTTP gateway (D13.3),
/// from its `senderId`, else its platform name, else "Tessera"; or Africa's Talking (D18.4), from
/// its `senderId` when set (Africa's Talking refuses a sender it has not registered, so no name is
/// made up), at its `baseUrl` or Africa's Talking's host for the username.
async fn send_sms(
    state: &AppState,
    n: &Notification,
    branding: &BrandingSettings,
    m: &Rendered,
) -> Result<(), Failure> {
    let settings = notifications_settings(state, &n.account_id).await?.sms;
    let api_key = state
        .unseal_setting(&n.account_id, "notifications.config.sms.apiKey", settings.api_key_sealed.as_deref())
        .ok_or("the account's SMS gateway has no usable apiKey")?;
    let text = m.text.trim();
    match settings.provider {
        SmsProvider::Http => {
            let base_url =
                settings.base_url.as_deref().ok_or("the account has no SMS gateway (notifications.sms.baseUrl)")?;
            let from =
                settings.sender_id.or_else(|| branding.platform_name.clone()).unwrap_or_else(|| "Tessera".to_string());
            Ok(sms::send(&state.outbound, sms::Gateway { base_url, api_key, from }, &n.recipient, text).await?)
        }
        SmsProvider::AfricasTalking => {
            let username = settings
                .username
                .as_deref()
                .ok_or("the account's Africa's Talking SMS has no notifications.sms.username")?;
            let base_url = settings.base_url.as_deref().unwrap_or_else(|| sms::africastalking_default_url(username));
            let at = sms::AfricasTalking { base_url, username, api_key, from: settings.sender_id.as_deref() };
            sms::send_africastalking(&state.outbound, at, &n.recipient, text).await
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn retries_follow_the_d9_schedule_scaled() {
        let d: Vec<i64> = (1..=5).map(|a| super::retry_delay_ms(a, 1.0)).collect();
        assert_eq!(d, vec![60_000, 300_000, 1_800_000, 7_200_000, 21_600_000]);
        assert_eq!(super::retry_delay_ms(1, 0.001), 60);
    }
}
