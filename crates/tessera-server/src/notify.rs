//! Notification content and delivery (D9.2, D13.3–4): templates per event type (minijinja),
//! HTML and text, wrapped in the account's branding; e-mail over SMTP (lettre) with the
//! account's `notifications.email` settings or the platform's `[email]`, over STARTTLS or TLS
//! with the certificate checked (plain only where private endpoints are allowed, D17.7); SMS over the account's
//! HTTP gateway (`POST {sms.baseUrl}/messages`, Bearer `sms.apiKey`) through the outbound guard
//! (D16.25). Secrets (SMTP password, SMS key, passcodes, QR tokens) go into messages only,
//! never into a log line or an error text.
use std::sync::OnceLock;
use std::time::Duration;

use std::sync::Arc;

use minijinja::{context, Environment};
use serde_json::{json, Value};

use crate::domain::money::to_ghs;
use crate::domain::qr;
use crate::domain::settings::{NotificationsSettings, SmtpTls};
use crate::state::AppState;
use crate::store::notifications::Notification;

/// Event type of the my-tickets passcode mail (its payload's code is scrubbed once delivered).
pub const PASSCODE_EVENT: &str = "my_tickets.passcode";
/// Event type of the reseller portal's passcodes (sign-in and `otp/send`), scrubbed alike.
pub const PORTAL_PASSCODE_EVENT: &str = "portal.passcode";

/// Whether a notification carries a passcode (its payload is scrubbed once it is final).
pub fn carries_passcode(event_type: &str) -> bool {
    event_type == PASSCODE_EVENT || event_type == PORTAL_PASSCODE_EVENT
}

/// A rendered message. `inline` holds the images the HTML references as `cid:<id>` (D17.8):
/// they travel as parts of a multipart/related beside the HTML, never as `data:` URIs.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub subject: String,
    pub text: String,
    pub html: String,
    pub inline: Arc<Vec<Inline>>,
}

/// An inline image of a message: its Content-ID (without angle brackets) and PNG bytes.
#[derive(Debug, Clone)]
pub struct Inline {
    pub content_id: String,
    pub png: Vec<u8>,
}

/// The Content-ID of a ticket's QR image: `qr-<code>@tessera`, the code kept to `[A-Za-z0-9-]`.
pub fn qr_content_id(ticket_code: &str) -> String {
    let code: String = ticket_code.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    format!("qr-{code}@tessera")
}

const LAYOUT: &str = r#"<!doctype html>
<html><body style="margin:0;padding:0;background:#f4f4f5;font-family:Helvetica,Arial,sans-serif">
<table width="100%" cellpadding="0" cellspacing="0"><tr><td align="center" style="padding:24px">
<table width="600" cellpadding="0" cellspacing="0" style="background:#ffffff;border-radius:8px">
<tr><td style="background:{{ brand.color }};padding:16px 24px;color:#ffffff;font-size:20px">
{% if brand.logo %}<img src="{{ brand.logo }}" alt="{{ brand.name }}" height="32" style="vertical-align:middle"> {% endif %}{{ brand.name }}</td></tr>
<tr><td style="padding:24px;color:#18181b;font-size:15px;line-height:1.5">{{ content|safe }}</td></tr>
<tr><td style="padding:16px 24px;color:#71717a;font-size:12px">{{ brand.name }}{% if brand.support %} · Questions? <a href="mailto:{{ brand.support }}">{{ brand.support }}</a>{% endif %}</td></tr>
</table></td></tr></table></body></html>"#;

