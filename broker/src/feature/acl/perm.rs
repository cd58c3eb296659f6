//! Permission bits of plain ACL (`DENY`, `ANY`, `PUB`, `SUB`), parsed and checked as RocketMQ does.

/// Permission bits, RocketMQ's values.
pub const DENY: u8 = 1;
pub const ANY: u8 = 1 << 1;
pub const PUB: u8 = 1 << 2;
pub const SUB: u8 = 1 << 3;

/// `PUB`, `SUB`, `PUB|SUB` (either order) or `DENY`; anything else is DENY, as in RocketMQ.
pub fn parse(text: &str) -> u8 {
    let mut bits = 0u8;
    for part in text.split('|').map(str::trim) {
        match part.to_ascii_uppercase().as_str() {
            "PUB" => bits |= PUB,
            "SUB" => bits |= SUB,
            "ANY" => bits |= ANY,
            _ => return DENY,
        }
    }
    if bits == 0 {
        DENY
    } else {
        bits
    }
}

/// Whether an account holding `owned` may do what needs `needed`.
pub fn allows(needed: u8, owned: u8) -> bool {
    if owned & DENY != 0 {
        return false;
    }
    if needed & ANY != 0 {
        return owned & (PUB | SUB) != 0;
    }
    needed & owned != 0
}

/// The name RocketMQ prints for a permission.
pub fn name(bits: u8) -> &'static str {
    match bits {
        PUB => "PUB",
        SUB => "SUB",
        x if x == PUB | SUB => "PUB|SUB",
        ANY => "ANY",
        _ => "DENY",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rocketmq_spellings() {
        assert_eq!(parse("PUB"), PUB);
        assert_eq!(parse("SUB"), SUB);
        assert_eq!(parse("PUB|SUB"), PUB | SUB);
        assert_eq!(parse("SUB|PUB"), PUB | SUB);
        assert_eq!(parse("DENY"), DENY);
        assert_eq!(parse("nonsense"), DENY);
        assert_eq!(parse(""), DENY);
    }

    #[test]
    fn checks() {
        assert!(allows(PUB, PUB | SUB));
        assert!(allows(SUB, SUB));
        assert!(!allows(PUB, SUB));
        assert!(!allows(SUB, DENY));
        assert!(allows(ANY, PUB));
        assert!(!allows(ANY, DENY));
    }
}
