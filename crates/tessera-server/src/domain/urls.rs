//! Which URLs an account may make Tessera call (D16.25): the rule of the outbound guard, with
//! no I/O. The settings rules check a URL with it when it is saved; `providers::outbound` checks
//! it again before each call and drops every non-public address a hostname resolves to.
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether an account may save (and Tessera may call) this URL (D16.25): https to a host that is
/// not a literal loopback, private, link-local, shared (CGNAT) or otherwise non-public address,
/// nor `localhost`. With `allow_private`, http and any host are accepted.
pub fn check_account_url(url: &str, allow_private: bool) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("not a valid URL ({e})"))?;
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
}
