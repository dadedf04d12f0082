//! The sandbox's SMTP sink (D11.3, D13.3, D17.7): enough of RFC 5321 for a real client (lettre)
//! to deliver — HELO/EHLO, STARTTLS, MAIL FROM, RCPT TO, DATA with dot-unstuffing, RSET, NOOP,
//! QUIT — and AUTH PLAIN/LOGIN accepted as given, so clients configured with credentials work.
//! It offers STARTTLS with a certificate it generates at start, issued by its own CA, whose PEM
//! the sandbox writes to `<data-dir>/sandbox-ca.pem`; an extra listener can speak implicit TLS.
//! Each message is parsed with `mail-parser` into `from`, `to`, `subject`, `text`, `html`, `tls`
//! (whether it came over TLS) and `parts` (every leaf part's `contentType`, `contentId`,
//! `disposition` and decoded `size`, so tests see a multipart/related's inline images, D17.8) and
//! kept in memory for `GET /sandbox/mail`.
use std::sync::Arc;

use mail_parser::{MessageParser, MimeHeaders, PartType};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use super::{now_rfc3339, push_bounded, Shared};

/// Largest message accepted (and advertised with SIZE).
const MAX_MESSAGE: usize = 10 * 1024 * 1024;
/// Longest command line.
const MAX_LINE: usize = 4096;

/// The sink's TLS: its CA's PEM (what a client trusts) and the acceptor of its certificate.
pub(super) struct SinkTls {
    pub ca_pem: String,
    pub acceptor: TlsAcceptor,
}

impl SinkTls {
    /// A fresh CA and a server certificate it issues for `localhost`, 127.0.0.1 and ::1
    /// (ECDSA P-256, generated in memory: no download, nothing on disk but the CA's PEM).
    pub fn generate() -> anyhow::Result<SinkTls> {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
            SanType,
        };
        use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

        let ca_key = KeyPair::generate()?;
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, "Tessera sandbox CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let ca_cert = ca.self_signed(&ca_key)?;
        let key = KeyPair::generate()?;
        let mut leaf = CertificateParams::new(vec!["localhost".to_string()])?;
        leaf.subject_alt_names.push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
        leaf.subject_alt_names.push(SanType::IpAddress(std::net::Ipv6Addr::LOCALHOST.into()));
        leaf.distinguished_name.push(DnType::CommonName, "tessera-sandbox");
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = leaf.signed_by(&key, &ca_cert, &ca_key)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone(), ca_cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )?;
        Ok(SinkTls { ca_pem: ca_cert.pem(), acceptor: TlsAcceptor::from(Arc::new(config)) })
    }
}

/// Serves SMTP on `listener`: STARTTLS offered, or TLS from the first byte when `implicit`.
pub(super) async fn serve(listener: TcpListener, shared: Arc<Shared>, implicit: bool) {
    loop {
        let accepted = tokio::select! {
            _ = shared.stop.cancelled() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, _)) => {
                let shared = shared.clone();
                tokio::spawn(async move {
                    let stop = shared.stop.clone();
                    tokio::select! {
                        _ = stop.cancelled() => {}
                        res = connection(stream, &shared, implicit) => {
                            if let Err(e) = res {
                                tracing::debug!(error = %e, "sandbox SMTP session ended");
                            }
                        }
                    }
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "sandbox SMTP accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

/// One client: in clear until STARTTLS (then the dialogue starts over inside TLS, RFC 3207), or
/// inside TLS from the start.
async fn connection(stream: TcpStream, shared: &Shared, implicit: bool) -> std::io::Result<()> {
    let acceptor = &shared.smtp_tls.acceptor;
    if implicit {
        let tls = tokio::time::timeout(IDLE, acceptor.accept(stream)).await??;
        let mut r = BufReader::new(tls);
        reply(r.get_mut(), "220 tessera-sandbox ESMTP ready\r\n").await?;
        dialogue(&mut r, shared, true).await?;
        return Ok(());
    }
    let mut r = BufReader::new(stream);
    reply(r.get_mut(), "220 tessera-sandbox ESMTP ready\r\n").await?;
    if dialogue(&mut r, shared, false).await? == Step::StartTls {
        if !r.buffer().is_empty() {
            // Commands sent ahead of the handshake would be taken as if protected (RFC 3207 §5).
            return Ok(());
        }
        let tls = tokio::time::timeout(IDLE, acceptor.accept(r.into_inner())).await??;
        let mut r = BufReader::new(tls);
        dialogue(&mut r, shared, true).await?;
    }
    Ok(())
}

/// A client silent this long is disconnected, as RFC 5321 servers do (4.5.3.2 suggests 5 min).
const IDLE: std::time::Duration = std::time::Duration::from_secs(300);

/// Reads one CRLF (or LF) line without its terminator; `None` at end of stream.
async fn read_line<R: AsyncRead + Unpin>(r: &mut BufReader<R>, max: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    let n = tokio::time::timeout(IDLE, (&mut *r).take(max as u64 + 2).read_until(b'\n', &mut buf))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "idle client"))??;
    if n == 0 {
        return Ok(None);
    }
    if !buf.ends_with(b"\n") && buf.len() > max {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "line too long"));
    }
    while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        buf.pop();
    }
    Ok(Some(buf))
}

