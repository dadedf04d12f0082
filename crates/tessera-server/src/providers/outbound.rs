//! Outbound HTTP (D16.25): one place that every call to a provider or gateway goes through.
//! URLs the operator configured are trusted; URLs an account supplied must be https to a public
//! address unless the platform allows private endpoints, checked when saved
//! ([`check_account_url`]) and again, for hostnames, when resolved before each connection (the
//! guarded client's resolver drops every non-public address, so a name that points into the
//! platform's network cannot be used to reach it).
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

pub use crate::domain::urls::{check_account_url, is_public_ip};

/// The HTTP clients of outbound calls.
#[derive(Clone, Debug)]
pub struct Outbound {
    trusted: reqwest::Client,
    guarded: reqwest::Client,
    allow_private: bool,
}

impl Outbound {
    pub fn new(timeout: Duration, allow_private: bool) -> anyhow::Result<Self> {
        let build = || reqwest::Client::builder().timeout(timeout).connect_timeout(timeout.min(Duration::from_secs(5)));
        // A redirect to a literal address would skip the resolver's check: account-supplied
        // endpoints get none (payment APIs answer directly).
        let mut guarded = build().redirect(reqwest::redirect::Policy::none());
        if !allow_private {
            guarded = guarded.dns_resolver(Arc::new(FilteringResolver { keep: is_public_ip }));
        }
        Ok(Outbound { trusted: build().build()?, guarded: guarded.build()?, allow_private })
    }

    /// The client to call `url` with: account-supplied URLs are checked first (D16.25).
    pub fn client_for(&self, url: &str, account_supplied: bool) -> Result<&reqwest::Client, String> {
        if account_supplied {
            check_account_url(url, self.allow_private)?;
            Ok(&self.guarded)
        } else {
            Ok(&self.trusted)
        }
    }
}

/// The error a guarded connection fails with when a name resolves to no allowed address.
#[derive(Debug)]
pub struct BlockedAddress(pub String);

impl std::fmt::Display for BlockedAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} resolves to no public address", self.0)
    }
}

impl std::error::Error for BlockedAddress {}

/// Whether `err` (or one of its causes) is the guard's refusal.
pub fn is_blocked(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if e.is::<BlockedAddress>() {
            return true;
        }
        cur = e.source();
    }
    false
}

/// A resolver that asks the system and keeps only the addresses `keep` accepts (an error when
/// none remain). The guard keeps public addresses; the sandbox keeps loopback ones.
#[derive(Clone, Copy)]
pub(crate) struct FilteringResolver {
    pub(crate) keep: fn(IpAddr) -> bool,
}

impl Resolve for FilteringResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let keep = self.keep;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept: Vec<SocketAddr> = found.into_iter().filter(|a| keep(a.ip())).collect();
            if kept.is_empty() {
                return Err(Box::new(BlockedAddress(host)) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_guarded_resolver_drops_loopback_answers() {
        let r = FilteringResolver { keep: is_public_ip };
        let name: Name = "localhost".parse().expect("name");
        let err = match r.resolve(name).await {
            Ok(_) => panic!("localhost must resolve to nothing allowed"),
            Err(e) => e,
        };
        assert!(is_blocked(err.as_ref()));
    }

    #[tokio::test]
    async fn a_guarded_client_refuses_a_name_that_resolves_to_loopback() {
        let out = Outbound::new(Duration::from_secs(2), false).expect("outbound");
        // A literal address is refused before any connection…
        assert!(out.client_for("https://127.0.0.1/x", true).is_err());
        // …and a name is refused when it resolves.
        let err = out.guarded.get("http://localhost:9/").send().await.expect_err("blocked");
        assert!(is_blocked(&err), "{err:?}");
    }
}
