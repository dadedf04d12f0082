//! The Tessera signing rule (spec "Scheme 2: signed requests", decisions D2.4–D2.6), held once
//! and used by both the server and the client SDK.
//!
//! The signed string is `<timestamp>.<METHOD>.<path>.<body>`:
//! - `timestamp` is the `x-white-label-timestamp` header exactly as sent (Unix milliseconds);
//! - `METHOD` is upper-case;
//! - `path` is the request target as sent, percent-encoding kept, with `?query` when present;
//! - `body` is the raw request bytes, never re-serialized; an empty body is the two bytes `{}`.
//!
//! The signature is the lower-case hex HMAC-SHA256 of that string under the key secret. The nonce
//! is not part of the string; the server keeps both the nonce and the signature single-use.
//!
//! Published vectors: `test-vectors.json` beside this crate's manifest.
#![forbid(unsafe_code)]

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// Header carrying the key identifier of a private key.
pub const HEADER_KEY_ID: &str = "x-white-label-key-id";
/// Header carrying the hex signature.
pub const HEADER_SIGNATURE: &str = "x-white-label-signature";
/// Header carrying the Unix-millisecond timestamp.
pub const HEADER_TIMESTAMP: &str = "x-white-label-timestamp";
/// Header carrying the single-use nonce.
pub const HEADER_NONCE: &str = "x-white-label-nonce";
/// Default accepted clock difference, D2.5.
pub const DEFAULT_TOLERANCE_MS: i64 = 300_000;

type HmacSha256 = Hmac<Sha256>;

/// Why a signature was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyError {
    /// The timestamp header is not a base-10 integer of Unix milliseconds.
    MalformedTimestamp,
    /// The timestamp is further than the tolerance from `now`.
    StaleTimestamp,
    /// The signature is not 64 lower-case hex digits or does not match.
    BadSignature,
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            VerifyError::MalformedTimestamp => "timestamp is not Unix milliseconds",
            VerifyError::StaleTimestamp => "timestamp is outside the accepted clock window",
            VerifyError::BadSignature => "signature does not match",
        })
    }
}

impl std::error::Error for VerifyError {}

/// The body part of the signed string: the raw bytes, or `{}` when there are none.
pub fn body_part(body: &[u8]) -> &[u8] {
    if body.is_empty() {
        b"{}"
    } else {
        body
    }
}

/// Builds the exact byte string that is signed.
pub fn canonical_string(timestamp: &str, method: &str, path: &str, body: &[u8]) -> Vec<u8> {
    let len = timestamp.len() + method.len() + path.len() + body_part(body).len() + 3;
    let mut out = Vec::with_capacity(len);
    canonical_parts(timestamp, method, path, body, |part| out.extend_from_slice(part));
    out
}

/// The signed string's parts in order (`<timestamp>.<METHOD>.<path>.<body>`), each handed to
/// `put`: the one definition of its format, for building it ([`canonical_string`]) and for
/// feeding it to a MAC without building it ([`HmacKey`]: a large body is not copied).
fn canonical_parts(timestamp: &str, method: &str, path: &str, body: &[u8], mut put: impl FnMut(&[u8])) {
    put(timestamp.as_bytes());
    put(b".");
    if method.bytes().any(|b| b.is_ascii_lowercase()) {
        put(method.to_ascii_uppercase().as_bytes());
    } else {
        put(method.as_bytes());
    }
    put(b".");
    put(path.as_bytes());
    put(b".");
    put(body_part(body));
}

fn mac(secret: &[u8], timestamp: &str, method: &str, path: &str, body: &[u8]) -> HmacSha256 {
    HmacKey::new(secret).mac(timestamp, method, path, body)
}

/// A secret made ready to sign or verify: HMAC's keyed state (the key's inner and outer pads,
/// one SHA-256 block each) is computed once, and every request then starts from a copy of it.
/// It holds secret material, as the secret itself does; its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct HmacKey(HmacSha256);

impl std::fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HmacKey(..)")
    }
}

