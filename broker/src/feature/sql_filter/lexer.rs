//! Tokens of RocketMQ's SQL92 filter grammar (its JavaCC `SelectorParser.jj`), read on demand, so
//! that a bad character past the end of a complete expression is never looked at (Apache's parser
//! reads the same way). Keywords and identifiers are case-insensitive; the longest match wins.

use super::error::SqlError;

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Not,
    And,
    Or,
    Between,
    In,
    True,
    False,
    Null,
    Is,
    Contains,
    StartsWith,
    EndsWith,
    /// A property name, as written.
    Id(Box<str>),
    /// `0` or a digit 1-9 and more digits, with an optional `l`/`L` (the text as written).
    Decimal(Box<str>),
    /// Digits with a point and/or an exponent (the text as written).
    Float(Box<str>),
    /// A single-quoted string, decoded (`''` is one quote).
    Str(Box<str>),
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    LParen,
    RParen,
    Comma,
    Plus,
    Minus,
    Eof,
}

impl Tok {
    /// How an error message names the token.
    pub fn describe(&self) -> String {
        match self {
            Tok::Id(s) => format!("identifier `{s}`"),
            Tok::Decimal(s) | Tok::Float(s) => format!("number `{s}`"),
            Tok::Str(s) => format!("string '{s}'"),
            Tok::Eof => "the end of the expression".to_owned(),
            other => format!("`{}`", other.symbol()),
        }
    }

    fn symbol(&self) -> &'static str {
        match self {
            Tok::Not => "NOT",
            Tok::And => "AND",
            Tok::Or => "OR",
            Tok::Between => "BETWEEN",
            Tok::In => "IN",
            Tok::True => "TRUE",
            Tok::False => "FALSE",
            Tok::Null => "NULL",
            Tok::Is => "IS",
            Tok::Contains => "CONTAINS",
            Tok::StartsWith => "STARTSWITH",
            Tok::EndsWith => "ENDSWITH",
            Tok::Eq => "=",
            Tok::Ne => "<>",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::Comma => ",",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Id(_) | Tok::Decimal(_) | Tok::Float(_) | Tok::Str(_) | Tok::Eof => "",
        }
    }
}

/// A token and the byte offset where it starts.
pub type Spanned = (Tok, usize);

pub struct Lexer<'s> {
    src: &'s str,
    pos: usize,
}

fn is_id_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$'
}

fn is_id_part(b: u8) -> bool {
    is_id_start(b) || b.is_ascii_digit()
}

fn keyword(word: &str) -> Option<Tok> {
    const KEYWORDS: [(&str, Tok); 12] = [
        ("NOT", Tok::Not),
        ("AND", Tok::And),
        ("OR", Tok::Or),
        ("BETWEEN", Tok::Between),
        ("IN", Tok::In),
        ("TRUE", Tok::True),
        ("FALSE", Tok::False),
        ("NULL", Tok::Null),
        ("IS", Tok::Is),
        ("CONTAINS", Tok::Contains),
        ("STARTSWITH", Tok::StartsWith),
        ("ENDSWITH", Tok::EndsWith),
    ];
    KEYWORDS
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(word))
        .map(|(_, t)| t.clone())
}

