//! Java's conversions and orderings that RocketMQ's SQL92 evaluator relies on: `Integer.valueOf`,
//! `Long.valueOf`, `Double.valueOf` and `Boolean.valueOf` of a string, `Double.compare`, and
//! `String.compareTo` (UTF-16 code units).

use std::cmp::Ordering;

/// `Long.parseLong` / `Integer.parseInt` within `[min, max]`: an optional sign, then decimal digits.
/// Java also takes non-ASCII Unicode digits; only ASCII ones are read here.
fn parse_integer(s: &str, min: i64, max: i64) -> Option<i64> {
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, s.get(1..)?),
        Some(b'+') => (false, s.get(1..)?),
        _ => (false, s),
    };
    if digits.is_empty() {
        return None;
    }
    // Accumulate negatively so that the minimum (whose magnitude exceeds the maximum) fits.
    let mut value: i64 = 0;
    for b in digits.bytes() {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_sub(i64::from(b - b'0'))?;
    }
    let value = if negative {
        value
    } else {
        value.checked_neg()?
    };
    (min..=max).contains(&value).then_some(value)
}

/// `Integer.valueOf(String)`.
pub fn parse_int(s: &str) -> Option<i32> {
    parse_integer(s, i64::from(i32::MIN), i64::from(i32::MAX)).and_then(|v| i32::try_from(v).ok())
}

/// `Long.valueOf(String)`.
pub fn parse_long(s: &str) -> Option<i64> {
    parse_integer(s, i64::MIN, i64::MAX)
}

/// `Double.valueOf(String)`: surrounding characters up to U+0020 trimmed, an optional sign, then
/// `NaN`, `Infinity`, or decimal digits with an optional point and exponent and one optional
/// `f`/`F`/`d`/`D` suffix. Java's hexadecimal form (`0x1p3`) is not read.
pub fn parse_double(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| c <= ' ');
    let (negative, rest) = match t.as_bytes().first() {
        Some(b'-') => (true, t.get(1..)?),
        Some(b'+') => (false, t.get(1..)?),
        _ => (false, t),
    };
    let signed = |v: f64| if negative { -v } else { v };
    if rest == "NaN" {
        return Some(f64::NAN);
    }
    if rest == "Infinity" {
        return Some(signed(f64::INFINITY));
    }
    let bytes = rest.as_bytes();
    let mut i = 0;
    let digits_from = |i: &mut usize| {
        let start = *i;
        while bytes.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let mut mantissa_digits = digits_from(&mut i);
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        mantissa_digits += digits_from(&mut i);
    }
    if mantissa_digits == 0 {
        return None;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits_from(&mut i) == 0 {
            return None;
        }
    }
    let number = rest.get(..i)?;
    match bytes.get(i..)? {
        [] | [b'f' | b'F' | b'd' | b'D'] => number.parse::<f64>().ok().map(signed),
        _ => None,
    }
}

/// `Boolean.valueOf(String)`: true for "true" in any case, false for everything else.
pub fn parse_boolean(s: &str) -> bool {
    s.eq_ignore_ascii_case("true")
}

/// `Double.compare`: numeric order, then -0.0 below 0.0, and NaN (all NaNs alike) above everything.
pub fn compare_doubles(a: f64, b: f64) -> Ordering {
    if a < b {
        return Ordering::Less;
    }
    if a > b {
        return Ordering::Greater;
    }
    let bits = |v: f64| {
        if v.is_nan() {
            0x7ff8_0000_0000_0000_i64
        } else {
            v.to_bits() as i64
        }
    };
    bits(a).cmp(&bits(b))
}

/// `String.compareTo`: lexicographic over UTF-16 code units (differs from byte order when a string
/// holds characters beyond U+FFFF).
pub fn compare_strings(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_as_java_reads_them() {
        assert_eq!(parse_int("42"), Some(42));
        assert_eq!(parse_int("+7"), Some(7));
        assert_eq!(parse_int("-007"), Some(-7));
        assert_eq!(parse_int("2147483647"), Some(i32::MAX));
        assert_eq!(parse_int("-2147483648"), Some(i32::MIN));
        assert_eq!(parse_int("2147483648"), None);
        for bad in ["", "+", "-", " 1", "1 ", "1.0", "1e3", "0x10", "1_000"] {
            assert_eq!(parse_int(bad), None, "{bad:?}");
        }
        assert_eq!(parse_long("9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_long("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_long("9223372036854775808"), None);
        assert_eq!(parse_long("-9223372036854775809"), None);
    }

    #[test]
    fn doubles_as_java_reads_them() {
        assert_eq!(parse_double("1.5"), Some(1.5));
        assert_eq!(parse_double(" \t-2.5e1\n"), Some(-25.0));
        assert_eq!(parse_double("5."), Some(5.0));
        assert_eq!(parse_double(".5"), Some(0.5));
        assert_eq!(parse_double("1.5f"), Some(1.5));
        assert_eq!(parse_double("3D"), Some(3.0));
        assert_eq!(parse_double("+1E+2"), Some(100.0));
        assert_eq!(parse_double("Infinity"), Some(f64::INFINITY));
        assert_eq!(parse_double("-Infinity"), Some(f64::NEG_INFINITY));
        assert!(parse_double("NaN").is_some_and(f64::is_nan));
        for bad in [
            "", ".", "e5", "1e", "1e+", "inf", "nan", "infinity", "1.5ff", "1.5x", "1 2", "--1",
            "NaNf", "0x1p3", "１",
        ] {
            assert_eq!(parse_double(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn orderings_as_java_has_them() {
        assert_eq!(compare_doubles(-0.0, 0.0), Ordering::Less);
        assert_eq!(compare_doubles(f64::NAN, f64::INFINITY), Ordering::Greater);
        assert_eq!(compare_doubles(f64::NAN, -f64::NAN), Ordering::Equal);
        assert_eq!(compare_doubles(1.0, 1.0), Ordering::Equal);
        // U+FF5E is above the surrogates that encode U+1F600, so Java orders it after.
        assert_eq!(compare_strings("\u{ff5e}", "\u{1f600}"), Ordering::Greater);
        assert_eq!(compare_strings("ab", "abc"), Ordering::Less);
        assert!(parse_boolean("TrUe") && !parse_boolean("yes"));
    }
}
