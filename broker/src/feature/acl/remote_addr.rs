//! Remote-address patterns of plain ACL (`whiteRemoteAddress`, `globalWhiteRemoteAddresses`):
//! `*`, an exact address, per-segment `*` or `a-b` ranges (`192.168.*`, `10.1.1.1-100`), a set in the
//! last segment (`192.168.1.{1,2,3}`), and CIDR (`10.0.0.0/8`).

use std::net::IpAddr;

/// One parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddrPattern {
    /// Matches nothing (a blank pattern).
    Nothing,
    /// `*` or `*.*.*.*`.
    Any,
    /// IPv4 by segment; a missing trailing segment after `*` matches anything.
    V4([SegmentMatch; 4]),
    /// An exact IPv6 address.
    V6(std::net::Ipv6Addr),
    /// `addr/bits`.
    Cidr(IpAddr, u8),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SegmentMatch {
    Any,
    Range(u8, u8),
    Set(Vec<u8>),
}

impl SegmentMatch {
    fn matches(&self, v: u8) -> bool {
        match self {
            SegmentMatch::Any => true,
            SegmentMatch::Range(lo, hi) => *lo <= v && v <= *hi,
            SegmentMatch::Set(set) => set.contains(&v),
        }
    }
}

impl AddrPattern {
    /// Parses a pattern; `Err` says what is wrong with it.
    pub fn parse(text: &str) -> Result<AddrPattern, String> {
        let t = text.trim();
        if t.is_empty() {
            return Ok(AddrPattern::Nothing);
        }
        if t == "*" || t == "*.*.*.*" {
            return Ok(AddrPattern::Any);
        }
        if let Some((addr, bits)) = t.split_once('/') {
            let addr: IpAddr = addr
                .parse()
                .map_err(|_| format!("bad CIDR address in `{t}`"))?;
            let bits: u8 = bits
                .parse()
                .map_err(|_| format!("bad CIDR prefix in `{t}`"))?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            if bits > max {
                return Err(format!("CIDR prefix over {max} in `{t}`"));
            }
            return Ok(AddrPattern::Cidr(addr, bits));
        }
        if t.contains(':') {
            return t
                .parse()
                .map(AddrPattern::V6)
                .map_err(|_| format!("bad IPv6 address `{t}`"));
        }
        let parts: Vec<&str> = t.split('.').collect();
        if parts.is_empty() || parts.len() > 4 {
            return Err(format!("bad IPv4 pattern `{t}`"));
        }
        let mut segs = [
            SegmentMatch::Any,
            SegmentMatch::Any,
            SegmentMatch::Any,
            SegmentMatch::Any,
        ];
        for (i, (slot, part)) in segs.iter_mut().zip(&parts).enumerate() {
            *slot = segment(part).ok_or_else(|| format!("bad segment `{part}` in `{t}`"))?;
            // A set is only allowed in the last given segment, as RocketMQ requires.
            if matches!(slot, SegmentMatch::Set(_)) && i + 1 != parts.len() {
                return Err(format!("`{{...}}` must be the last segment in `{t}`"));
            }
        }
        // Fewer than four segments is only a prefix when the last one is `*` (`192.168.*`).
        if parts.len() < 4 && parts.last() != Some(&"*") {
            return Err(format!("IPv4 pattern `{t}` has fewer than 4 segments"));
        }
        Ok(AddrPattern::V4(segs))
    }

    pub fn matches(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        match (self, ip) {
            (AddrPattern::Nothing, _) => false,
            (AddrPattern::Any, _) => true,
            (AddrPattern::V4(segs), IpAddr::V4(v4)) => {
                segs.iter().zip(v4.octets()).all(|(s, o)| s.matches(o))
            }
            (AddrPattern::V6(want), IpAddr::V6(v6)) => *want == v6,
            (AddrPattern::Cidr(IpAddr::V4(net), bits), IpAddr::V4(v4)) => {
                prefix_eq(&net.octets(), &v4.octets(), *bits)
            }
            (AddrPattern::Cidr(IpAddr::V6(net), bits), IpAddr::V6(v6)) => {
                prefix_eq(&net.octets(), &v6.octets(), *bits)
            }
            _ => false,
        }
    }
}

fn segment(part: &str) -> Option<SegmentMatch> {
    let part = part.trim();
    if part == "*" {
        return Some(SegmentMatch::Any);
    }
    if let Some(inner) = part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
        let set: Option<Vec<u8>> = inner.split(',').map(|v| v.trim().parse().ok()).collect();
        return set.filter(|s| !s.is_empty()).map(SegmentMatch::Set);
    }
    if let Some((lo, hi)) = part.split_once('-') {
        let (lo, hi): (u8, u8) = (lo.trim().parse().ok()?, hi.trim().parse().ok()?);
        return (lo <= hi).then_some(SegmentMatch::Range(lo, hi));
    }
    let v: u8 = part.parse().ok()?;
    Some(SegmentMatch::Range(v, v))
}

fn prefix_eq(a: &[u8], b: &[u8], bits: u8) -> bool {
    let full = usize::from(bits / 8);
    let rest = bits % 8;
    if a.get(..full) != b.get(..full) {
        return false;
    }
    if rest == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - rest);
    match (a.get(full), b.get(full)) {
        (Some(x), Some(y)) => x & mask == y & mask,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, ip: &str) -> bool {
        AddrPattern::parse(p).unwrap().matches(ip.parse().unwrap())
    }

    #[test]
    fn patterns() {
        assert!(m("*", "10.1.2.3"));
        assert!(m("192.168.0.*", "192.168.0.77"));
        assert!(!m("192.168.0.*", "192.168.1.77"));
        assert!(m("192.168.*", "192.168.9.9"));
        assert!(m("10.1.1.1-100", "10.1.1.100"));
        assert!(!m("10.1.1.1-100", "10.1.1.101"));
        assert!(m("192.168.1.{1,2,3}", "192.168.1.2"));
        assert!(!m("192.168.1.{1,2,3}", "192.168.1.4"));
        assert!(m("127.0.0.1", "127.0.0.1"));
        assert!(m("127.0.0.1", "::ffff:127.0.0.1"));
        assert!(m("10.0.0.0/8", "10.200.3.4"));
        assert!(!m("10.0.0.0/9", "10.200.3.4"));
        assert!(m("::1", "::1"));
        assert!(!m("", "127.0.0.1"));
    }

    #[test]
    fn bad_patterns_are_errors() {
        for p in [
            "300.1.1.1",
            "1.2.3",
            "1.{2}.3.4",
            "a.b.c.d",
            "10.0.0.0/40",
            "1.2.3.4.5",
        ] {
            assert!(AddrPattern::parse(p).is_err(), "{p}");
        }
    }
}
