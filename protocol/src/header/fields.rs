//! The `CommandHeader` trait, the field value conversions it rests on and the `command_header!`
//! macro that defines a header struct with its `extFields` mapping.

use std::str::FromStr;

use crate::ext_fields::ExtFields;

/// The kind of value one header field holds on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    Str,
    I32,
    I64,
    Bool,
}

/// Description of one header field: its `extFields` name, kind, and whether it is required.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderField {
    pub name: &'static str,
    pub kind: FieldKind,
    pub required: bool,
}

/// A header that travels as a command's `extFields`.
pub trait CommandHeader: Sized {
    /// The header's fields, in the order they are written.
    const FIELDS: &'static [HeaderField];

    /// Reads the header; fails when a required field is missing or a value does not parse.
    fn from_ext_fields(fields: &ExtFields) -> Result<Self, HeaderError>;
    /// Writes every present field as a string.
    fn to_ext_fields(&self) -> ExtFields;
}

/// Why `extFields` do not make a valid header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("missing header field {0}")]
    Missing(&'static str),
    #[error("header field {field} has an invalid value {value:?}")]
    Invalid { field: &'static str, value: String },
}

/// A type one header field can have.
pub trait HeaderValue: Sized {
    const KIND: FieldKind;
    const REQUIRED: bool;
    /// Reads the field `name`.
    fn read(fields: &ExtFields, name: &'static str) -> Result<Self, HeaderError>;
    /// Writes the field `name` (nothing for an absent optional).
    fn write(&self, fields: &mut ExtFields, name: &str);
}

/// A required value read from its text (what an optional one reads once it is present).
trait FromFieldText: Sized {
    fn from_text(name: &'static str, text: &str) -> Result<Self, HeaderError>;
}

impl FromFieldText for i32 {
    fn from_text(name: &'static str, text: &str) -> Result<Self, HeaderError> {
        parse_number(name, text)
    }
}

impl FromFieldText for i64 {
    fn from_text(name: &'static str, text: &str) -> Result<Self, HeaderError> {
        parse_number(name, text)
    }
}

impl FromFieldText for bool {
    fn from_text(_: &'static str, text: &str) -> Result<Self, HeaderError> {
        Ok(parse_bool(text))
    }
}

fn parse_number<T: FromStr>(name: &'static str, text: &str) -> Result<T, HeaderError> {
    // Some clients put spaces around numbers; Java's parseInt would not, but rejecting them helps no one.
    text.trim_ascii().parse().map_err(|_| HeaderError::Invalid {
        field: name,
        value: text.chars().take(64).collect(),
    })
}

/// Java's `Boolean.parseBoolean`: "true" in any case is true, anything else false.
fn parse_bool(text: &str) -> bool {
    text.trim_ascii().eq_ignore_ascii_case("true")
}

impl HeaderValue for String {
    const KIND: FieldKind = FieldKind::Str;
    const REQUIRED: bool = true;
    fn read(fields: &ExtFields, name: &'static str) -> Result<Self, HeaderError> {
        fields
            .get(name)
            .map(str::to_owned)
            .ok_or(HeaderError::Missing(name))
    }
    fn write(&self, fields: &mut ExtFields, name: &str) {
        fields.insert(name, self);
    }
}

macro_rules! number_value {
    ($($t:ty => $kind:ident),*) => {$(
        impl HeaderValue for $t {
            const KIND: FieldKind = FieldKind::$kind;
            const REQUIRED: bool = true;
            fn read(fields: &ExtFields, name: &'static str) -> Result<Self, HeaderError> {
                parse_number(name, fields.get(name).ok_or(HeaderError::Missing(name))?)
            }
            fn write(&self, fields: &mut ExtFields, name: &str) {
                fields.insert_display(name, self);
            }
        }
    )*};
}
number_value!(i32 => I32, i64 => I64);

impl HeaderValue for bool {
    const KIND: FieldKind = FieldKind::Bool;
    const REQUIRED: bool = true;
    fn read(fields: &ExtFields, name: &'static str) -> Result<Self, HeaderError> {
        fields
            .get(name)
            .map(parse_bool)
            .ok_or(HeaderError::Missing(name))
    }
    fn write(&self, fields: &mut ExtFields, name: &str) {
        fields.insert(name, if *self { "true" } else { "false" });
    }
}

impl HeaderValue for Option<String> {
    const KIND: FieldKind = FieldKind::Str;
    const REQUIRED: bool = false;
    fn read(fields: &ExtFields, name: &'static str) -> Result<Self, HeaderError> {
        Ok(fields.get(name).map(str::to_owned))
    }
    fn write(&self, fields: &mut ExtFields, name: &str) {
        if let Some(v) = self {
            fields.insert(name, v);
        }
    }
}

macro_rules! optional_value {
    ($($t:ty),*) => {$(
        impl HeaderValue for Option<$t> {
            const KIND: FieldKind = <$t as HeaderValue>::KIND;
            const REQUIRED: bool = false;
            fn read(fields: &ExtFields, name: &'static str) -> Result<Self, HeaderError> {
                // An empty string is how some clients say "not set".
                match fields.get(name) {
                    None => Ok(None),
                    Some(text) if text.trim_ascii().is_empty() => Ok(None),
                    Some(text) => <$t as FromFieldText>::from_text(name, text).map(Some),
                }
            }
            fn write(&self, fields: &mut ExtFields, name: &str) {
                if let Some(v) = self {
                    v.write(fields, name);
                }
            }
        }
    )*};
}
optional_value!(i32, i64, bool);

/// Defines a header struct whose fields map one to one to `extFields` names.
macro_rules! command_header {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $wire:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $crate::header::fields::CommandHeader for $name {
            const FIELDS: &'static [$crate::header::fields::HeaderField] = &[$(
                $crate::header::fields::HeaderField {
                    name: $wire,
                    kind: <$ty as $crate::header::fields::HeaderValue>::KIND,
                    required: <$ty as $crate::header::fields::HeaderValue>::REQUIRED,
                },
            )*];

            #[allow(unused_variables)]
            fn from_ext_fields(
                fields: &$crate::ext_fields::ExtFields,
            ) -> Result<Self, $crate::header::fields::HeaderError> {
                Ok($name {
                    $( $field: <$ty as $crate::header::fields::HeaderValue>::read(fields, $wire)?, )*
                })
            }

            fn to_ext_fields(&self) -> $crate::ext_fields::ExtFields {
                #[allow(unused_mut)]
                let mut out = $crate::ext_fields::ExtFields::with_capacity(<Self as $crate::header::fields::CommandHeader>::FIELDS.len(), 128);
                $( $crate::header::fields::HeaderValue::write(&self.$field, &mut out, $wire); )*
                out
            }
        }
    };
}
pub(crate) use command_header;