/// (event type, subject, text, html body) templates.
const TEMPLATES: &[(&str, &str, &str, &str)] = &[
    (
        "ticket.purchase.confirmed",
        "Your tickets for {{ campaign }}",
        "Thank you for your purchase.\n\nYour {{ tickets|length }} ticket(s) for {{ campaign }}:\n{% for t in tickets %}\n- {{ t.code }} ({{ t.type }}){% if t.attendee %}, {{ t.attendee }}{% endif %}{% endfor %}\n\nShow the code or its QR at the gate. Reference: {{ reference }}.\n{% if support %}Questions: {{ support }}\n{% endif %}",
        r#"<p>Thank you for your purchase.</p><p>Your {{ tickets|length }} ticket(s) for <strong>{{ campaign }}</strong>:</p>
{% for t in tickets %}<div style="border:1px solid #e4e4e7;border-radius:6px;padding:12px;margin:12px 0">
<div style="font-size:18px;font-family:monospace">{{ t.code }}</div><div>{{ t.type }}{% if t.attendee %} · {{ t.attendee }}{% endif %}</div>
<img src="cid:{{ t.cid }}" alt="QR code of ticket {{ t.code }}" width="200" height="200"></div>{% endfor %}
<p>Show the code or its QR at the gate. Reference: {{ reference }}.</p>"#,
    ),
    (
        "vote.payment.success",
        "Your votes for {{ campaign }} are counted",
        "Thank you. Your payment of GHS {{ amount }} for {{ quantity }} vote(s) in {{ campaign }} succeeded and the votes are counted.\nReference: {{ reference }}.\n",
        "<p>Thank you. Your payment of GHS {{ amount }} for {{ quantity }} vote(s) in <strong>{{ campaign }}</strong> succeeded and the votes are counted.</p><p>Reference: {{ reference }}.</p>",
    ),
    (
        "donation.payment.success",
        "Thank you for your donation to {{ campaign }}",
        "Thank you. Your donation of GHS {{ amount }} to {{ campaign }} was received.\nReference: {{ reference }}.\n",
        "<p>Thank you. Your donation of GHS {{ amount }} to <strong>{{ campaign }}</strong> was received.</p><p>Reference: {{ reference }}.</p>",
    ),
    (
        "payment.refunded",
        "Refund of GHS {{ amount }} for {{ campaign }}",
        "Your refund of GHS {{ amount }} for {{ campaign }} was sent back to the account you paid from.\n{% if ticketCodes %}These tickets are no longer valid: {{ ticketCodes|join(\", \") }}.\n{% endif %}Reference: {{ reference }}.\n",
        "<p>Your refund of GHS {{ amount }} for <strong>{{ campaign }}</strong> was sent back to the account you paid from.</p>{% if ticketCodes %}<p>These tickets are no longer valid: {{ ticketCodes|join(\", \") }}.</p>{% endif %}<p>Reference: {{ reference }}.</p>",
    ),
    (
        "campaign.status.updated",
        "{{ campaign }} is now {{ to }}",
        "The campaign {{ campaign }} moved from {{ from }} to {{ to }}.\n",
        "<p>The campaign <strong>{{ campaign }}</strong> moved from {{ from }} to <strong>{{ to }}</strong>.</p>",
    ),
    (
        PASSCODE_EVENT,
        "Your passcode for {{ campaign }}",
        "Your passcode to see your tickets for {{ campaign }} is {{ code }}.\nIt works once, for {{ minutes }} minutes. If you did not ask for it, ignore this message.\n",
        "<p>Your passcode to see your tickets for <strong>{{ campaign }}</strong> is</p><p style=\"font-size:28px;letter-spacing:6px;font-family:monospace\">{{ code }}</p><p>It works once, for {{ minutes }} minutes. If you did not ask for it, ignore this message.</p>",
    ),
    (
        PORTAL_PASSCODE_EVENT,
        "Your passcode",
        "Your passcode is {{ code }}.\nIt works once, for {{ minutes }} minutes, to {{ action }}. If you did not ask for it, ignore this message.\n",
        "<p>Your passcode is</p><p style=\"font-size:28px;letter-spacing:6px;font-family:monospace\">{{ code }}</p><p>It works once, for {{ minutes }} minutes, to {{ action }}. If you did not ask for it, ignore this message.</p>",
    ),
];

fn environment() -> &'static Result<Environment<'static>, String> {
    static ENV: OnceLock<Result<Environment<'static>, String>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        let add = |env: &mut Environment<'static>, name: String, src: &'static str| {
            env.add_template_owned(name, src).map_err(|e| e.to_string())
        };
        add(&mut env, "layout.html".into(), LAYOUT)?;
        for (event, subject, text, html) in TEMPLATES {
            add(&mut env, format!("{event}.subject.txt"), subject)?;
            add(&mut env, format!("{event}.txt"), text)?;
            add(&mut env, format!("{event}.html"), html)?;
        }
        Ok(env)
    })
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
}

/// The account's settings category (sealed secrets as stored), `{}` when absent.
pub async fn settings_category(state: &AppState, account_id: &str, category: &str) -> anyhow::Result<Value> {
    Ok(state.store.settings_category(account_id, category).await?)
}

