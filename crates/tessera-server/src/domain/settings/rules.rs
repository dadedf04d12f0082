//! The members of the settings categories, each a type that holds its rule (D4.2): reading one
//! checks it, and a broken rule is its message (`must be …`). Each reads as absent when unset.
use std::collections::BTreeMap;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::{PROVIDERS, SEALED};
use crate::domain::check;
use crate::domain::money;
use crate::domain::payments::FeeBearer;
use crate::providers::payments::ProviderId;

fn value<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    Value::deserialize(d)
}

fn broken<E: de::Error>(message: impl std::fmt::Display) -> E {
    E::custom(message)
}

/// `true` or `false`.
#[derive(Debug, Clone, Copy)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        value(d)?.as_bool().map(Flag).ok_or_else(|| broken("must be a boolean"))
    }
}

/// A string of 1 to `MAX` characters, or a sealed secret as stored (`{"$sealed": …}`, D4.3).
#[derive(Debug, Clone)]
pub enum Text<const MAX: usize> {
    Plain(String),
    /// The ciphertext, if the sealed object holds one.
    Sealed(Option<String>),
}

impl<const MAX: usize> Text<MAX> {
    /// The string as written, unless sealed.
    pub fn raw(&self) -> Option<&str> {
        match self {
            Text::Plain(s) => Some(s),
            Text::Sealed(_) => None,
        }
    }

    /// The string trimmed, when something is left (a setting left blank counts as not set).
    pub fn trimmed(&self) -> Option<String> {
        self.raw().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
    }

    /// The ciphertext of a sealed secret.
    pub fn sealed(&self) -> Option<String> {
        match self {
            Text::Sealed(c) => c.clone(),
            Text::Plain(_) => None,
        }
    }
}

fn sealed_ciphertext(v: &Value) -> Option<Option<String>> {
    let s = v.get(SEALED)?;
    Some(s.as_str().map(str::to_string))
}

impl<'de, const MAX: usize> Deserialize<'de> for Text<MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = value(d)?;
        if let Some(ciphertext) = sealed_ciphertext(&v) {
            return Ok(Text::Sealed(ciphertext));
        }
        match v {
            Value::String(s) if !s.is_empty() && s.chars().count() <= MAX => Ok(Text::Plain(s)),
            _ => Err(broken(format!("must be a string of 1 to {MAX} characters"))),
        }
    }
}

/// An e-mail address of at most `MAX` characters.
#[derive(Debug, Clone)]
pub struct EmailAddress<const MAX: usize>(pub Text<MAX>);

impl<'de, const MAX: usize> Deserialize<'de> for EmailAddress<MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t = Text::<MAX>::deserialize(d)?;
        match t.raw() {
            Some(s) if check::email("", s).is_err() => Err(broken("must be an e-mail address")),
            _ => Ok(EmailAddress(t)),
        }
    }
}

/// An absolute http(s) URL (at most 2048 characters).
#[derive(Debug, Clone)]
pub struct Url(pub Text<2048>);

impl<'de> Deserialize<'de> for Url {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t = Text::<2048>::deserialize(d)?;
        match t.raw() {
            Some(s) if check::url("", s, false).is_err() => Err(broken("must be an absolute http(s) URL")),
            _ => Ok(Url(t)),
        }
    }
}

/// One of the names in `allowed`.
fn one_of<'de, D: Deserializer<'de>>(d: D, allowed: &[&str]) -> Result<String, D::Error> {
    match value(d)? {
        Value::String(s) if allowed.contains(&s.as_str()) => Ok(s),
        _ => Err(broken(format!("must be one of {}", allowed.join(", ")))),
    }
}

/// A payment provider's name (`providers::payments`).
#[derive(Debug, Clone)]
pub struct Provider(pub String);

impl<'de> Deserialize<'de> for Provider {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        one_of(d, &PROVIDERS).map(Provider)
    }
}

/// A provider that can charge a handset without a page (`ussd.provider`, D18.5).
#[derive(Debug, Clone)]
pub struct PushProvider(pub String);

impl<'de> Deserialize<'de> for PushProvider {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = one_of(d, &PROVIDERS)?;
        match push_refusal(&name) {
            Some(why) => Err(broken(why)),
            None => Ok(PushProvider(name)),
        }
    }
}