impl HmacKey {
    pub fn new(secret: &[u8]) -> Self {
        // HMAC accepts keys of any length, so this cannot fail.
        HmacKey(<HmacSha256 as Mac>::new_from_slice(secret).unwrap_or_else(|_| unreachable!()))
    }

    /// The MAC of the canonical string, fed in its parts.
    fn mac(&self, timestamp: &str, method: &str, path: &str, body: &[u8]) -> HmacSha256 {
        let mut mac = self.0.clone();
        canonical_parts(timestamp, method, path, body, |part| mac.update(part));
        mac
    }

    /// Checks a signature in constant time, answering the verified MAC's 32 bytes: the server
    /// keeps them as the signature's replay entry, which needs no further hashing (an HMAC
    /// output is already uniform, and only the key's holder can produce one).
    pub fn verified_mac(
        &self,
        timestamp: &str,
        method: &str,
        path: &str,
        body: &[u8],
        signature_hex: &str,
    ) -> Result<[u8; 32], VerifyError> {
        let mut given = [0u8; 32];
        if signature_hex.len() != 64
            || signature_hex.bytes().any(|b| b.is_ascii_uppercase())
            || hex::decode_to_slice(signature_hex, &mut given).is_err()
        {
            return Err(VerifyError::BadSignature);
        }
        let expected = self.mac(timestamp, method, path, body).finalize().into_bytes();
        if bool::from(expected.as_slice().ct_eq(&given)) {
            Ok(given)
        } else {
            Err(VerifyError::BadSignature)
        }
    }
}

/// Signs a request: lower-case hex HMAC-SHA256 of the canonical string.
pub fn sign(secret: &[u8], timestamp: &str, method: &str, path: &str, body: &[u8]) -> String {
    hex::encode(mac(secret, timestamp, method, path, body).finalize().into_bytes())
}

/// Parses the timestamp header and checks it against `now_ms` (both Unix milliseconds).
pub fn check_timestamp(timestamp: &str, now_ms: i64, tolerance_ms: i64) -> Result<i64, VerifyError> {
    if timestamp.is_empty() || timestamp.len() > 16 || !timestamp.bytes().all(|b| b.is_ascii_digit()) {
        return Err(VerifyError::MalformedTimestamp);
    }
    let ts: i64 = timestamp.parse().map_err(|_| VerifyError::MalformedTimestamp)?;
    if (now_ms - ts).abs() > tolerance_ms {
        return Err(VerifyError::StaleTimestamp);
    }
    Ok(ts)
}

/// Checks a signature in constant time. Does not look at the clock.
pub fn verify_signature(
    secret: &[u8],
    timestamp: &str,
    method: &str,
    path: &str,
    body: &[u8],
    signature_hex: &str,
) -> Result<(), VerifyError> {
    HmacKey::new(secret).verified_mac(timestamp, method, path, body, signature_hex).map(|_| ())
}

