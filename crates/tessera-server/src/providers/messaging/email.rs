//! E-mail over SMTP (lettre, D17.7): over STARTTLS or implicit TLS with the certificate checked
//! against the webpki roots (plus `security.extra_ca_file`), or plain where the caller allowed
//! it; multipart bodies with inline images (D17.8). The notification flow decides the server and
//! the sender ([`Smtp`]); this module only speaks SMTP. Secrets (the password, passcodes, QR
//! tokens) go into messages only, never into a log line or an error text.
use std::time::Duration;

use crate::domain::notifications::Rendered;
use crate::domain::settings::SmtpTls;

/// Where, how and as whom e-mail goes out.
pub struct Smtp {
    pub host: String,
    pub port: u16,
    pub tls: SmtpTls,
    pub credentials: Option<(String, String)>,
    /// The sender, a mailbox (`Name <address>` or an address).
    pub from: String,
    /// Whether the host must resolve to public addresses only (D16.25): an account-supplied
    /// server where the platform does not allow private endpoints.
    pub guard_host: bool,
    /// A PEM bundle trusted beside the webpki roots (`security.extra_ca_file`), or empty.
    pub extra_ca_file: String,
    pub timeout: Duration,
}

/// Sends one e-mail to `recipient` (a mailbox).
pub async fn send(smtp: &Smtp, recipient: &str, m: &Rendered) -> Result<(), String> {
    use lettre::message::Mailbox;
    use lettre::{AsyncTransport, Message};

    guard_smtp_host(smtp).await?;
    let from: Mailbox = smtp.from.parse().map_err(|_| format!("the sender {:?} is not a mailbox", smtp.from))?;
    let to: Mailbox = recipient.parse().map_err(|_| "the recipient is not a mailbox".to_string())?;
    let message = Message::builder()
        .from(from)
        .to(to)
        .subject(m.subject.clone())
        .multipart(body(m)?)
        .map_err(|e| format!("building the message: {e}"))?;
    transport(smtp)?.send(message).await.map(|_| ()).map_err(|e| smtp_error(smtp, &e))
}

/// The lettre transport of `smtp` (D17.7): STARTTLS required (`starttls`), implicit TLS (`tls`)
/// or plain (`none`). TLS checks the certificate against the webpki roots plus the PEM bundle of
/// `security.extra_ca_file`; there is no opportunistic mode, so a TLS failure never sends in clear.
fn transport(smtp: &Smtp) -> Result<lettre::AsyncSmtpTransport<lettre::Tokio1Executor>, String> {
    use lettre::transport::smtp::authentication::Credentials;
    use lettre::transport::smtp::client::{Certificate, CertificateStore, Tls, TlsParameters};
    use lettre::{AsyncSmtpTransport, Tokio1Executor};

    let tls = if smtp.tls == SmtpTls::None {
        Tls::None
    } else {
        let mut params = TlsParameters::builder(smtp.host.clone()).certificate_store(CertificateStore::WebpkiRoots);
        let extra = &smtp.extra_ca_file;
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
        .timeout(Some(smtp.timeout));
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
/// allows private endpoints (D16.25): [`Smtp::guard_host`].
async fn guard_smtp_host(s: &Smtp) -> Result<(), String> {
    if !s.guard_host {
        return Ok(());
    }
    let addrs = tokio::net::lookup_host((s.host.as_str(), s.port))
        .await
        .map_err(|_| format!("SMTP host {:?} does not resolve", s.host))?;
    let mut any = false;
    for a in addrs {
        any = true;
        if !super::super::outbound::is_public_ip(a.ip()) {
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
