//! A notification as its recipient sees it (D9.2, D13.4, D17.8): templates per event type
//! (minijinja), HTML and text, wrapped in the account's branding; a direct message's own
//! content; a confirmation's QR codes as inline images. No I/O: the notification flow
//! (`crate::flows::notifications`) reads what a message shows (branding, the campaign, the
//! tickets) and hands it here. CPU-heavy rendering runs on the render pool ([`pool`]); QR
//! images are kept across retries ([`cache`]).
mod cache;
mod pool;

use std::sync::{Arc, OnceLock};

use minijinja::{context, Environment};
use serde_json::{json, Value};

use crate::domain::money::to_ghs;
use crate::domain::notifications::{Inline, Rendered, PASSCODE_EVENT, PORTAL_PASSCODE_EVENT};
use crate::domain::qr;
use crate::domain::settings::BrandingSettings;
use crate::store::notifications::Notification;
use crate::store::tickets::Ticket;

/// Event type of a ticket purchase's confirmation (its tickets and their QR codes).
pub const TICKETS_CONFIRMED_EVENT: &str = "ticket.purchase.confirmed";

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
        TICKETS_CONFIRMED_EVENT,
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

/// Branding for the layout (D13.4): the account's, or the platform's name and colour.
fn brand(branding: &BrandingSettings) -> Value {
    json!({
        "name": branding.platform_name.as_deref().unwrap_or("Tessera"),
        "logo": branding.logo_url,
        "color": branding.primary_color.as_deref().filter(|c| c.len() <= 32 && c.chars().all(|ch| ch == '#' || ch.is_ascii_alphanumeric())).unwrap_or("#111827"),
        "support": branding.support_email,
    })
}

/// The templates, or why they cannot be used.
fn templates() -> Result<&'static Environment<'static>, String> {
    environment().as_ref().map_err(|e| format!("templates: {e}"))
}

fn layout(env: &Environment<'static>, brand: &Value, content: &str) -> Result<String, String> {
    env.get_template("layout.html")
        .and_then(|t| t.render(context! { brand => brand, content => content }))
        .map_err(|e| format!("layout: {e}"))
}

/// Whether a notification is a direct message (`payload.html` or `payload.text` given), which
/// is rendered as given rather than from its event type's template.
pub fn is_direct(n: &Notification) -> bool {
    str_of(&n.payload, "html").is_some() || str_of(&n.payload, "text").is_some()
}

/// A direct message: `payload.title/html/text`, the text from the HTML (or the HTML from the
/// text) when only one is given, in the layout.
pub fn direct(n: &Notification, branding: &BrandingSettings) -> Result<Rendered, String> {
    let brand = brand(branding);
    let env = templates()?;
    let p = &n.payload;
    let text = str_of(p, "text").map(str::to_string);
    let html = str_of(p, "html").map(str::to_string);
    let subject =
        n.subject.clone().or_else(|| str_of(p, "title").map(str::to_string)).unwrap_or_else(|| n.event_type.clone());
    let text = text.unwrap_or_else(|| strip_tags(html.as_deref().unwrap_or_default()));
    let html = match html {
        Some(h) => h,
        None => format!("<p>{}</p>", escape(&text).replace('\n', "<br>")),
    };
    Ok(Rendered { subject, text, html: layout(env, &brand, &html)?, inline: Arc::default() })
}

/// What the store knows that an event's template shows: the campaign's title, and a
/// confirmation's tickets (none for other events).
pub struct EventFacts {
    pub campaign: String,
    pub tickets: Vec<Ticket>,
}

/// An event's message from its type's template. Fails with a reason rather than send an empty
/// body.
pub async fn event(n: &Notification, branding: &BrandingSettings, facts: EventFacts) -> Result<Rendered, String> {
    let brand = brand(branding);
    let env = templates()?;
    let (ctx, inline) = event_context(n, facts).await?;
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
    Ok((subject, text, layout(env, brand, &html)?))
}

fn merge(mut a: Value, b: Value) -> Value {
    if let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) {
        a.extend(b);
    }
    a
}

/// Template variables of an event: the payload, plus what the store knows (tickets, titles);
/// and the inline images the HTML references (a confirmation's QR codes, rendered once per
/// notification on the render pool and kept across retries, see [`qr_images`]).
async fn event_context(n: &Notification, facts: EventFacts) -> Result<(Value, Arc<Vec<Inline>>), String> {
    let p = &n.payload;
    let money = |k: &str| p.get(k).and_then(Value::as_i64).map(|a| to_ghs(a).to_string()).unwrap_or_default();
    let base = merge(
        p.clone(),
        json!({"campaign": facts.campaign, "reference": str_of(p, "reference").unwrap_or(""), "amount": money("amount")}),
    );
    let none = Arc::<Vec<Inline>>::default;
    match n.event_type.as_str() {
        TICKETS_CONFIRMED_EVENT => {
            let codes: Vec<(String, String)> =
                facts.tickets.iter().map(|t| (qr_content_id(&t.ticket_code), t.qr_token.clone())).collect();
            let inline = qr_images(&n.id, codes).await?;
            let items: Vec<Value> = facts
                .tickets
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