impl<'s> Lexer<'s> {
    pub fn new(src: &'s str) -> Lexer<'s> {
        Lexer { src, pos: 0 }
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.src.as_bytes().get(at).copied()
    }

    fn digits_end(&self, mut at: usize) -> usize {
        while self.byte(at).is_some_and(|b| b.is_ascii_digit()) {
            at += 1;
        }
        at
    }

    /// The end of an exponent (`e`, optional sign, digits) starting at `at`, if one is there.
    fn exponent_end(&self, at: usize) -> Option<usize> {
        if !matches!(self.byte(at), Some(b'e' | b'E')) {
            return None;
        }
        let mut i = at + 1;
        if matches!(self.byte(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let end = self.digits_end(i);
        (end > i).then_some(end)
    }

    /// Skips white space and comments. A `--` comment needs its line end (without one the dashes
    /// are two minus signs, as in Apache's grammar); an unclosed `/*` is an error.
    fn skip(&mut self) -> Result<(), SqlError> {
        loop {
            match (self.byte(self.pos), self.byte(self.pos + 1)) {
                (Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0c'), _) => self.pos += 1,
                (Some(b'-'), Some(b'-')) => {
                    let rest = self.src.get(self.pos..).unwrap_or("");
                    match rest.find(['\n', '\r']) {
                        Some(end) => self.pos += end + 1,
                        None => return Ok(()),
                    }
                }
                (Some(b'/'), Some(b'*')) => {
                    let body = self.src.get(self.pos + 2..).unwrap_or("");
                    match body.find("*/") {
                        Some(end) => self.pos += 2 + end + 2,
                        None => {
                            return Err(SqlError::at("unclosed /* comment", self.pos));
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// The next token; an error for a character no token starts with or an unclosed string.
    pub fn next_token(&mut self) -> Result<Spanned, SqlError> {
        self.skip()?;
        let start = self.pos;
        let Some(b) = self.byte(start) else {
            return Ok((Tok::Eof, start));
        };
        let text = |end: usize| -> Box<str> { self.src.get(start..end).unwrap_or("").into() };
        let (tok, end) = match b {
            b'\'' => return self.string(start),
            b'=' => (Tok::Eq, start + 1),
            b'<' => match self.byte(start + 1) {
                Some(b'>') => (Tok::Ne, start + 2),
                Some(b'=') => (Tok::Le, start + 2),
                _ => (Tok::Lt, start + 1),
            },
            b'>' => match self.byte(start + 1) {
                Some(b'=') => (Tok::Ge, start + 2),
                _ => (Tok::Gt, start + 1),
            },
            b'(' => (Tok::LParen, start + 1),
            b')' => (Tok::RParen, start + 1),
            b',' => (Tok::Comma, start + 1),
            b'+' => (Tok::Plus, start + 1),
            b'-' => (Tok::Minus, start + 1),
            b'.' => {
                let end = self.digits_end(start + 1);
                if end == start + 1 {
                    return Err(SqlError::at("unexpected character '.'", start));
                }
                let end = self.exponent_end(end).unwrap_or(end);
                (Tok::Float(text(end)), end)
            }
            b'0'..=b'9' => {
                let int_end = self.digits_end(start);
                if self.byte(int_end) == Some(b'.') {
                    let frac_end = self.digits_end(int_end + 1);
                    let end = self.exponent_end(frac_end).unwrap_or(frac_end);
                    (Tok::Float(text(end)), end)
                } else if let Some(end) = self.exponent_end(int_end) {
                    (Tok::Float(text(end)), end)
                } else if b == b'0' {
                    // A decimal literal is a lone 0 or has no leading zero: "007" is three tokens.
                    (Tok::Decimal(text(start + 1)), start + 1)
                } else {
                    let end = if matches!(self.byte(int_end), Some(b'l' | b'L')) {
                        int_end + 1
                    } else {
                        int_end
                    };
                    (Tok::Decimal(text(end)), end)
                }
            }
            b if is_id_start(b) => {
                let mut end = start + 1;
                while self.byte(end).is_some_and(is_id_part) {
                    end += 1;
                }
                let word = self.src.get(start..end).unwrap_or("");
                (keyword(word).unwrap_or_else(|| Tok::Id(word.into())), end)
            }
            _ => {
                let c = self
                    .src
                    .get(start..)
                    .and_then(|s| s.chars().next())
                    .unwrap_or('\u{fffd}');
                return Err(SqlError::at(format!("unexpected character {c:?}"), start));
            }
        };
        self.pos = end;
        Ok((tok, start))
    }

    fn string(&mut self, start: usize) -> Result<Spanned, SqlError> {
        let mut value = String::new();
        let mut rest = self.src.get(start + 1..).unwrap_or("").char_indices();
        while let Some((i, c)) = rest.next() {
            if c != '\'' {
                value.push(c);
                continue;
            }
            if rest.clone().next().is_some_and(|(_, n)| n == '\'') {
                rest.next();
                value.push('\'');
                continue;
            }
            self.pos = start + 1 + i + 1;
            return Ok((Tok::Str(value.into()), start));
        }
        Err(SqlError::at("unclosed string literal", start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(src: &str) -> Vec<Tok> {
        let mut lexer = Lexer::new(src);
        let mut out = Vec::new();
        loop {
            match lexer.next_token() {
                Ok((Tok::Eof, _)) => return out,
                Ok((t, _)) => out.push(t),
                Err(e) => panic!("{src:?}: {e}"),
            }
        }
    }

    fn id(s: &str) -> Tok {
        Tok::Id(s.into())
    }

    #[test]
    fn longest_match_and_case() {
        assert_eq!(
            tokens("a>=1 AND b<>'x''y' or NotX<=2.5e3"),
            vec![
                id("a"),
                Tok::Ge,
                Tok::Decimal("1".into()),
                Tok::And,
                id("b"),
                Tok::Ne,
                Tok::Str("x'y".into()),
                Tok::Or,
                id("NotX"),
                Tok::Le,
                Tok::Float("2.5e3".into())
            ]
        );
        assert_eq!(
            tokens("between In startsWith $x_1"),
            vec![Tok::Between, Tok::In, Tok::StartsWith, id("$x_1")]
        );
    }

    #[test]
    fn numbers_as_the_grammar_splits_them() {
        let d = |s: &str| Tok::Decimal(s.into());
        let f = |s: &str| Tok::Float(s.into());
        assert_eq!(tokens("007"), vec![d("0"), d("0"), d("7")]);
        assert_eq!(tokens("12L 0L"), vec![d("12L"), d("0"), id("L")]);
        assert_eq!(
            tokens("5. .5 5e3 5.E-3"),
            vec![f("5."), f(".5"), f("5e3"), f("5.E-3")]
        );
        assert_eq!(tokens("1.5e x"), vec![f("1.5"), id("e"), id("x")]);
        assert_eq!(tokens("1a"), vec![d("1"), id("a")]);
    }

    #[test]
    fn comments_and_bad_characters() {
        assert_eq!(
            tokens("a /* b */ -- c\n = 1"),
            vec![id("a"), Tok::Eq, Tok::Decimal("1".into())]
        );
        // Without a line end "--" is two minus signs.
        assert_eq!(
            tokens("1 --x"),
            vec![Tok::Decimal("1".into()), Tok::Minus, Tok::Minus, id("x")]
        );
        for bad in ["'open", "/* open", "!", "a != 1", "é", "."] {
            let mut lexer = Lexer::new(bad);
            let failed = (0..5).any(|_| lexer.next_token().is_err());
            assert!(failed, "{bad:?} lexes");
        }
    }
}
