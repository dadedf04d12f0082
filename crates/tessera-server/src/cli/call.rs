//! `tessera call METHOD PATH [--data JSON] [--field data.id] [-H 'Name: value']…`: one signed
//! request through the SDK (extra headers such as `X-Idempotency-Key` are sent unsigned, as the
//! signing rule only covers the four signed headers), with `TESSERA_URL`, `TESSERA_KEY_ID`, `TESSERA_KEY_SECRET`. Prints the body (or, with
//! `--field`, one value of it, for shell scripts); a non-2xx answer prints the body and exits 1.
use anyhow::Context as _;

pub async fn run(
    method: &str,
    path: &str,
    data: Option<&str>,
    field: Option<&str>,
    headers: &[String],
) -> anyhow::Result<i32> {
    let url = std::env::var("TESSERA_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".to_string());
    let key_id = std::env::var("TESSERA_KEY_ID").context("TESSERA_KEY_ID is not set")?;
    let secret = std::env::var("TESSERA_KEY_SECRET").context("TESSERA_KEY_SECRET is not set")?;
    let method = tessera_client::Method::from_bytes(method.to_ascii_uppercase().as_bytes()).context("METHOD")?;
    if !path.starts_with('/') {
        anyhow::bail!("PATH must start with / (for example /api/white-label/v1/context)");
    }
    let body = match data {
        Some(d) => {
            serde_json::from_str::<serde_json::Value>(d).context("--data is not valid JSON")?;
            d.as_bytes().to_vec()
        }
        None => Vec::new(),
    };
    let mut extra = reqwest::header::HeaderMap::new();
    for h in headers {
        let (name, value) = h.split_once(':').context("a header is `Name: value`")?;
        let name = reqwest::header::HeaderName::from_bytes(name.trim().as_bytes()).context("header name")?;
        extra.insert(name, reqwest::header::HeaderValue::from_str(value.trim()).context("header value")?);
    }
    let client = tessera_client::Client::new(&url, &key_id, &secret)?;
    let resp = client.send_raw(method, path, body, Some(extra)).await.with_context(|| format!("calling {url}"))?;
    let ok = (200..300).contains(&resp.status);
    let text = match field.filter(|_| ok) {
        None => String::from_utf8_lossy(&resp.body).into_owned(),
        Some(f) => match pick(&resp.json(), f) {
            Some(serde_json::Value::String(s)) => s,
            Some(v) => v.to_string(),
            None => anyhow::bail!("the answer has no field {f:?}: {}", String::from_utf8_lossy(&resp.body)),
        },
    };
    {
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), "{text}");
    }
    Ok(if ok { 0 } else { 1 })
}

/// The value at a dotted path (`data.ticketTypes.0.id`).
fn pick(v: &serde_json::Value, path: &str) -> Option<serde_json::Value> {
    path.split('.')
        .try_fold(v, |v, part| match part.parse::<usize>() {
            Ok(i) if v.is_array() => v.get(i),
            _ => v.get(part),
        })
        .cloned()
}