/// The account's `notifications` settings, typed (sealed secrets as stored).
async fn notifications_settings(state: &AppState, account_id: &str) -> Result<NotificationsSettings, String> {
    let v = settings_category(state, account_id, "notifications").await.map_err(|e| e.to_string())?;
    Ok(NotificationsSettings::from_value(&v))
}

/// Branding for the layout (D13.4): the account's, or the platform's name and colour.
fn brand(branding: &Value) -> Value {
    json!({
        "name": str_of(branding, "platformName").unwrap_or("Tessera"),
        "logo": str_of(branding, "logoUrl"),
        "color": str_of(branding, "primaryColor").filter(|c| c.len() <= 32 && c.chars().all(|ch| ch == '#' || ch.is_ascii_alphanumeric())).unwrap_or("#111827"),
        "support": str_of(branding, "supportEmail"),
    })
}

/// Renders a notification: `payload.title/html/text` when given (direct message), else the
/// event type's template. Fails with a reason rather than send an empty body.
pub async fn render(state: &AppState, n: &Notification) -> Result<Rendered, String> {
    let branding = settings_category(state, &n.account_id, "branding").await.map_err(|e| format!("settings: {e}"))?;
    let brand = brand(&branding);
    let env = environment().as_ref().map_err(|e| format!("templates: {e}"))?;
    let layout = |content: &str| {
        env.get_template("layout.html")
            .and_then(|t| t.render(context! { brand => &brand, content => content }))
            .map_err(|e| format!("layout: {e}"))
    };
    let p = &n.payload;
    if str_of(p, "html").is_some() || str_of(p, "text").is_some() {
        let text = str_of(p, "text").map(str::to_string);
        let html = str_of(p, "html").map(str::to_string);
        let subject = n
            .subject
            .clone()
            .or_else(|| str_of(p, "title").map(str::to_string))
            .unwrap_or_else(|| n.event_type.clone());
        let text = text.unwrap_or_else(|| strip_tags(html.as_deref().unwrap_or_default()));
        let html = match html {
            Some(h) => h,
            None => format!("<p>{}</p>", escape(&text).replace('\n', "<br>")),
        };
        return Ok(Rendered { subject, text, html: layout(&html)?, inline: Arc::default() });
    }
    let (ctx, inline) = event_context(state, n).await?;
    let ctx = merge(ctx, json!({"support": brand["support"]}));
    // Templates of a hundred tickets are CPU work too: they run on the render pool (item 5).
    let event_type = n.event_type.clone();
    let (subject, text, html) = pool::run(move || render_templates(env, &event_type, &ctx, &brand)).await??;
    Ok(Rendered { subject: n.subject.clone().unwrap_or(subject), text, html, inline })
}

/// The event type's subject, text and HTML (in the layout) from its context.
fn render_templates(
    env: &Environment<'static>,
    event_type: &str,
    ctx: &Value,
    brand: &Value,
) -> Result<(String, String, String), String> {
    let get = |suffix: &str| {
        env.get_template(&format!("{event_type}.{suffix}"))
            .map_err(|_| format!("no template for event type {event_type:?} and no payload.html or payload.text"))
    };
    let subject = get("subject.txt")?.render(ctx).map_err(|e| format!("subject: {e}"))?;
    let text = get("txt")?.render(ctx).map_err(|e| format!("text: {e}"))?;
    let html = get("html")?.render(ctx).map_err(|e| format!("html: {e}"))?;
    if text.trim().is_empty() || html.trim().is_empty() {
        return Err("the template rendered an empty body".into());
    }
    let html = env
        .get_template("layout.html")
        .and_then(|t| t.render(context! { brand => brand, content => html }))
        .map_err(|e| format!("layout: {e}"))?;
    Ok((subject, text, html))
}

fn merge(mut a: Value, b: Value) -> Value {
    if let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) {
        a.extend(b);
    }
    a
}

async fn campaign_title(state: &AppState, account_id: &str, payload: &Value) -> String {
    match str_of(payload, "campaignId") {
        Some(id) => match state.store.campaign(account_id, id).await {
            Ok(c) => c.title,
            Err(_) => "your campaign".into(),
        },
        None => str_of(payload, "campaign").unwrap_or("your campaign").to_string(),
    }
}

