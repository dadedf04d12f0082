//! `provider_b`: the gateway protocol ([`super::gateway`]); callbacks signed in
//! `x-provider_b-signature`, hex HMAC-SHA256 (D6.1).
use super::gateway::Gateway;
use super::ProviderId;

pub const PROVIDER_B: Gateway = Gateway(ProviderId::B);