#[cfg(test)]
mod tests {
    use super::*;

    command_header! {
        /// A header exercising every field kind.
        pub struct Sample {
            name: String = "name",
            count: i32 = "count",
            big: i64 = "big",
            flag: bool = "flag",
            note: Option<String> = "note",
            limit: Option<i32> = "limit",
            when: Option<i64> = "when",
            on: Option<bool> = "on",
        }
    }

    fn fields(pairs: &[(&str, &str)]) -> ExtFields {
        pairs.iter().copied().collect()
    }

    #[test]
    fn reads_required_and_optional_fields() {
        let f = fields(&[
            ("name", "n"),
            ("count", "-3"),
            ("big", "9000000000"),
            ("flag", "TRUE"),
            ("limit", ""),
            ("on", "false"),
            ("extra", "x"),
        ]);
        let s = Sample::from_ext_fields(&f).unwrap();
        assert_eq!(s.name, "n");
        assert_eq!(s.count, -3);
        assert_eq!(s.big, 9_000_000_000);
        assert!(s.flag);
        assert_eq!(s.note, None);
        assert_eq!(s.limit, None);
        assert_eq!(s.when, None);
        assert_eq!(s.on, Some(false));
        let back = s.to_ext_fields();
        assert_eq!(back.get("count"), Some("-3"));
        assert_eq!(back.get("flag"), Some("true"));
        assert_eq!(back.get("limit"), None);
        assert_eq!(back.get("extra"), None);
        assert_eq!(Sample::from_ext_fields(&back).unwrap(), s);
    }

    #[test]
    fn missing_and_invalid_fields_are_named() {
        let f = fields(&[("count", "1"), ("big", "2"), ("flag", "x")]);
        assert_eq!(
            Sample::from_ext_fields(&f),
            Err(HeaderError::Missing("name"))
        );
        let f = fields(&[("name", "n"), ("count", "one"), ("big", "2"), ("flag", "x")]);
        assert_eq!(
            Sample::from_ext_fields(&f),
            Err(HeaderError::Invalid {
                field: "count",
                value: "one".into()
            })
        );
        let f = fields(&[
            ("name", "n"),
            ("count", "1"),
            ("big", "2"),
            ("flag", "x"),
            ("limit", "2147483648"),
        ]);
        assert!(matches!(
            Sample::from_ext_fields(&f),
            Err(HeaderError::Invalid { field: "limit", .. })
        ));
    }
}