/// Why `name` cannot charge a USSD vote (D18.5), or `None` when it can.
pub fn push_refusal(name: &str) -> Option<String> {
    let pushes = |n: &&str| ProviderId::parse(n).is_some_and(ProviderId::can_push);
    if pushes(&name) {
        return None;
    }
    let able: Vec<&str> = PROVIDERS.iter().copied().filter(pushes).collect();
    Some(format!("{name} cannot charge a handset without a page; USSD votes need one of {}", able.join(", ")))
}

/// `customer` or `organizer` (D12.3).
#[derive(Debug, Clone, Copy)]
pub struct Bearer(pub FeeBearer);

impl<'de> Deserialize<'de> for Bearer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Bearer(match one_of(d, &["customer", "organizer"])?.as_str() {
            "customer" => FeeBearer::Customer,
            _ => FeeBearer::Organizer,
        }))
    }
}

impl<'de> Deserialize<'de> for super::SmtpTls {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = one_of(d, &super::SmtpTls::NAMES)?;
        super::SmtpTls::parse(&name).ok_or_else(|| broken("must be one of starttls, tls, none"))
    }
}

impl<'de> Deserialize<'de> for super::SmsProvider {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = one_of(d, &super::SmsProvider::NAMES)?;
        super::SmsProvider::parse(&name)
            .ok_or_else(|| broken(format!("must be one of {}", super::SmsProvider::NAMES.join(", "))))
    }
}

/// A number from `MIN` to `MAX`.
#[derive(Debug, Clone, Copy)]
pub struct Number<const MIN: i64, const MAX: i64>(pub f64);

impl<'de, const MIN: i64, const MAX: i64> Deserialize<'de> for Number<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (min, max) = (MIN as f64, MAX as f64);
        match value(d)?.as_f64() {
            Some(n) if n.is_finite() && n >= min && n <= max => Ok(Number(n)),
            _ => Err(broken(format!("must be a number from {min} to {max}"))),
        }
    }
}

/// A whole number from `MIN` to `MAX`.
#[derive(Debug, Clone, Copy)]
pub struct Whole<const MIN: i64, const MAX: i64>(pub i64);

fn whole<'de, D: Deserializer<'de>>(d: D, min: i64, max: i64) -> Result<Option<i64>, D::Error> {
    Ok(value(d)?.as_i64().filter(|n| (min..=max).contains(n)))
}

impl<'de, const MIN: i64, const MAX: i64> Deserialize<'de> for Whole<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        whole(d, MIN, MAX)?.map(Whole).ok_or_else(|| broken(format!("must be a whole number from {MIN} to {MAX}")))
    }
}

/// `security.rateLimitPerMinute`: requests per minute, which can only tighten the platform's
/// (the key directory reads it with the key, `store::keys`).
#[derive(Debug, Clone, Copy)]
pub struct RateLimit;

impl<'de> Deserialize<'de> for RateLimit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        whole(d, 1, 1_000_000)?.map(|_| RateLimit).ok_or_else(|| {
            broken("must be a whole number from 1 to 1000000 (requests per minute; it can only tighten the platform limit)")
        })
    }
}

const GHS_RULE: &str = "must be a GHS amount ≥ 0 with at most 2 decimals";

/// A GHS amount ≥ 0 with at most 2 decimals, as the number written.
#[derive(Debug, Clone, Copy)]
pub struct Ghs(pub Option<f64>);

impl<'de> Deserialize<'de> for Ghs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = value(d)?;
        money::from_ghs("", &v).map_err(|_| broken(GHS_RULE))?;
        Ok(Ghs(v.as_f64()))
    }
}

/// A GHS amount as [`Ghs`], or `null` for none.
#[derive(Debug, Clone, Copy)]
pub struct GhsOrNull(pub Option<i64>);

impl<'de> Deserialize<'de> for GhsOrNull {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match value(d)? {
            Value::Null => Ok(GhsOrNull(None)),
            v => {
                money::from_ghs("", &v).map(|p| GhsOrNull(Some(p))).map_err(|_| broken(format!("{GHS_RULE} (or null)")))
            }
        }
    }
}