async fn reply<W: AsyncWrite + Unpin>(w: &mut W, text: &str) -> std::io::Result<()> {
    w.write_all(text.as_bytes()).await?;
    w.flush().await
}

/// The `<address>` of `MAIL FROM:<a>` / `RCPT TO:<a>` (parameters after it ignored).
fn path_arg(rest: &str) -> String {
    let rest = rest.trim();
    match (rest.find('<'), rest.find('>')) {
        (Some(a), Some(b)) if b > a => rest[a + 1..b].to_string(),
        _ => rest.split_whitespace().next().unwrap_or_default().to_string(),
    }
}

/// How a dialogue ended.
#[derive(PartialEq, Eq)]
enum Step {
    Done,
    StartTls,
}

/// The SMTP dialogue on `r` (written to through `r.get_mut()`); `tls`: it runs inside TLS.
async fn dialogue<S>(r: &mut BufReader<S>, shared: &Shared, tls: bool) -> std::io::Result<Step>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut from: Option<String> = None;
    let mut rcpts: Vec<String> = Vec::new();
    while let Some(line) = read_line(r, MAX_LINE).await? {
        let line = String::from_utf8_lossy(&line).to_string();
        let (verb, rest) = match line.split_once(' ') {
            Some((v, rest)) => (v.to_ascii_uppercase(), rest.to_string()),
            None => (line.to_ascii_uppercase(), String::new()),
        };
        match verb.as_str() {
            "HELO" => reply(r.get_mut(), "250 tessera-sandbox\r\n").await?,
            "EHLO" => {
                let starttls = if tls { "" } else { "250-STARTTLS\r\n" };
                let text = format!(
                    "250-tessera-sandbox\r\n{starttls}250-8BITMIME\r\n250-SMTPUTF8\r\n250-AUTH PLAIN LOGIN\r\n250 SIZE {MAX_MESSAGE}\r\n"
                );
                reply(r.get_mut(), &text).await?
            }
            "AUTH" => {
                let mut parts = rest.split_whitespace();
                let mech = parts.next().unwrap_or_default().to_ascii_uppercase();
                let initial = parts.next();
                match mech.as_str() {
                    "PLAIN" => {
                        if initial.is_none() {
                            reply(r.get_mut(), "334 \r\n").await?;
                            if read_line(r, MAX_LINE).await?.is_none() {
                                return Ok(Step::Done);
                            }
                        }
                    }
                    "LOGIN" => {
                        if initial.is_none() {
                            reply(r.get_mut(), "334 VXNlcm5hbWU6\r\n").await?;
                            if read_line(r, MAX_LINE).await?.is_none() {
                                return Ok(Step::Done);
                            }
                        }
                        reply(r.get_mut(), "334 UGFzc3dvcmQ6\r\n").await?;
                        if read_line(r, MAX_LINE).await?.is_none() {
                            return Ok(Step::Done);
                        }
                    }
                    _ => {
                        reply(r.get_mut(), "504 5.5.4 Unrecognized authentication type\r\n").await?;
                        continue;
                    }
                }
                reply(r.get_mut(), "235 2.7.0 Authentication successful\r\n").await?
            }
            "MAIL" => {
                let arg = rest.split_once(':').map(|(_, a)| a).unwrap_or_default();
                from = Some(path_arg(arg));
                rcpts.clear();
                reply(r.get_mut(), "250 2.1.0 OK\r\n").await?
            }
            "RCPT" => {
                if from.is_none() {
                    reply(r.get_mut(), "503 5.5.1 MAIL first\r\n").await?;
                    continue;
                }
                let arg = rest.split_once(':').map(|(_, a)| a).unwrap_or_default();
                rcpts.push(path_arg(arg));
                reply(r.get_mut(), "250 2.1.5 OK\r\n").await?
            }
            "DATA" => {
                if from.is_none() || rcpts.is_empty() {
                    reply(r.get_mut(), "503 5.5.1 MAIL and RCPT first\r\n").await?;
                    continue;
                }
                reply(r.get_mut(), "354 End data with <CR><LF>.<CR><LF>\r\n").await?;
                let mut data: Vec<u8> = Vec::new();
                let mut too_big = false;
                loop {
                    let Some(l) = read_line(r, MAX_MESSAGE).await? else { return Ok(Step::Done) };
                    if l == b"." {
                        break;
                    }
                    let l = if l.starts_with(b".") { &l[1..] } else { &l[..] };
                    if data.len() + l.len() + 2 > MAX_MESSAGE {
                        too_big = true;
                        continue;
                    }
                    data.extend_from_slice(l);
                    data.extend_from_slice(b"\r\n");
                }
                if too_big {
                    reply(r.get_mut(), "552 5.3.4 Message too big\r\n").await?;
                } else {
                    let envelope_from = from.take().unwrap_or_default();
                    let mut entry = parse_message(&data, &envelope_from, &rcpts);
                    entry["tls"] = json!(tls);
                    push_bounded(&mut shared.db().mail, entry);
                    reply(r.get_mut(), "250 2.0.0 OK queued\r\n").await?;
                }
                from = None;
                rcpts.clear();
            }
            "RSET" => {
                from = None;
                rcpts.clear();
                reply(r.get_mut(), "250 2.0.0 OK\r\n").await?
            }
            "NOOP" => reply(r.get_mut(), "250 2.0.0 OK\r\n").await?,
            "QUIT" => {
                reply(r.get_mut(), "221 2.0.0 Bye\r\n").await?;
                return Ok(Step::Done);
            }
            "STARTTLS" if tls => reply(r.get_mut(), "503 5.5.1 TLS already active\r\n").await?,
            "STARTTLS" => {
                reply(r.get_mut(), "220 2.0.0 Ready to start TLS\r\n").await?;
                return Ok(Step::StartTls);
            }
            _ => reply(r.get_mut(), "502 5.5.2 Command not recognized\r\n").await?,
        }
    }
    Ok(Step::Done)
}

