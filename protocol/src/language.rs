//! `LanguageCode`: which client library sent a command (RocketMQ's names and byte codes).

use std::fmt;

/// The `language` of a command. Known names map to RocketMQ's byte codes; anything else is kept
/// as it arrived so it can be logged and echoed, never rejected.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum LanguageCode {
    #[default]
    Java,
    Cpp,
    Dotnet,
    Python,
    Delphi,
    Erlang,
    Ruby,
    Other,
    Http,
    Go,
    Php,
    Oms,
    Rust,
    NodeJs,
    /// A name (JSON header) this crate does not know.
    UnknownName(String),
    /// A byte code (ROCKETMQ header) this crate does not know.
    UnknownCode(u8),
}

/// (variant, JSON name, byte code) for every known language.
const KNOWN: [(LanguageCode, &str, u8); 14] = [
    (LanguageCode::Java, "JAVA", 0),
    (LanguageCode::Cpp, "CPP", 1),
    (LanguageCode::Dotnet, "DOTNET", 2),
    (LanguageCode::Python, "PYTHON", 3),
    (LanguageCode::Delphi, "DELPHI", 4),
    (LanguageCode::Erlang, "ERLANG", 5),
    (LanguageCode::Ruby, "RUBY", 6),
    (LanguageCode::Other, "OTHER", 7),
    (LanguageCode::Http, "HTTP", 8),
    (LanguageCode::Go, "GO", 9),
    (LanguageCode::Php, "PHP", 10),
    (LanguageCode::Oms, "OMS", 11),
    (LanguageCode::Rust, "RUST", 12),
    (LanguageCode::NodeJs, "NODE_JS", 13),
];

impl LanguageCode {
    /// Parses a JSON header's language name; unknown names are kept.
    pub fn from_name(name: &str) -> LanguageCode {
        KNOWN
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(l, _, _)| l.clone())
            .unwrap_or_else(|| LanguageCode::UnknownName(name.to_owned()))
    }

    /// A JSON header's language sent as a number; one JSON cannot name is OTHER (so it survives
    /// re-encoding).
    pub fn from_json_number(v: i128) -> LanguageCode {
        match u8::try_from(v).map(LanguageCode::from_code) {
            Ok(LanguageCode::UnknownCode(_)) | Err(_) => LanguageCode::Other,
            Ok(known) => known,
        }
    }

    /// Parses a ROCKETMQ header's language byte; unknown codes are kept.
    pub fn from_code(code: u8) -> LanguageCode {
        KNOWN
            .iter()
            .find(|(_, _, c)| *c == code)
            .map(|(l, _, _)| l.clone())
            .unwrap_or(LanguageCode::UnknownCode(code))
    }

    /// The name written in JSON headers (`OTHER` for an unknown byte code).
    pub fn name(&self) -> &str {
        match self {
            LanguageCode::UnknownName(name) => name,
            LanguageCode::UnknownCode(_) => "OTHER",
            known => KNOWN
                .iter()
                .find(|(l, _, _)| l == known)
                .map_or("OTHER", |(_, n, _)| n),
        }
    }

    /// The byte written in ROCKETMQ headers (OTHER = 7 for an unknown name).
    pub fn code(&self) -> u8 {
        match self {
            LanguageCode::UnknownCode(code) => *code,
            LanguageCode::UnknownName(_) => 7,
            known => KNOWN
                .iter()
                .find(|(l, _, _)| l == known)
                .map_or(7, |(_, _, c)| *c),
        }
    }
}

impl fmt::Display for LanguageCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LanguageCode::UnknownCode(code) => write!(f, "UNKNOWN({code})"),
            other => f.write_str(other.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_follow_rocketmq() {
        assert_eq!(LanguageCode::from_name("CPP"), LanguageCode::Cpp);
        assert_eq!(LanguageCode::from_code(12), LanguageCode::Rust);
        assert_eq!(LanguageCode::Rust.name(), "RUST");
        assert_eq!(LanguageCode::NodeJs.code(), 13);
        assert_eq!(LanguageCode::from_name("COBOL").name(), "COBOL");
        assert_eq!(LanguageCode::from_name("COBOL").code(), 7);
        assert_eq!(LanguageCode::from_code(200).code(), 200);
        assert_eq!(LanguageCode::from_code(200).name(), "OTHER");
    }
}
