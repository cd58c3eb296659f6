//! SQL92 property filters as RocketMQ defines them (`MessageSelector.bySql`): the grammar of its
//! `filter` module and the semantics of its evaluator, matched against a message's properties.
//!
//! Grammar (keywords in any case): `OR`, `AND`, `NOT`, parentheses; `=` `<>` `IS NULL`
//! `IS NOT NULL`; `>` `>=` `<` `<=`; `[NOT] BETWEEN a AND b`; `prop [NOT] IN ('a', 'b')`;
//! `[NOT] CONTAINS|STARTSWITH|ENDSWITH 'text'` (RocketMQ 5.x; 4.9.8 has not these three); unary
//! `+` and `-`; string literals in single quotes (`''` is a quote), decimal literals (`int`, else
//! `long`, optional `L`), floating literals (`1.5`, `.5`, `5.`, `1e3`), `TRUE`, `FALSE`, `NULL`;
//! `--` line and `/* */` block comments. Property names are letters, digits, `_` and `$`, not
//! starting with a digit.
//!
//! Semantics (Apache's `ComparisonExpression`, `LogicExpression`, `UnaryExpression`): properties are
//! strings and a missing one is NULL; a comparison with NULL is NULL and only TRUE matches, so
//! `a <> 'x'` does not match a message without `a`, while `a IS NULL` does. A property compared
//! with a number is converted to that number's Java type: `a > 5` reads `a` with
//! `Integer.valueOf`, `a > 5.0` with `Double.valueOf`; two properties compared by `>` are read as
//! doubles. A conversion that fails (`a > 5` with `a` = "7.5" or "x") is an exception in Java: the
//! whole filter then does not match the message, whatever the rest of it says. `=` between a
//! property and a string compares the strings. A property alone as a condition (`a`, `NOT a`) is
//! never TRUE. An empty CONTAINS/STARTSWITH/ENDSWITH text, or a NULL value, gives FALSE, also
//! negated. Apache's build-time checks are made too: `>`, `<`, BETWEEN take no string, boolean or
//! NULL constant; `= NULL` is refused (use IS NULL); IN needs a property; constant BETWEEN bounds
//! must be in order; a zero floating literal (`0.0`) is refused, as Apache does.
//!
//! Deviations: trees deeper than 100 levels are refused (Apache has no limit but its
//! stack); Java's non-ASCII Unicode digits and hexadecimal doubles in property values are not read
//! as numbers; `CONTAINS`, `STARTSWITH` and `ENDSWITH` are keywords (as in 5.x), so 4.9.8 filters
//! naming properties so cannot be written. As in Apache, text after a complete expression is not
//! read beyond its next token (`a = 1 b` filters by `a = 1`).

mod ast;
mod error;
mod eval;
mod java;
mod lexer;
mod parser;

pub use error::SqlError;

use protocol::message::properties::{NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR};
use protocol::message::record::decode_view;

/// A compiled SQL92 filter.
#[derive(Debug, Clone, PartialEq)]
pub struct SqlFilter {
    expr: ast::Expr,
}

/// A message's properties string (`name\u1value\u2...`) read as Java's
/// `MessageDecoder.string2messageProperties` reads it: pairs with an empty name or value are left
/// out, and a name given twice keeps its last value.
struct PropertyString<'a>(&'a str);

impl<'a> eval::Properties<'a> for PropertyString<'a> {
    fn get(&self, name: &str) -> Option<&'a str> {
        // From the end: the last value of a repeated name wins.
        self.0
            .split(PROPERTY_SEPARATOR)
            .rev()
            .filter_map(|pair| pair.split_once(NAME_VALUE_SEPARATOR))
            .find(|(k, v)| *k == name && !v.is_empty())
            .map(|(_, v)| v)
    }
}

impl SqlFilter {
    pub fn compile(expression: &str) -> Result<SqlFilter, SqlError> {
        Ok(SqlFilter {
            expr: parser::parse(expression)?,
        })
    }

    /// Whether a message with this properties string matches (only a TRUE result does).
    pub fn matches(&self, properties: &str) -> bool {
        matches!(
            eval::eval(&self.expr, &PropertyString(properties)),
            Ok(eval::Value::Bool(true))
        )
    }