/// The whole check the server runs, in the order of D2.8: timestamp, then signature.
/// `now_ms` is passed in so that callers (and tests) control the clock.
#[allow(clippy::too_many_arguments)]
pub fn verify(
    secret: &[u8],
    timestamp: &str,
    method: &str,
    path: &str,
    body: &[u8],
    signature_hex: &str,
    now_ms: i64,
    tolerance_ms: i64,
) -> Result<i64, VerifyError> {
    let ts = check_timestamp(timestamp, now_ms, tolerance_ms)?;
    verify_signature(secret, timestamp, method, path, body, signature_hex)?;
    Ok(ts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prepared_key_signs_the_canonical_string_exactly() {
        // The streamed MAC and the MAC of the built canonical string are the same, for a
        // lower-case method, an empty body (signed as `{}`) and a large one alike.
        let big = vec![b'x'; 100_000];
        for (method, body) in [("get", &b""[..]), ("POST", &b"{\"a\":1}"[..]), ("pAtCh", &big[..])] {
            let mut m = <HmacSha256 as Mac>::new_from_slice(b"secret").expect("key");
            m.update(&canonical_string("17", method, "/p?q=1", body));
            let expected = hex::encode(m.finalize().into_bytes());
            assert_eq!(sign(b"secret", "17", method, "/p?q=1", body), expected, "{method}");
            let key = HmacKey::new(b"secret");
            let mac = key.verified_mac("17", method, "/p?q=1", body, &expected).expect("verifies");
            assert_eq!(hex::encode(mac), expected);
            assert!(key.verified_mac("18", method, "/p?q=1", body, &expected).is_err());
        }
    }

    #[test]
    fn the_published_vectors_hold() {
        let vectors: serde_json::Value =
            serde_json::from_str(include_str!("../test-vectors.json")).expect("vectors parse");
        let list = vectors["vectors"].as_array().expect("vectors array");
        assert!(list.len() >= 5);
        for v in list {
            let s = |k: &str| v[k].as_str().expect(k).to_string();
            let canonical = canonical_string(&s("timestamp"), &s("method"), &s("path"), s("body").as_bytes());
            assert_eq!(String::from_utf8(canonical).expect("utf8"), s("canonical"), "{}", s("name"));
            let sig = sign(s("secret").as_bytes(), &s("timestamp"), &s("method"), &s("path"), s("body").as_bytes());
            assert_eq!(sig, s("signature"), "{}", s("name"));
            let ts: i64 = s("timestamp").parse().expect("ts");
            verify(
                s("secret").as_bytes(),
                &s("timestamp"),
                &s("method"),
                &s("path"),
                s("body").as_bytes(),
                &sig,
                ts,
                DEFAULT_TOLERANCE_MS,
            )
            .expect("verifies");
        }
    }

    #[test]
    fn the_clock_window_is_inclusive_of_300_seconds_and_no_more() {
        let now = 1_700_000_000_000;
        assert!(check_timestamp(&(now - 300_000).to_string(), now, DEFAULT_TOLERANCE_MS).is_ok());
        assert!(check_timestamp(&(now + 300_000).to_string(), now, DEFAULT_TOLERANCE_MS).is_ok());
        assert_eq!(
            check_timestamp(&(now - 300_001).to_string(), now, DEFAULT_TOLERANCE_MS),
            Err(VerifyError::StaleTimestamp)
        );
        assert_eq!(
            check_timestamp(&(now + 301_000).to_string(), now, DEFAULT_TOLERANCE_MS),
            Err(VerifyError::StaleTimestamp)
        );
        for bad in ["", "-5", "12a", "1.5", "99999999999999999"] {
            assert_eq!(check_timestamp(bad, now, DEFAULT_TOLERANCE_MS), Err(VerifyError::MalformedTimestamp), "{bad}");
        }
    }

    #[test]
    fn any_changed_part_breaks_the_signature() {
        let sig = sign(b"secret", "1", "POST", "/a?b=c", b"{\"x\":1}");
        assert!(verify_signature(b"secret", "1", "POST", "/a?b=c", b"{\"x\":1}", &sig).is_ok());
        assert!(verify_signature(b"secret", "2", "POST", "/a?b=c", b"{\"x\":1}", &sig).is_err());
        assert!(verify_signature(b"secret", "1", "PUT", "/a?b=c", b"{\"x\":1}", &sig).is_err());
        assert!(verify_signature(b"secret", "1", "POST", "/a?b=d", b"{\"x\":1}", &sig).is_err());
        assert!(verify_signature(b"secret", "1", "POST", "/a?b=c", b"{\"x\": 1}", &sig).is_err());
        assert!(verify_signature(b"other", "1", "POST", "/a?b=c", b"{\"x\":1}", &sig).is_err());
        assert!(verify_signature(b"secret", "1", "POST", "/a?b=c", b"{\"x\":1}", &sig.to_uppercase()).is_err());
        assert!(verify_signature(b"secret", "1", "POST", "/a?b=c", b"{\"x\":1}", &sig[..63]).is_err());
    }

    #[test]
    fn an_empty_body_signs_as_two_braces() {
        assert_eq!(sign(b"k", "1", "GET", "/p", b""), sign(b"k", "1", "GET", "/p", b"{}"));
        assert_eq!(canonical_string("1", "get", "/p", b""), b"1.GET./p.{}".to_vec());
    }
}
