//! A macro for Java enums inside JSON bodies: written as their name, read from a name or an
//! ordinal (the C++ client sends ordinals), an unknown value kept rather than rejected.

/// Defines `enum $name { Variant.., Unknown(String) }` with serde as described above.
macro_rules! java_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $java:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($variant,)*
            /// A name or ordinal this crate does not know, kept as text.
            Unknown(String),
        }

        impl $name {
            const NAMES: &'static [&'static str] = &[$($java),*];

            /// The Java name.
            pub fn name(&self) -> &str {
                match self {
                    $($name::$variant => $java,)*
                    $name::Unknown(text) => text,
                }
            }

            /// Parses a Java name; unknown names are kept.
            pub fn from_name(name: &str) -> Self {
                match name {
                    $($java => $name::$variant,)*
                    other => $name::Unknown(other.to_owned()),
                }
            }

            /// Parses a Java ordinal; unknown ordinals are kept.
            pub fn from_ordinal(ordinal: i64) -> Self {
                usize::try_from(ordinal)
                    .ok()
                    .and_then(|i| Self::NAMES.get(i))
                    .map_or_else(|| $name::Unknown(ordinal.to_string()), |n| Self::from_name(n))
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("a ", stringify!($name), " name or ordinal"))
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$name, E> {
                        Ok($name::from_name(v))
                    }
                    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<$name, E> {
                        Ok($name::from_ordinal(v))
                    }
                    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<$name, E> {
                        Ok($name::from_ordinal(i64::try_from(v).unwrap_or(-1)))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}
pub(crate) use java_enum;