    /// Whether a stored record matches, by its properties; a record that does not decode is
    /// evaluated without properties.
    pub fn matches_record(&self, record: &[u8]) -> bool {
        let properties = decode_view(record, false).map_or("", |v| v.properties);
        self.matches(properties)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use protocol::message::properties;

    fn props(pairs: &[(&str, &str)]) -> String {
        properties::encode(pairs.iter().copied())
    }

    /// `expression` against `pairs`, or None when it does not compile.
    fn matches(expression: &str, pairs: &[(&str, &str)]) -> Option<bool> {
        SqlFilter::compile(expression)
            .ok()
            .map(|f| f.matches(&props(pairs)))
    }

    #[test]
    fn comparisons_with_numbers_and_strings() {
        let m = [("a", "10"), ("b", "x"), ("c", "7.5"), ("d", "-3")];
        let cases: &[(&str, bool)] = &[
            ("a > 5", true),
            ("a > 5 AND b = 'x'", true),
            ("a > 5 AND b = 'y'", false),
            ("a >= 10 AND a <= 10", true),
            ("a < 10", false),
            ("a = 10", true),
            ("a = '10'", true),
            ("a <> 10", false),
            ("a = 10.0", true),
            ("a > 9.5", true),
            ("a = 10L", true),
            ("a > 2147483648", false),
            ("d < 0", true),
            ("d = -3", true),
            // Minus of a property (a string) is NULL in Apache's evaluator.
            ("-a < -9", false),
            ("-a IS NULL", true),
            ("a BETWEEN 10 AND 20", true),
            ("a BETWEEN 11 AND 20", false),
            ("a NOT BETWEEN 11 AND 20", true),
            ("a NOT BETWEEN 0 AND 20", false),
            ("b IN ('x', 'y')", true),
            ("b NOT IN ('x', 'y')", false),
            ("b NOT IN ('z')", true),
            ("b IS NOT NULL", true),
            ("b IS NULL", false),
            ("zz IS NULL", true),
            ("zz IS NOT NULL", false),
            ("c > 7", false),
            ("c > 7.0", true),
            ("c > a", false),
            ("a > c", true),
            ("(a > 5 OR zz = 1) AND NOT (b = 'y')", true),
            ("TRUE", true),
            ("FALSE OR NULL", false),
            ("NOT FALSE", true),
        ];
        for (expression, want) in cases {
            assert_eq!(matches(expression, &m), Some(*want), "{expression}");
        }
    }

    #[test]
    fn null_rules() {
        // A missing property makes a comparison NULL; NOT NULL is NULL; only TRUE matches.
        for expression in [
            "zz = 1",
            "zz <> 1",
            "zz > 1",
            "zz < 1",
            "NOT (zz = 1)",
            "zz BETWEEN 1 AND 2",
            "zz NOT BETWEEN 1 AND 2",
            "zz IN ('x')",
            "zz NOT IN ('x')",
            "zz = 'x' AND TRUE",
            "zz",
            "NOT zz",
        ] {
            assert_eq!(
                matches(expression, &[("a", "1")]),
                Some(false),
                "{expression}"
            );
        }
        // NULL OR TRUE is TRUE, NULL AND FALSE is FALSE (so NOT of it is TRUE).
        assert_eq!(matches("zz = 1 OR a = 1", &[("a", "1")]), Some(true));
        assert_eq!(matches("NOT (zz = 1 AND a = 2)", &[("a", "1")]), Some(true));
        // Two missing properties are equal (NULL = NULL is TRUE in Apache's evaluator).
        assert_eq!(matches("zz = yy", &[]), Some(true));
        // A property alone is never TRUE, even "true".
        assert_eq!(matches("a", &[("a", "true")]), Some(false));
        assert_eq!(matches("NOT a", &[("a", "true")]), Some(true));
        // Properties with an empty value are absent, and the last of a repeated name wins.
        assert_eq!(matches("a IS NULL", &[("a", "")]), Some(true));
        assert_eq!(matches("a = 2", &[("a", "1"), ("a", "2")]), Some(true));
    }

    #[test]
    fn failed_conversions_reject_the_message() {
        // Integer.valueOf("7.5") throws: the whole filter fails, even an OR with a TRUE side.
        assert_eq!(matches("c > 5", &[("c", "7.5")]), Some(false));
        assert_eq!(
            matches("c > 5 OR b = 'x'", &[("c", "7.5"), ("b", "x")]),
            Some(false)
        );
        // ...unless the OR was decided before reaching it.
        assert_eq!(
            matches("b = 'x' OR c > 5", &[("c", "7.5"), ("b", "x")]),
            Some(true)
        );
        assert_eq!(matches("b = 5", &[("b", "x")]), Some(false));
        assert_eq!(matches("NOT (b = 5)", &[("b", "x")]), Some(false));
        // Two properties compared by > must both be numbers.
        assert_eq!(matches("a > b", &[("a", "2"), ("b", "x")]), Some(false));
        assert_eq!(matches("a > b", &[("a", "2"), ("b", "1")]), Some(true));
    }

    #[test]
    fn text_operators() {
        let m = [("s", "hello world")];
        let cases: &[(&str, bool)] = &[
            ("s CONTAINS 'lo w'", true),
            ("s NOT CONTAINS 'lo w'", false),
            ("s STARTSWITH 'hell'", true),
            ("s NOT STARTSWITH 'world'", true),
            ("s ENDSWITH 'world'", true),
            ("s ENDSWITH 'hello'", false),
            ("s CONTAINS ''", false),
            ("s NOT CONTAINS ''", false),
            ("zz CONTAINS 'x'", false),
            ("zz NOT CONTAINS 'x'", false),
            ("NOT (zz CONTAINS 'x')", true),
        ];
        for (expression, want) in cases {
            assert_eq!(matches(expression, &m), Some(*want), "{expression}");
        }
    }

    #[test]
    fn system_properties_are_properties() {
        let m = [("TAGS", "TagA"), ("KEYS", "k1 k2"), ("UNIQ_KEY", "ABC")];
        assert_eq!(matches("TAGS = 'TagA'", &m), Some(true));
        assert_eq!(
            matches("TAGS IN ('TagB', 'TagA') AND KEYS IS NOT NULL", &m),
            Some(true)
        );
    }

    #[test]
    fn errors_say_where() {
        let e = SqlFilter::compile("a > 5 AND b = ").unwrap_err();
        assert_eq!(e.at, 14);
        assert!(e.to_string().contains("end of the expression"), "{e}");
        let e = SqlFilter::compile("a > 'x'").unwrap_err();
        assert!(e.to_string().contains("compares numbers"), "{e}");
    }

    #[test]
    fn records_are_matched_by_their_properties() {
        let p = props(&[("a", "6"), ("b", "x")]);
        let rec = protocol::message::record::MessageRecord {
            topic: "T".into(),
            body: bytes::Bytes::from_static(b"body"),
            properties: p,
            ..Default::default()
        };
        let mut bytes = Vec::new();
        rec.encode(&mut bytes).unwrap();
        let f = SqlFilter::compile("a > 5 AND b = 'x'").unwrap();
        assert!(f.matches_record(&bytes));
        assert!(!SqlFilter::compile("a > 6").unwrap().matches_record(&bytes));
        assert!(!f.matches_record(b"not a record"));
        assert!(SqlFilter::compile("a IS NULL")
            .unwrap()
            .matches_record(b"not a record"));
    }

    /// Fragments that build mostly well-formed expressions, to reach deep into the parser.
    fn fragment() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "a",
            "b",
            "zz",
            "TAGS",
            "1",
            "-",
            "+",
            "2.5",
            "0",
            "2147483648",
            "'x'",
            "'7'",
            "''",
            "=",
            "<>",
            ">",
            ">=",
            "<",
            "<=",
            "AND",
            "OR",
            "NOT",
            "(",
            ")",
            "BETWEEN",
            "IN",
            ",",
            "IS",
            "NULL",
            "TRUE",
            "FALSE",
            "CONTAINS",
            "STARTSWITH",
            "ENDSWITH",
            "--",
            "/*",
            "*/",
            "\n",
            "'",
            "9223372036854775808",
            "1e999",
            ".5",
            "é",
            "$",
        ])
    }

    fn property_value() -> impl Strategy<Value = String> {
        prop_oneof![
            "-?[0-9]{1,12}(\\.[0-9]{0,3})?",
            "[a-z]{0,3}",
            Just("NaN".to_owned()),
            Just("true".to_owned()),
            any::<String>(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn arbitrary_text_never_panics(src in any::<String>(), a in property_value()) {
            if let Ok(f) = SqlFilter::compile(&src) {
                f.matches(&props(&[("a", &a)]));
            }
        }

        #[test]
        fn token_soup_never_panics(
            parts in prop::collection::vec(fragment(), 0..40),
            a in property_value(),
            b in property_value(),
        ) {
            let src = parts.join(" ");
            match SqlFilter::compile(&src) {
                Ok(f) => {
                    f.matches(&props(&[("a", &a), ("b", &b)]));
                    f.matches("");
                }
                Err(e) => prop_assert!(e.at <= src.len(), "{} beyond {:?}", e, src),
            }
        }

        #[test]
        fn arbitrary_records_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
            let f = SqlFilter::compile("a > 5 OR b CONTAINS 'x'").unwrap();
            f.matches_record(&bytes);
        }

        #[test]
        fn integer_comparisons_agree_with_arithmetic(a in any::<i32>(), k in any::<i32>()) {
            let m = [("a", a.to_string())];
            let pairs: Vec<(&str, &str)> = m.iter().map(|(k, v)| (*k, v.as_str())).collect();
            // A negative literal is a negated literal: the grammar has no signed numbers.
            let lit = if k < 0 { format!("-{}", i64::from(k).abs()) } else { k.to_string() };
            prop_assert_eq!(matches(&format!("a > {lit}"), &pairs), Some(a > k));
            prop_assert_eq!(matches(&format!("a <= {lit}"), &pairs), Some(a <= k));
            prop_assert_eq!(matches(&format!("a = {lit}"), &pairs), Some(a == k));
        }
    }
}