/// A port from 1 to 65535.
#[derive(Debug, Clone, Copy)]
pub struct Port(pub u16);

impl<'de> Deserialize<'de> for Port {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        value(d)?
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p >= 1)
            .map(Port)
            .ok_or_else(|| broken("must be a whole number from 1 to 65535"))
    }
}

/// `ussd.callbackToken` (D17.40): a secret of 16 to 256 characters the gateway sends as
/// `?token=`; sealed once stored.
#[derive(Debug, Clone)]
pub struct CallbackToken(pub Option<String>);

impl<'de> Deserialize<'de> for CallbackToken {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = value(d)?;
        if let Some(s) = v.as_str() {
            if !(16..=256).contains(&s.chars().count()) {
                return Err(broken("must be 16 to 256 characters (a secret the gateway sends as ?token=)"));
            }
        }
        Ok(CallbackToken(sealed_ciphertext(&v).flatten()))
    }
}

/// `payments.providers.provider_c.callbackToken` (D18.3): the last segment of the callback URL
/// Tessera gives Hubtel, a secret of 16 to 256 letters, digits, `-` or `_`; sealed once stored.
#[derive(Debug, Clone)]
pub struct PathToken(pub Option<String>);

impl<'de> Deserialize<'de> for PathToken {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = value(d)?;
        if let Some(sealed) = sealed_ciphertext(&v) {
            return Ok(PathToken(sealed));
        }
        let ok = v.as_str().is_some_and(|s| {
            (16..=256).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
        if !ok {
            return Err(broken(
                "must be 16 to 256 letters, digits, '-' or '_' (the last segment of the callback URL Hubtel calls)",
            ));
        }
        Ok(PathToken(None))
    }
}

/// A USSD service code such as `*920*44#` (at most 32 characters).
#[derive(Debug, Clone)]
pub struct ServiceCode(pub Text<32>);

impl<'de> Deserialize<'de> for ServiceCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t = Text::<32>::deserialize(d)?;
        if let Some(code) = t.raw() {
            let body = code.strip_prefix('*').and_then(|c| c.strip_suffix('#'));
            let ok = body.is_some_and(|b| b.split('*').all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit())));
            if !ok {
                return Err(broken("must be a USSD code such as *920*44#"));
            }
        }
        Ok(ServiceCode(t))
    }
}

/// The names a keyed object takes ([`Named`]) and what an unknown one is called.
pub trait Names {
    const ALL: &'static [&'static str];
    /// `provider`, `channel`, `module`.
    const NOUN: &'static str;
}

/// An object keyed by known names (`providers.<name>`, `channels.<name>`, `modules.<name>`),
/// each holding a `T`; an unknown name is a broken rule at its member.
#[derive(Debug, Clone)]
pub struct Named<N, T>(pub BTreeMap<String, T>, PhantomData<N>);

impl<N, T> Default for Named<N, T> {
    fn default() -> Self {
        Named(BTreeMap::new(), PhantomData)
    }
}

impl<'de, N: Names, T: Deserialize<'de>> Deserialize<'de> for Named<N, T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members<N, T>(PhantomData<(N, T)>);
        impl<'de, N: Names, T: Deserialize<'de>> Visitor<'de> for Members<N, T> {
            type Value = Named<N, T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = BTreeMap::new();
                while let Some(name) = map.next_key::<String>()? {
                    if N::ALL.contains(&name.as_str()) {
                        out.insert(name, map.next_value::<T>()?);
                    } else {
                        map.next_value_seed(UnknownSeed::<N>(PhantomData))?;
                    }
                }
                Ok(Named(out, PhantomData))
            }
        }
        d.deserialize_map(Members::<N, T>(PhantomData))
    }
}

/// Reads nothing: the member's name is the broken rule (`unknown provider; one of …`).
struct UnknownSeed<N>(PhantomData<N>);

impl<'de, N: Names> DeserializeSeed<'de> for UnknownSeed<N> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, _: D) -> Result<(), D::Error> {
        Err(broken(format!("unknown {}; one of {}", N::NOUN, N::ALL.join(", "))))
    }
}
