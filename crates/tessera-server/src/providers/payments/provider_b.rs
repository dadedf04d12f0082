//! `provider_b`: the gateway protocol ([`super::gateway`]); webhooks signed in
//! `x-provider_b-signature`, hex HMAC-SHA256 (D6.1).
use super::gateway::{self, gateway_provider};
use super::*;

pub struct ProviderB;

gateway_provider!(ProviderB, ProviderId::B);
