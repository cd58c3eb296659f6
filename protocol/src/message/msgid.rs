//! offsetMsgId: the broker-side message id, store host + physical offset as upper-case hex.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Why a string is not an offsetMsgId.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MsgIdError {
    #[error("offsetMsgId must be 32 (IPv4) or 56 (IPv6) hex characters, got {0}")]
    BadLength(usize),
    #[error("offsetMsgId contains a non-hex character")]
    NotHex,
}

/// Encodes `ip (4 or 16) + port (4) + physical offset (8)` as upper-case hex.
pub fn offset_msg_id(store_host: SocketAddr, physical_offset: i64) -> String {
    let mut out = String::with_capacity(56);
    push_offset_msg_id(&mut out, store_host, physical_offset);
    out
}

/// Appends the offsetMsgId to `out` (a batch answer joins many without a string for each).
pub fn push_offset_msg_id(out: &mut String, store_host: SocketAddr, physical_offset: i64) {
    match store_host.ip() {
        IpAddr::V4(ip) => {
            out.reserve((4 + 12) * 2);
            push_hex(out, &ip.octets());
        }
        IpAddr::V6(ip) => {
            out.reserve((16 + 12) * 2);
            push_hex(out, &ip.octets());
        }
    }
    push_hex(out, &i32::from(store_host.port()).to_be_bytes());
    push_hex(out, &physical_offset.to_be_bytes());
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Appends `bytes` as upper-case hex, two digits a byte.
fn push_hex(out: &mut String, bytes: &[u8]) {
    let digit = |n: u8| char::from(HEX.get(usize::from(n & 0xF)).copied().unwrap_or(b'0'));
    for b in bytes {
        out.push(digit(b >> 4));
        out.push(digit(*b));
    }
}

fn nibble(c: u8) -> Result<u8, MsgIdError> {
    match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        b'A'..=b'F' => Ok(c - b'A' + 10),
        _ => Err(MsgIdError::NotHex),
    }
}

/// Decodes an offsetMsgId into the store host and physical offset.
pub fn parse_offset_msg_id(id: &str) -> Result<(SocketAddr, i64), MsgIdError> {
    let ip_len = match id.len() {
        32 => 4,
        56 => 16,
        n => return Err(MsgIdError::BadLength(n)),
    };
    let raw = id
        .as_bytes()
        .chunks_exact(2)
        .map(|pair| match *pair {
            [high, low] => Ok(nibble(high)? << 4 | nibble(low)?),
            _ => Err(MsgIdError::NotHex),
        })
        .collect::<Result<Vec<u8>, MsgIdError>>()?;
    // The length was checked above, so these splits hold; a failure still is an error, not a panic.
    let bad_length = || MsgIdError::BadLength(id.len());
    let (ip_bytes, rest) = raw.split_at_checked(ip_len).ok_or_else(bad_length)?;
    let (port, offset) = rest.split_at_checked(4).ok_or_else(bad_length)?;
    let ip = if ip_len == 4 {
        IpAddr::V4(Ipv4Addr::from(
            <[u8; 4]>::try_from(ip_bytes).map_err(|_| bad_length())?,
        ))
    } else {
        IpAddr::V6(Ipv6Addr::from(
            <[u8; 16]>::try_from(ip_bytes).map_err(|_| bad_length())?,
        ))
    };
    let port = <[u8; 4]>::try_from(port).map_err(|_| bad_length())?;
    let offset = <[u8; 8]>::try_from(offset).map_err(|_| bad_length())?;
    Ok((
        SocketAddr::new(ip, i32::from_be_bytes(port) as u16),
        i64::from_be_bytes(offset),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_java_layout() {
        // 127.0.0.1 = 7F000001, port 10911 = 00002A9F, offset 0x1234 = 0000000000001234.
        let id = offset_msg_id("127.0.0.1:10911".parse().unwrap(), 0x1234);
        assert_eq!(id, "7F00000100002A9F0000000000001234");
        let (host, off) = parse_offset_msg_id(&id.to_lowercase()).unwrap();
        assert_eq!(host, "127.0.0.1:10911".parse().unwrap());
        assert_eq!(off, 0x1234);
    }

    #[test]
    fn ipv6_and_errors() {
        let host: SocketAddr = "[fe80::1]:10911".parse().unwrap();
        let id = offset_msg_id(host, i64::MAX);
        assert_eq!(id.len(), 56);
        assert_eq!(parse_offset_msg_id(&id).unwrap(), (host, i64::MAX));
        assert_eq!(parse_offset_msg_id("abc"), Err(MsgIdError::BadLength(3)));
        assert_eq!(
            parse_offset_msg_id(&"G".repeat(32)),
            Err(MsgIdError::NotHex)
        );
    }
}