/// A received message as `GET /sandbox/mail` lists it. Header addresses win; the envelope fills
/// in what the headers lack.
fn parse_message(raw: &[u8], envelope_from: &str, rcpts: &[String]) -> Value {
    let parsed = MessageParser::default().parse(raw);
    let header_from = parsed.as_ref().and_then(|m| m.from()).and_then(|a| a.first()).and_then(|a| a.address());
    let header_to: Vec<String> = parsed
        .as_ref()
        .and_then(|m| m.to())
        .map(|a| a.iter().filter_map(|x| x.address().map(str::to_string)).collect())
        .unwrap_or_default();
    let to = if header_to.is_empty() { rcpts.to_vec() } else { header_to };
    let (mut text, mut html, mut parts) = (None, None, Vec::new());
    if let Some(m) = &parsed {
        for part in &m.parts {
            match &part.body {
                PartType::Text(t) if text.is_none() => text = Some(t.to_string()),
                PartType::Html(h) if html.is_none() => html = Some(h.to_string()),
                _ => {}
            }
            if part.is_multipart() {
                continue;
            }
            let content_type = part.content_type().map(|c| match c.subtype() {
                Some(sub) => format!("{}/{sub}", c.ctype()),
                None => c.ctype().to_string(),
            });
            parts.push(json!({
                "contentType": content_type,
                "contentId": part.content_id(),
                "disposition": part.content_disposition().map(|d| d.ctype().to_string()),
                "size": part.contents().len(),
            }));
        }
    }
    json!({
        "from": header_from.unwrap_or(envelope_from),
        "to": to.join(", "),
        "subject": parsed.as_ref().and_then(|m| m.subject()),
        "text": text,
        "html": html,
        "parts": parts,
        "envelope": {"from": envelope_from, "to": rcpts},
        "at": now_rfc3339(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multipart_message_is_read_into_its_parts() {
        let raw = b"From: Tessera <tickets@demo.localhost>\r\nTo: ama@example.com\r\nSubject: Your tickets\r\n\
MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=\"b\"\r\n\r\n--b\r\n\
Content-Type: text/plain; charset=utf-8\r\n\r\nHello Ama\r\n--b\r\nContent-Type: text/html; charset=utf-8\r\n\r\n\
<p>Hello Ama</p>\r\n--b--\r\n";
        let v = parse_message(raw, "bounce@demo.localhost", &["ama@example.com".into()]);
        assert_eq!(v["from"], "tickets@demo.localhost");
        assert_eq!(v["to"], "ama@example.com");
        assert_eq!(v["subject"], "Your tickets");
        assert!(v["text"].as_str().is_some_and(|t| t.contains("Hello Ama")), "{v}");
        assert!(v["html"].as_str().is_some_and(|t| t.contains("<p>Hello Ama</p>")), "{v}");
    }
}