/// Template variables of an event: the payload, plus what the store knows (tickets, titles);
/// and the inline images the HTML references (a confirmation's QR codes, rendered once per
/// notification on the render pool and kept across retries, see [`qr_images`]).
async fn event_context(state: &AppState, n: &Notification) -> Result<(Value, Arc<Vec<Inline>>), String> {
    let p = &n.payload;
    let campaign = campaign_title(state, &n.account_id, p).await;
    let money = |k: &str| p.get(k).and_then(Value::as_i64).map(|a| to_ghs(a).to_string()).unwrap_or_default();
    let base = merge(
        p.clone(),
        json!({"campaign": campaign, "reference": str_of(p, "reference").unwrap_or(""), "amount": money("amount")}),
    );
    let none = Arc::<Vec<Inline>>::default;
    match n.event_type.as_str() {
        "ticket.purchase.confirmed" => {
            let reference = str_of(p, "reference").ok_or("ticket.purchase.confirmed needs payload.reference")?;
            let tickets = state.store.account_tickets_of(&n.account_id, reference).await.map_err(|e| e.to_string())?;
            if tickets.is_empty() {
                return Err(format!("no tickets were issued for {reference}"));
            }
            let codes: Vec<(String, String)> =
                tickets.iter().map(|t| (qr_content_id(&t.ticket_code), t.qr_token.clone())).collect();
            let inline = qr_images(&n.id, codes).await?;
            let items: Vec<Value> = tickets
                .into_iter()
                .map(|t| {
                    json!({"code": t.ticket_code, "type": t.ticket_type_name, "attendee": t.attendee_name,
                           "cid": qr_content_id(&t.ticket_code)})
                })
                .collect();
            Ok((merge(base, json!({"tickets": items})), inline))
        }
        PASSCODE_EVENT | PORTAL_PASSCODE_EVENT => {
            str_of(p, "code").ok_or("the passcode is no longer kept")?;
            Ok((merge(base, json!({"minutes": p.get("minutes").cloned().unwrap_or(json!(10))})), none()))
        }
        "campaign.status.updated" => Ok((
            merge(base, json!({"from": str_of(p, "from").unwrap_or("?"), "to": str_of(p, "to").unwrap_or("?")})),
            none(),
        )),
        _ => Ok((merge(base, json!({"quantity": p.get("quantity").cloned().unwrap_or(json!(1))})), none())),
    }
}

/// The QR images of a confirmation, `(content id, QR token)` in ticket order. Rendered once per
/// notification on the render pool, then kept in [`cache`] until the notification is final, so
/// a retry while no relay answers sends the same bytes without drawing them again (item 5).
/// Only QR images are kept: no passcode ever enters the cache (D9, D13 scrubbing untouched).
async fn qr_images(notification_id: &str, codes: Vec<(String, String)>) -> Result<Arc<Vec<Inline>>, String> {
    if let Some(hit) = cache::get(notification_id) {
        if hit.len() == codes.len() && hit.iter().zip(&codes).all(|(i, (cid, _))| &i.content_id == cid) {
            return Ok(hit);
        }
    }
    let images = pool::run(move || {
        let mut out = Vec::with_capacity(codes.len());
        for (content_id, token) in codes {
            let started = std::time::Instant::now();
            out.push(Inline { content_id, png: qr::png(&token)? });
            // Paced: the thread rests twice as long as the image took, so rendering takes at most
            // about a third of one core and the threads that answer requests keep the rest (item
            // 5: on two cores a render thread drawing flat out cost check-ins a third of their
            // rate, and resting as long as it drew still up to 0.32).
            std::thread::sleep(started.elapsed() * 2);
        }
        crate::telemetry::metrics::qr_images_rendered(out.len() as u64);
        Ok::<_, String>(out)
    })
    .await??;
    let images = Arc::new(images);
    cache::put(notification_id, images.clone());
    Ok(images)
}

/// Forgets what was kept for a notification once it is final (sent or failed).
pub fn forget_rendered(notification_id: &str) {
    cache::remove(notification_id);
}

/// The render pool (item 5): CPU-heavy rendering (QR images, templates) runs on a few
/// dedicated threads — half the cores, at least one — never on the runtime threads that answer requests. A caller waits (asynchronously) for a
/// free thread, so at most that many renders run at once and none queue unboundedly.
mod pool {
    use std::sync::mpsc;
    use std::sync::{Mutex, OnceLock};

