//! `provider_c`: the gateway protocol ([`super::gateway`]); callbacks signed in
//! `x-provider_c-signature`, hex HMAC-SHA256 (D6.1). It differs from `provider_b` only there.
use super::gateway::Gateway;
use super::ProviderId;

pub const PROVIDER_C: Gateway = Gateway(ProviderId::C);
