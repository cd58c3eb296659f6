//! UNIQ_KEY generation: the client-side msgId users see, in the Java client's layout
//! (`MessageClientIDSetter`): ip (4) + pid (2) + instance hash (4) + ms since the start of the month (4)
//! + counter (2), as 32 upper-case hex characters.

use std::net::Ipv4Addr;
use std::time::{SystemTime, UNIX_EPOCH};

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Makes unique message ids. One per executor; `instance` must differ between generators of one
/// process (the Java client uses its class loader's hash there).
#[derive(Debug, Clone)]
pub struct UniqKeyGenerator {
    prefix: String,
    month_start_ms: i64,
    next_month_ms: i64,
    counter: u16,
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    let digit = |n: u8| char::from(HEX.get(usize::from(n & 0xF)).copied().unwrap_or(b'0'));
    for b in bytes {
        out.push(digit(b >> 4));
        out.push(digit(*b));
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month) of a day count since the epoch (inverse of `days_from_civil`).
fn civil_from_days(days: i64) -> (i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month)
}

/// Start of the UTC month containing `now_ms`, and of the next one, in ms since the epoch.
pub fn month_bounds(now_ms: i64) -> (i64, i64) {
    let (year, month) = civil_from_days(now_ms.div_euclid(86_400_000));
    let start = days_from_civil(year, month, 1) * 86_400_000;
    let (ny, nm) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    (start, days_from_civil(ny, nm, 1) * 86_400_000)
}

/// Milliseconds since the Unix epoch.
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl UniqKeyGenerator {
    pub fn new(ip: Ipv4Addr, instance: u32) -> UniqKeyGenerator {
        UniqKeyGenerator::new_at(ip, instance, now_millis())
    }

    /// A generator whose month is the one containing `now_ms` (tests pass a fixed time).
    pub fn new_at(ip: Ipv4Addr, instance: u32, now_ms: i64) -> UniqKeyGenerator {
        let mut prefix = String::with_capacity(20);
        push_hex(&mut prefix, &ip.octets());
        // The Java client writes the low 16 bits of the pid.
        push_hex(
            &mut prefix,
            &((std::process::id() & 0xFFFF) as u16).to_be_bytes(),
        );
        push_hex(&mut prefix, &instance.to_be_bytes());
        let (month_start_ms, next_month_ms) = month_bounds(now_ms);
        UniqKeyGenerator {
            prefix,
            month_start_ms,
            next_month_ms,
            counter: 0,
        }
    }

    /// The next id for a message sent at `now_ms`.
    pub fn next_at(&mut self, now_ms: i64) -> String {
        // A clock set back before the month start recomputes too, instead of wrapping.
        if now_ms >= self.next_month_ms || now_ms < self.month_start_ms {
            let (start, next) = month_bounds(now_ms);
            self.month_start_ms = start;
            self.next_month_ms = next;
        }
        // Wraps after ~49 days like the Java int; the month reset keeps it small.
        let since_month = now_ms.wrapping_sub(self.month_start_ms) as i32;
        let counter = self.counter;
        self.counter = counter.wrapping_add(1);
        let mut id = String::with_capacity(32);
        id.push_str(&self.prefix);
        push_hex(&mut id, &since_month.to_be_bytes());
        push_hex(&mut id, &counter.to_be_bytes());
        id
    }

    pub fn next_key(&mut self) -> String {
        self.next_at(now_millis())
    }
}

/// This host's outbound IPv4 address (no packet is sent), or loopback when there is no route.
pub fn local_ipv4() -> Ipv4Addr {
    let probe = || -> Option<Ipv4Addr> {
        let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
        socket.connect("192.0.2.1:9").ok()?;
        match socket.local_addr().ok()?.ip() {
            std::net::IpAddr::V4(ip) if !ip.is_unspecified() => Some(ip),
            _ => None,
        }
    };
    probe().unwrap_or(Ipv4Addr::LOCALHOST)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn month_bounds_match_known_dates() {
        // 2026-11-29T07:00:00Z: month starts 2026-11-01 (1793491200000), next 2026-12-01.
        let (start, next) = month_bounds(1_795_935_600_000);
        assert_eq!(start, 1_793_491_200_000);
        assert_eq!(next, 1_796_083_200_000);
        // December rolls into January of the next year (2027-01-01 = 1798761600000).
        let (dec, jan) = month_bounds(1_796_083_200_000 + 1);
        assert_eq!(dec, 1_796_083_200_000);
        assert_eq!(jan, 1_798_761_600_000);
        // Leap February 2024: 2024-02-01 = 1706745600000, 2024-03-01 = 1709251200000.
        assert_eq!(
            month_bounds(1_708_000_000_000),
            (1_706_745_600_000, 1_709_251_200_000)
        );
    }

    #[test]
    fn ids_have_the_java_layout_and_differ() {
        // Built at the same fixed time as the ids below, so no part depends on today's date.
        let now = 1_795_935_600_000;
        let mut gen = UniqKeyGenerator::new_at(Ipv4Addr::new(10, 1, 2, 3), 0xDEAD_BEEF, now);
        let a = gen.next_at(now);
        let b = gen.next_at(now);
        assert_eq!(a.len(), 32);
        assert!(a.starts_with("0A010203"), "{a}");
        assert_eq!(&a[12..20], "DEADBEEF");
        // Time since the month start: 2026-11-29T07:00Z - 2026-11-01 = 2444400000 ms = 0x91B2_9580.
        assert_eq!(&a[20..28], "91B29580");
        assert_eq!(&a[28..], "0000");
        assert_eq!(&b[28..], "0001");
        assert_ne!(a, b);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase()));
    }

    #[test]
    fn a_later_or_earlier_month_recomputes_the_start() {
        let now = 1_795_935_600_000; // 2026-11-29T07:00Z
        let mut gen = UniqKeyGenerator::new_at(Ipv4Addr::LOCALHOST, 1, now);
        // 2026-12-01T00:00:01Z: one second into December.
        let dec = gen.next_at(1_796_083_201_000);
        assert_eq!(&dec[20..28], "000003E8");
        // Back to 2026-11-29 (a clock set back): the November start again, not a wrapped value.
        let nov = gen.next_at(now);
        assert_eq!(&nov[20..28], "91B29580");
    }
}
