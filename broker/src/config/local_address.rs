//! `brokerIP1`'s default, chosen as Apache RocketMQ chooses it: the host's IPv4 addresses that are
//! not loopback, in interface order; the first outside 192.168.0.0/16, else the last one; 127.0.0.1
//! when the host has none (or they cannot be listed).

use std::net::Ipv4Addr;

/// The address a broker advertises when the config sets no `brokerIP1`.
pub fn default_broker_ip() -> String {
    pick(&host_ipv4_addresses()).to_string()
}

/// Apache's preference among the host's addresses (in interface order).
pub fn pick(addresses: &[Ipv4Addr]) -> Ipv4Addr {
    let usable: Vec<Ipv4Addr> = addresses
        .iter()
        .copied()
        .filter(|a| !a.is_loopback())
        .collect();
    usable
        .iter()
        .copied()
        .find(|a| !matches!(a.octets(), [192, 168, _, _]))
        .or_else(|| usable.last().copied())
        .unwrap_or(Ipv4Addr::LOCALHOST)
}

/// The IPv4 addresses of the host's interfaces, in the order `getifaddrs` lists them.
fn host_ipv4_addresses() -> Vec<Ipv4Addr> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `getifaddrs` writes a list head into `head`; we free it below with `freeifaddrs`.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list `getifaddrs` returned, not freed yet.
        let entry = unsafe { &*cur };
        if !entry.ifa_addr.is_null() {
            // SAFETY: `ifa_addr` points to a sockaddr of the family it names.
            let family = i32::from(unsafe { (*entry.ifa_addr).sa_family });
            if family == libc::AF_INET {
                // SAFETY: an AF_INET address is a `sockaddr_in`.
                let sin = unsafe { &*(entry.ifa_addr as *const libc::sockaddr_in) };
                out.push(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
            }
        }
        cur = entry.ifa_next;
    }
    // SAFETY: `head` came from a successful `getifaddrs` and is freed once.
    unsafe { libc::freeifaddrs(head) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    #[test]
    fn prefers_the_first_address_outside_192_168() {
        let list = [
            ip("127.0.0.1"),
            ip("192.168.1.5"),
            ip("10.0.0.7"),
            ip("172.17.0.1"),
        ];
        assert_eq!(pick(&list), ip("10.0.0.7"));
    }

    #[test]
    fn falls_back_to_the_last_192_168_then_loopback() {
        assert_eq!(
            pick(&[ip("127.0.0.1"), ip("192.168.1.5"), ip("192.168.2.6")]),
            ip("192.168.2.6")
        );
        assert_eq!(pick(&[ip("127.0.0.1")]), Ipv4Addr::LOCALHOST);
        assert_eq!(pick(&[]), Ipv4Addr::LOCALHOST);
    }

    #[test]
    fn the_host_default_is_an_address() {
        let chosen: Ipv4Addr = default_broker_ip().parse().unwrap();
        assert!(chosen.is_loopback() || host_ipv4_addresses().contains(&chosen));
    }
}
