//! `provider_c`: the gateway protocol ([`super::gateway`]); webhooks signed in
//! `x-provider_c-signature`, hex HMAC-SHA256 (D6.1). It differs from `provider_b` only there.
use super::gateway::{self, gateway_provider};
use super::*;

pub struct ProviderC;

gateway_provider!(ProviderC, ProviderId::C);
