//! Parsing durations given on the command line: `20s`, `500ms`, `2m`, `1h`, `250us`, or plain seconds.

use std::time::Duration;

/// Parses `20s`, `1.5s`, `500ms`, `250us`, `2m`, `1h`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("bad duration {text:?}: expected e.g. 20s, 500ms, 2m"))?;
    let seconds = match unit.trim() {
        "" | "s" | "sec" => value,
        "ms" => value / 1e3,
        "us" => value / 1e6,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => return Err(format!("bad duration unit {other:?} in {text:?}")),
    };
    if !(0.0..=1e9).contains(&seconds) {
        return Err(format!("duration {text:?} out of range"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Parses a count with an optional k/m suffix (`100k`, `1m`, `2500`).
pub fn parse_count(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (number, scale) = match text.char_indices().last() {
        Some((i, 'k' | 'K')) => (&text[..i], 1_000u64),
        Some((i, 'm' | 'M')) => (&text[..i], 1_000_000),
        _ => (text, 1),
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("bad count {text:?}: expected e.g. 100000, 100k, 1m"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("20s"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_duration("20"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn counts_parse() {
        assert_eq!(parse_count("2500"), Ok(2500));
        assert_eq!(parse_count("100k"), Ok(100_000));
        assert_eq!(parse_count("1m"), Ok(1_000_000));
        assert!(parse_count("k").is_err());
        assert!(parse_count("99999999999999999999k").is_err());
    }
}