    use tokio::sync::{oneshot, Semaphore};

    type Job = Box<dyn FnOnce() + Send>;

    struct Pool {
        jobs: Mutex<mpsc::Sender<Job>>,
        permits: Semaphore,
    }

    fn threads() -> usize {
        std::thread::available_parallelism().map(|n| n.get() / 2).unwrap_or(1).max(1)
    }

    fn pool() -> &'static Pool {
        static POOL: OnceLock<Pool> = OnceLock::new();
        POOL.get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            let rx = std::sync::Arc::new(Mutex::new(rx));
            let n = threads();
            for i in 0..n {
                let rx = rx.clone();
                let spawned = std::thread::Builder::new().name(format!("tessera-render-{i}")).spawn(move || loop {
                    let job = match rx.lock() {
                        Ok(r) => r.recv(),
                        Err(_) => return,
                    };
                    match job {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                });
                if let Err(e) = spawned {
                    tracing::warn!(error = %e, "render thread could not start");
                }
            }
            Pool { jobs: Mutex::new(tx), permits: Semaphore::new(n) }
        })
    }

    /// Runs `f` on the render pool and waits for its result.
    pub async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        let pool = pool();
        let _permit = pool.permits.acquire().await.map_err(|_| "the render pool is closed".to_string())?;
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = tx.send(f());
        });
        pool.jobs
            .lock()
            .map_err(|_| "the render pool is poisoned".to_string())?
            .send(job)
            .map_err(|_| "the render pool is gone".to_string())?;
        rx.await.map_err(|_| "a render panicked".to_string())
    }
}

/// Rendered QR images by notification id, kept across retries and bounded (64 MiB; the oldest
/// entry goes first). Lost on restart: the next attempt then renders once again.
mod cache {
    use std::collections::{HashMap, VecDeque};
    use std::sync::{Arc, Mutex, OnceLock};

    use super::Inline;

    const MAX_BYTES: usize = 64 * 1024 * 1024;

    #[derive(Default)]
    struct Cache {
        entries: HashMap<String, Arc<Vec<Inline>>>,
        order: VecDeque<String>,
        bytes: usize,
    }

    fn size(v: &[Inline]) -> usize {
        v.iter().map(|i| i.png.len() + i.content_id.len()).sum()
    }

