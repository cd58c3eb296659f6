//! Small writers shared by the header encoders: decimal integers and JSON string escaping.

use bytes::BufMut;

/// Appends the decimal form of `v` without going through `fmt`.
pub(crate) fn put_i64(out: &mut impl BufMut, v: i64) {
    let mut digits = [0u8; 20];
    let mut n = v.unsigned_abs();
    let mut start = digits.len();
    loop {
        start -= 1;
        if let Some(d) = digits.get_mut(start) {
            *d = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || start == 0 {
            break;
        }
    }
    if v < 0 {
        out.put_u8(b'-');
    }
    out.put_slice(digits.get(start..).unwrap_or(&[]));
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The lowercase hex digit of the low four bits of `n`.
fn hex_digit(n: u8) -> u8 {
    HEX.get(usize::from(n & 0xF)).copied().unwrap_or(b'0')
}

/// Bytes that must be escaped inside a JSON string: control characters, `"` and `\` (also the bytes
/// that end a run of plain characters when reading one).
// Evaluated at compile time: an index out of range would fail the build, not panic at run time.
#[allow(clippy::indexing_slicing)]
pub(crate) const NEEDS_ESCAPE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// The index of the first byte of `bytes` that [`NEEDS_ESCAPE`] marks. Eight bytes are tested at a
/// time: strings in headers are mostly plain, and a byte-by-byte loop was most of the codec's time.
pub(crate) fn find_escape(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in chunks.by_ref() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        // A byte's high bit is set in a mask when it is below 0x20, a quote or a backslash. Borrows
        // run only upwards from a flagged byte, so the lowest flag is exact.
        let control = x.wrapping_sub(ONES * 0x20) & !x;
        let quote =
            (x ^ (ONES * u64::from(b'"'))).wrapping_sub(ONES) & !(x ^ (ONES * u64::from(b'"')));
        let backslash =
            (x ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES) & !(x ^ (ONES * u64::from(b'\\')));
        let flags = (control | quote | backslash) & HIGH;
        if flags != 0 {
            return Some(offset + (flags.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    let needs_escape = |b: &u8| NEEDS_ESCAPE.get(usize::from(*b)) == Some(&true);
    chunks
        .remainder()
        .iter()
        .position(needs_escape)
        .map(|i| offset + i)
}

/// Appends `s` as a quoted JSON string. Quotes, backslashes and control characters (including the
/// `\u0001`/`\u0002` separators of message properties) are escaped; other UTF-8 passes through.
/// Runs without escapes are copied in one piece.
pub(crate) fn put_json_str(out: &mut impl BufMut, s: &str) {
    put_json_text(out, s.as_bytes());
}

/// [`put_json_str`] of text held as bytes (UTF-8 already checked: only ASCII bytes are escaped).
pub(crate) fn put_json_text(out: &mut impl BufMut, text: &[u8]) {
    out.put_u8(b'"');
    let mut rest = text;
    while let Some(i) = find_escape(rest) {
        out.put_slice(rest.get(..i).unwrap_or(&[]));
        let b = rest.get(i).copied().unwrap_or(0);
        match b {
            b'"' => out.put_slice(b"\\\""),
            b'\\' => out.put_slice(b"\\\\"),
            b'\n' => out.put_slice(b"\\n"),
            b'\r' => out.put_slice(b"\\r"),
            b'\t' => out.put_slice(b"\\t"),
            _ => {
                out.put_slice(b"\\u00");
                out.put_u8(hex_digit(b >> 4));
                out.put_u8(hex_digit(b));
            }
        }
        rest = rest.get(i + 1..).unwrap_or(&[]);
    }
    out.put_slice(rest);
    out.put_u8(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        for v in [
            0i64,
            7,
            -7,
            10,
            1234567890,
            i64::MAX,
            i64::MIN,
            i32::MIN as i64,
        ] {
            let mut out = Vec::new();
            put_i64(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), v.to_string());
        }
    }

    #[test]
    fn find_escape_matches_a_byte_by_byte_search() {
        let slow = |b: &[u8]| b.iter().position(|&c| c < 0x20 || c == b'"' || c == b'\\');
        let mut text: Vec<u8> = b"plain text, then more plain text".to_vec();
        assert_eq!(find_escape(&text), None);
        for at in 0..text.len() {
            for special in [0u8, 1, 0x1f, b'"', b'\\'] {
                let mut t = text.clone();
                t[at] = special;
                // Bytes around the special one that a sloppy test could mistake for it.
                for (i, c) in t.iter_mut().enumerate() {
                    if i != at && i % 3 == 0 {
                        *c = [0x20, 0x21, 0x5b, 0x5d, 0xa2, 0xdc, 0xff][i % 7];
                    }
                }
                assert_eq!(find_escape(&t), slow(&t), "{t:?}");
            }
        }
        text.clear();
        for b in 0..=255u8 {
            text.push(b);
            text.push(b'a');
        }
        for start in 0..text.len() {
            assert_eq!(find_escape(&text[start..]), slow(&text[start..]));
        }
    }

    #[test]
    fn escaping_round_trips_through_serde_json() {
        for s in [
            "",
            "plain",
            "q\"b\\s",
            "TAGS\u{1}a\u{2}",
            "line\nfeed\t\r",
            "ünï😀",
            "\u{7f}\u{1f}",
        ] {
            let mut out = Vec::new();
            put_json_str(&mut out, s);
            let back: String = serde_json::from_slice(&out).unwrap();
            assert_eq!(back, s);
        }
        let mut out = Vec::new();
        put_json_str(&mut out, "K\u{1}V\u{2}");
        assert_eq!(out, br#""K\u0001V\u0002""#);
    }
}
