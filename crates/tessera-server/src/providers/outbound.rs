//! Outbound HTTP (D16.25): one place that every call to a provider or gateway goes through.
//! URLs the operator configured are trusted; URLs an account supplied must be https to a public
//! address unless the platform allows private endpoints, checked when saved
//! ([`check_account_url`]) and again, for hostnames, when resolved before each connection (the
//! guarded client's resolver drops every non-public address, so a name that points into the
//! platform's network cannot be used to reach it).
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

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

/// Whether an account may save (and Tessera may call) this URL (D16.25): https to a host that is
/// not a literal loopback, private, link-local, shared (CGNAT) or otherwise non-public address,
/// nor `localhost`. With `allow_private`, http and any host are accepted.
pub fn check_account_url(url: &str, allow_private: bool) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a valid URL ({e})"))?;
    match parsed.scheme() {
        "https" => {}
        "http" if allow_private => {}
        "http" => return Err("must use https".into()),
        other => return Err(format!("scheme {other:?} is not allowed; use https")),
    }
    let host = parsed.host_str().filter(|h| !h.is_empty()).ok_or("must name a host")?;
    if allow_private {
        return Ok(());
    }
    // IPv6 literals come bracketed; a literal address is judged now, a name when it resolves.
    if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        if !is_public_ip(ip) {
            return Err("must not point at a loopback, private or otherwise non-public address".into());
        }
        return Ok(());
    }
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return Err("must not point at localhost".into());
    }
    Ok(())
}

/// False for loopback, private, link-local, unspecified, shared (CGNAT, 100.64/10), unique-local,
/// multicast, broadcast, documentation and reserved addresses, and for IPv4-mapped (or NAT64)
/// IPv6 forms of those.
pub fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..=127).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let seg = ip.segments();
    // NAT64 (64:ff9b::/96) reaches the embedded IPv4 address.
    if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2..6] == [0, 0, 0, 0] {
        let [a, b] = seg[6].to_be_bytes();
        let [c, d] = seg[7].to_be_bytes();
        return is_public_v4(Ipv4Addr::new(a, b, c, d));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (seg[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (seg[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (seg[0] & 0xffc0) == 0xfec0 // site-local (deprecated) fec0::/10
        || (seg[0] == 0x2001 && seg[1] == 0x0db8) // documentation
        || seg[..6] == [0, 0, 0, 0, 0, 0]) // IPv4-compatible (deprecated) and ::/96
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

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn non_public_addresses_are_recognized() {
        for s in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "100.127.255.254",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
        ] {
            assert!(!is_public_ip(ip(s)), "{s} must not count as public");
        }
        for s in ["8.8.8.8", "1.1.1.1", "100.128.0.1", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public_ip(ip(s)), "{s} is public");
        }
    }

    #[test]
    fn account_urls_must_be_https_to_a_public_host() {
        assert!(check_account_url("https://api.paystack.co", false).is_ok());
        assert!(check_account_url("https://8.8.8.8/x", false).is_ok());
        for bad in [
            "http://api.example.com",
            "ftp://api.example.com",
            "not a url",
            "https://127.0.0.1/provider_a",
            "https://10.0.0.5",
            "https://[::1]:8443",
            "https://[::ffff:192.168.0.1]",
            "https://169.254.169.254/latest/meta-data",
            "https://100.64.1.1",
            "https://[fd00::1]",
            "https://localhost:8090",
            "https://LOCALHOST.",
            "https://api.localhost",
            "https://0.0.0.0",
        ] {
            assert!(check_account_url(bad, false).is_err(), "{bad} must be refused");
        }
    }

    #[test]
    fn allowing_private_endpoints_permits_http_and_loopback() {
        assert!(check_account_url("http://127.0.0.1:8090/provider_a", true).is_ok());
        assert!(check_account_url("http://localhost:8090", true).is_ok());
        assert!(check_account_url("ftp://127.0.0.1", true).is_err());
        assert!(check_account_url("nonsense", true).is_err());
    }

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