    fn cache() -> &'static Mutex<Cache> {
        static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
        CACHE.get_or_init(Mutex::default)
    }

    pub fn get(id: &str) -> Option<Arc<Vec<Inline>>> {
        cache().lock().ok()?.entries.get(id).cloned()
    }

    pub fn put(id: &str, v: Arc<Vec<Inline>>) {
        let Ok(mut c) = cache().lock() else { return };
        let add = size(&v);
        if add > MAX_BYTES {
            return;
        }
        if let Some(old) = c.entries.remove(id) {
            c.bytes -= size(&old);
            c.order.retain(|k| k != id);
        }
        while c.bytes + add > MAX_BYTES {
            let Some(k) = c.order.pop_front() else { break };
            if let Some(old) = c.entries.remove(&k) {
                c.bytes -= size(&old);
            }
        }
        c.bytes += add;
        c.order.push_back(id.to_string());
        c.entries.insert(id.to_string(), v);
    }

    pub fn remove(id: &str) {
        let Ok(mut c) = cache().lock() else { return };
        if let Some(old) = c.entries.remove(id) {
            c.bytes -= size(&old);
            c.order.retain(|k| k != id);
        }
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A plain-text rendering of direct HTML (tags dropped), for the text part.
fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Where and as whom e-mail goes out.
struct Smtp {
    host: String,
    port: u16,
    tls: SmtpTls,
    credentials: Option<(String, String)>,
    from: String,
    account_supplied: bool,
}

fn smtp_for(
    state: &AppState,
    account_id: &str,
    notifications: &NotificationsSettings,
    branding: &Value,
) -> Result<Smtp, String> {
    let platform_from = state.config.email.from.clone();
    let smtp = if let Some(e) = &notifications.email {
        let password =
            state.unseal_setting(account_id, "notifications.config.email.password", e.password_sealed.as_deref());
        let credentials = e.username.clone().map(|u| (u, password.unwrap_or_default()));
        let from = match (&e.from_address, e.from_name.as_deref().or_else(|| str_of(branding, "platformName"))) {
            (Some(a), Some(n)) => format!("{} <{a}>", n.replace(['<', '>', '"'], "")),
            (Some(a), None) => a.to_string(),
            (None, _) => platform_from,
        };
        Smtp { host: e.host.clone(), port: e.port, tls: e.tls, credentials, from, account_supplied: true }
    } else {
        let e = state.config.email.endpoint()?.ok_or(
            "no SMTP server: the account has no notifications.email settings and the platform no [email] smtp_url",
        )?;
        Smtp {
            host: e.host,
            port: e.port,
            tls: e.tls,
            credentials: e.credentials,
            from: platform_from,
            account_supplied: false,
        }
    };
    // Plain SMTP (the password and the mail in clear) only where private endpoints are allowed.
    if smtp.tls == SmtpTls::None && !state.config.security.allow_private_endpoints {
        return Err(
            "plain SMTP (smtpTls none, smtp_url ?tls=none) is refused: private endpoints are not allowed".into()
        );
    }
    Ok(smtp)
}

/// The lettre transport of `smtp` (D17.7): STARTTLS required (`starttls`), implicit TLS (`tls`)
/// or plain (`none`). TLS checks the certificate against the webpki roots plus the PEM bundle of
/// `security.extra_ca_file`; there is no opportunistic mode, so a TLS failure never sends in clear.
fn transport(state: &AppState, smtp: &Smtp) -> Result<lettre::AsyncSmtpTransport<lettre::Tokio1Executor>, String> {
    use lettre::transport::smtp::authentication::Credentials;
    use lettre::transport::smtp::client::{Certificate, CertificateStore, Tls, TlsParameters};
    use lettre::{AsyncSmtpTransport, Tokio1Executor};

    let tls = if smtp.tls == SmtpTls::None {
        Tls::None
    } else {
        let mut params = TlsParameters::builder(smtp.host.clone()).certificate_store(CertificateStore::WebpkiRoots);
        let extra = &state.config.security.extra_ca_file;
        if !extra.is_empty() {
            let pem =
                std::fs::read(extra).map_err(|e| format!("TLS: the extra CA file {extra} cannot be read: {e}"))?;
            let cert = Certificate::from_pem(&pem)
                .map_err(|_| format!("TLS: the extra CA file {extra} is not a PEM certificate bundle"))?;
            params = params.add_root_certificate(cert);
        }
        let params = params.build_rustls().map_err(|e| format!("TLS: {e}"))?;
        if smtp.tls == SmtpTls::Implicit {
            Tls::Wrapper(params)
        } else {
            Tls::Required(params)
        }
    };
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(smtp.host.as_str())
        .port(smtp.port)
        .tls(tls)
        .timeout(Some(Duration::from_millis(state.config.providers.timeout_ms.max(1000))));
    if let Some((user, pass)) = &smtp.credentials {
        builder = builder.credentials(Credentials::new(user.clone(), pass.clone()));
    }
    Ok(builder.build())
}

/// A send error as `lastError` shows it: a TLS failure says which (certificate, handshake, no
/// STARTTLS offered) and that nothing went in clear. lettre's errors name the server's answer,
/// never the credentials.
fn smtp_error(smtp: &Smtp, e: &lettre::transport::smtp::Error) -> String {
    let at = format!("SMTP {}:{} ({})", smtp.host, smtp.port, smtp.tls.as_str());
    match tls_problem(e) {
        Some(problem) => format!("{at}: TLS {problem}; nothing was sent in clear: {e}"),
        None => format!("{at}: {e}"),
    }
}

fn tls_problem(e: &lettre::transport::smtp::Error) -> Option<&'static str> {
    if e.to_string().contains("STARTTLS is not supported") {
        return Some("failed: the server offered no STARTTLS");
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(c) = cause {
        let inner = c
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|i| i as &(dyn std::error::Error + 'static));
        if let Some(r) =
            c.downcast_ref::<rustls::Error>().or_else(|| inner.and_then(|i| i.downcast_ref::<rustls::Error>()))
        {
            return Some(match r {
                rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented => "certificate rejected",
                _ => "handshake failed",
            });
        }
        cause = c.source();
    }
    e.is_tls().then_some("handshake failed")
}

/// An account-supplied SMTP host must resolve to public addresses only, unless the platform
/// allows private endpoints (D16.25).
async fn guard_smtp_host(state: &AppState, s: &Smtp) -> Result<(), String> {
    if !s.account_supplied || state.config.security.allow_private_endpoints {
        return Ok(());
    }
    let addrs = tokio::net::lookup_host((s.host.as_str(), s.port))
        .await
        .map_err(|_| format!("SMTP host {:?} does not resolve", s.host))?;
    let mut any = false;
    for a in addrs {
        any = true;
        if !crate::providers::outbound::is_public_ip(a.ip()) {
            return Err(format!("SMTP host {:?} resolves to a non-public address; refused", s.host));
        }
    }
    if any {
        Ok(())
    } else {
        Err(format!("SMTP host {:?} does not resolve", s.host))
    }
}

/// The MIME body (D17.8): text and HTML as alternatives; with inline images the HTML is a
/// multipart/related of the HTML and one image/png part per `cid:` it references.
fn body(m: &Rendered) -> Result<lettre::message::MultiPart, String> {
    use lettre::message::header::ContentType;
    use lettre::message::{Attachment, MultiPart, SinglePart};
    if m.inline.is_empty() {
        return Ok(MultiPart::alternative_plain_html(m.text.clone(), m.html.clone()));
    }
    let png = ContentType::parse("image/png").map_err(|e| format!("building the message: {e}"))?;
    let mut related = MultiPart::related().singlepart(SinglePart::html(m.html.clone()));
    for i in m.inline.iter() {
        related = related.singlepart(Attachment::new_inline(i.content_id.clone()).body(i.png.clone(), png.clone()));
    }
    Ok(MultiPart::alternative().singlepart(SinglePart::plain(m.text.clone())).multipart(related))
}

/// Sends one e-mail.
pub async fn send_email(state: &AppState, n: &Notification, m: &Rendered) -> Result<(), String> {
    use lettre::message::Mailbox;
    use lettre::{AsyncTransport, Message};

    let notifications = notifications_settings(state, &n.account_id).await?;
    let branding = settings_category(state, &n.account_id, "branding").await.map_err(|e| e.to_string())?;
    let smtp = smtp_for(state, &n.account_id, &notifications, &branding)?;
    guard_smtp_host(state, &smtp).await?;
    let from: Mailbox = smtp.from.parse().map_err(|_| format!("the sender {:?} is not a mailbox", smtp.from))?;
    let to: Mailbox = n.recipient.parse().map_err(|_| "the recipient is not a mailbox".to_string())?;
    let message = Message::builder()
        .from(from)
        .to(to)
        .subject(m.subject.clone())
        .multipart(body(m)?)
        .map_err(|e| format!("building the message: {e}"))?;
    transport(state, &smtp)?.send(message).await.map(|_| ()).map_err(|e| smtp_error(&smtp, &e))
}

/// Sends one SMS through the account's gateway (D13.3).
pub async fn send_sms(state: &AppState, n: &Notification, m: &Rendered) -> Result<(), String> {
    let sms = notifications_settings(state, &n.account_id).await?.sms;
    let branding = settings_category(state, &n.account_id, "branding").await.map_err(|e| e.to_string())?;
    let base = sms.base_url.as_deref().ok_or("the account has no SMS gateway (notifications.sms.baseUrl)")?;
    let key = state
        .unseal_setting(&n.account_id, "notifications.config.sms.apiKey", sms.api_key_sealed.as_deref())
        .ok_or("the account's SMS gateway has no usable apiKey")?;
    let from = sms.sender_id.as_deref().or_else(|| str_of(&branding, "platformName")).unwrap_or("Tessera").to_string();
    let url = format!("{}/messages", base.trim_end_matches('/'));
    let client = state.outbound.client_for(&url, true).map_err(|e| format!("SMS gateway URL refused: {e}"))?;
    let r = client
        .post(&url)
        .bearer_auth(key)
        .json(&json!({"to": n.recipient, "from": from, "text": m.text.trim()}))
        .send()
        .await
        .map_err(|e| format!("SMS gateway unreachable: {}", e.without_url()))?;
    if r.status().is_success() {
        Ok(())
    } else {
        Err(format!("SMS gateway answered {}", r.status().as_u16()))
    }
}
