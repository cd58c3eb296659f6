//! Source-IP conditions of a policy entry: an address (matched as written) or a CIDR range, IPv4 or
//! IPv6 (Apache's `IPAddressUtils.isIPInRange`, `isValidIPOrCidr`).

use std::net::IpAddr;

/// Whether `range` is an address or a CIDR range.
pub fn is_valid(range: &str) -> bool {
    match range.split_once('/') {
        None => range.parse::<IpAddr>().is_ok(),
        Some((addr, prefix)) => match (addr.parse::<IpAddr>(), prefix.parse::<u32>()) {
            (Ok(IpAddr::V4(_)), Ok(p)) => p <= 32,
            (Ok(IpAddr::V6(_)), Ok(p)) => p <= 128,
            _ => false,
        },
    }
}

/// Whether `ip` is `range` (an address, compared as written) or inside it (a CIDR range). An
/// unparsable address or range matches nothing.
pub fn contains(range: &str, ip: &str) -> bool {
    let Some((addr, prefix)) = range.split_once('/') else {
        return range == ip;
    };
    let (Ok(net), Ok(prefix), Ok(ip)) = (
        addr.parse::<IpAddr>(),
        prefix.parse::<u32>(),
        ip.parse::<IpAddr>(),
    ) else {
        return false;
    };
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(i)) if prefix <= 32 => {
            let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
            u32::from(n) & mask == u32::from(i) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(i)) if prefix <= 128 => {
            let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
            u128::from(n) & mask == u128::from(i) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_ranges() {
        assert!(contains("192.168.0.0/24", "192.168.0.7"));
        assert!(!contains("192.168.0.0/24", "192.168.1.7"));
        assert!(contains("10.0.0.5", "10.0.0.5"));
        assert!(!contains("10.0.0.5", "10.0.0.6"));
        assert!(contains("0.0.0.0/0", "8.8.8.8"));
        assert!(contains("10.1.2.3/32", "10.1.2.3"));
        assert!(contains("fd00::/8", "fd12::1"));
        assert!(!contains("fd00::/8", "fe80::1"));
        assert!(!contains("192.168.0.0/24", "fd00::1"));
        assert!(!contains("192.168.0.0/x", "192.168.0.1"));
        assert!(is_valid("192.168.0.0/24") && is_valid("::1") && is_valid("10.0.0.1"));
        assert!(!is_valid("192.168.0.0/33") && !is_valid("host") && !is_valid("1.2.3.4/"));
    }
}
