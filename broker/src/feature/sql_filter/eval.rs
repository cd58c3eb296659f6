//! Evaluation of a compiled SQL92 filter against a message's properties, with the semantics of
//! Apache's expression classes: Java-typed values, three-valued logic (a missing property is NULL;
//! NULL in a comparison gives NULL, and only TRUE matches), Java's conversions between a string and
//! a number, and its exceptions: a conversion that fails aborts the whole evaluation, which then
//! does not match (Apache's broker logs the exception and skips the message).

use std::cmp::Ordering;

use super::ast::{CmpOp, Expr, Literal, StrOp};
use super::java;

/// A Java value an expression evaluates to; properties are always strings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(&'a str),
}

/// A Java exception during evaluation (a failed number conversion, a ClassCastException).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError(pub &'static str);

type Eval<'a> = Result<Value<'a>, EvalError>;

/// Where evaluation finds a property's value.
pub trait Properties<'a> {
    fn get(&self, name: &str) -> Option<&'a str>;
}

pub fn literal_value(l: &Literal) -> Value<'_> {
    match l {
        Literal::Str(s) => Value::Str(s),
        Literal::Int(v) => Value::Int(*v),
        Literal::Long(v) => Value::Long(*v),
        Literal::Double(v) => Value::Double(*v),
    }
}

fn boolean(b: Option<bool>) -> Value<'static> {
    b.map_or(Value::Null, Value::Bool)
}

/// A boolean operand of AND, OR, NOT (Java casts it to `Boolean`).
fn as_bool(v: Value<'_>) -> Result<Option<bool>, EvalError> {
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(b)),
        _ => Err(EvalError(
            "ClassCastException: a non-boolean operand of AND, OR or NOT",
        )),
    }
}

/// Apache's `ComparisonExpression.__compare` with string conversion on (as its parser always sets):
/// values of different types are converted (int to long to double; a string to the other side's
/// type, which may fail); a boolean against a number orders as "less" (Java returns -1).
pub fn java_compare(l: Value<'_>, r: Value<'_>) -> Result<Ordering, EvalError> {
    use Value::*;
    let bad_int = EvalError("NumberFormatException: not an int");
    let bad_long = EvalError("NumberFormatException: not a long");
    let bad_double = EvalError("NumberFormatException: not a double");
    Ok(match (l, r) {
        (Bool(a), Bool(b)) => a.cmp(&b),
        (Int(a), Int(b)) => a.cmp(&b),
        (Long(a), Long(b)) => a.cmp(&b),
        (Double(a), Double(b)) => java::compare_doubles(a, b),
        (Str(a), Str(b)) => java::compare_strings(a, b),
        (Bool(_), Str(_)) => {
            return Err(EvalError(
                "ClassCastException: Boolean compared with String",
            ))
        }
        (Int(a), Long(b)) => i64::from(a).cmp(&b),
        (Int(a), Double(b)) => java::compare_doubles(f64::from(a), b),
        (Int(a), Str(s)) => a.cmp(&java::parse_int(s).ok_or(bad_int)?),
        (Long(a), Int(b)) => a.cmp(&i64::from(b)),
        (Long(a), Double(b)) => java::compare_doubles(a as f64, b),
        (Long(a), Str(s)) => a.cmp(&java::parse_long(s).ok_or(bad_long)?),
        (Double(a), Int(b)) => java::compare_doubles(a, f64::from(b)),
        (Double(a), Long(b)) => java::compare_doubles(a, b as f64),
        (Double(a), Str(s)) => java::compare_doubles(a, java::parse_double(s).ok_or(bad_double)?),
        (Str(s), Bool(b)) => java::parse_boolean(s).cmp(&b),
        (Str(s), Int(b)) => java::parse_int(s).ok_or(bad_int)?.cmp(&b),
        (Str(s), Long(b)) => java::parse_long(s).ok_or(bad_long)?.cmp(&b),
        (Str(s), Double(b)) => java::compare_doubles(java::parse_double(s).ok_or(bad_double)?, b),
        // A boolean against a number, or a NULL (callers handle NULL first).
        _ => Ordering::Less,
    })
}

/// `=`: NULL on the left gives NULL, NULL only on the right gives FALSE, NULL on both TRUE.
fn equal<'a>(l: Value<'a>, r: Value<'a>) -> Eval<'a> {
    Ok(match (l, r) {
        (Value::Null, Value::Null) => Value::Bool(true),
        (Value::Null, _) => Value::Null,
        (_, Value::Null) => Value::Bool(false),
        _ => Value::Bool(java_compare(l, r)? == Ordering::Equal),
    })
}

/// `>`, `>=`, `<`, `<=` on two evaluated values: NULL on either side gives NULL; two strings are
/// compared as doubles (an error when either is not a number).
fn ordered<'a>(op: CmpOp, l: Value<'a>, r: Value<'a>) -> Eval<'a> {
    if l == Value::Null || r == Value::Null {
        return Ok(Value::Null);
    }
    let order = match (l, r) {
        (Value::Str(a), Value::Str(b)) => {
            let bad = EvalError("strings compared by >, >=, < or <= must be numbers");
            let a = java::parse_double(a).ok_or(bad.clone())?;
            let b = java::parse_double(b).ok_or(bad)?;
            java::compare_doubles(a, b)
        }
        _ => java_compare(l, r)?,
    };
    Ok(Value::Bool(match op {
        CmpOp::Gt => order == Ordering::Greater,
        CmpOp::Ge => order != Ordering::Less,
        CmpOp::Lt => order == Ordering::Less,
        CmpOp::Le => order != Ordering::Greater,
        CmpOp::Eq => order == Ordering::Equal,
    }))
}

/// `>`, `>=`, `<`, `<=` with Java's order of evaluation: the right side is not evaluated when the
/// left is NULL.
fn compare_lazy<'a, P: Properties<'a>>(
    op: CmpOp,
    left: Value<'a>,
    right: &'a Expr,
    props: &P,
) -> Eval<'a> {
    if left == Value::Null {
        return Ok(Value::Null);
    }
    ordered(op, left, eval(right, props)?)
}

/// AND over a chain: FALSE as soon as a term is FALSE, else NULL if any term was NULL, else TRUE.
fn and<'a, P: Properties<'a>>(terms: &'a [Expr], props: &P) -> Eval<'a> {
    let mut acc = Some(true);
    for (i, term) in terms.iter().enumerate() {
        let v = as_bool(eval(term, props)?)?;
        acc = match (i, acc, v) {
            (0, _, v) => v,
            (_, _, Some(false)) => Some(false),
            (_, Some(true), Some(true)) => Some(true),
            _ => None,
        };
        if acc == Some(false) {
            return Ok(Value::Bool(false));
        }
    }
    Ok(boolean(acc))
}

/// OR over a chain: TRUE as soon as a term is TRUE, else NULL if any term was NULL, else FALSE.
fn or<'a, P: Properties<'a>>(terms: &'a [Expr], props: &P) -> Eval<'a> {
    let mut acc = Some(false);
    for (i, term) in terms.iter().enumerate() {
        let v = as_bool(eval(term, props)?)?;
        acc = match (i, acc, v) {
            (0, _, v) => v,
            (_, _, Some(true)) => Some(true),
            (_, Some(false), Some(false)) => Some(false),
            _ => None,
        };
        if acc == Some(true) {
            return Ok(Value::Bool(true));
        }
    }
    Ok(boolean(acc))
}

pub fn eval<'a, P: Properties<'a>>(e: &'a Expr, props: &P) -> Eval<'a> {
    Ok(match e {
        Expr::Literal(l) => literal_value(l),
        Expr::BoolConst(b) => boolean(*b),
        Expr::Property(name) => props.get(name).map_or(Value::Null, Value::Str),
        Expr::Negate(inner) => match eval(inner, props)? {
            Value::Int(v) => Value::Int(v.wrapping_neg()),
            Value::Long(v) => Value::Long(v.wrapping_neg()),
            Value::Double(v) => Value::Double(-v),
            _ => Value::Null,
        },
        Expr::Not(inner) => boolean(as_bool(eval(inner, props)?)?.map(|b| !b)),
        Expr::BoolCast(inner) => match eval(inner, props)? {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(b),
            _ => Value::Bool(false),
        },
        Expr::And(terms) => return and(terms, props),
        Expr::Or(terms) => return or(terms, props),
        Expr::Compare(CmpOp::Eq, l, r) => return equal(eval(l, props)?, eval(r, props)?),
        Expr::Compare(op, l, r) => return compare_lazy(*op, eval(l, props)?, r, props),
        Expr::Between {
            value,
            low,
            high,
            not,
        } => {
            // Apache evaluates the value once per comparison; it has no side effects, so once here.
            let v = eval(value, props)?;
            let first = if *not { CmpOp::Lt } else { CmpOp::Ge };
            let second = if *not { CmpOp::Gt } else { CmpOp::Le };
            let lv = as_bool(compare_lazy(first, v, low, props)?)?;
            // AND stops at FALSE, OR at TRUE, before the second comparison.
            if lv == Some(*not) {
                return Ok(Value::Bool(*not));
            }
            let rv = as_bool(compare_lazy(second, v, high, props)?)?;
            match (lv, rv) {
                (_, Some(r)) if r == *not => Value::Bool(*not),
                (Some(_), Some(_)) => Value::Bool(!*not),
                _ => Value::Null,
            }
        }
        Expr::In {
            property,
            list,
            not,
        } => match props.get(property) {
            None => Value::Null,
            Some(s) => Value::Bool(list.binary_search_by(|x| (**x).cmp(s)).is_ok() != *not),
        },
        Expr::Text {
            op,
            value,
            search,
            not,
        } => {
            // An empty search never matches, negated or not, and the value is not evaluated.
            if search.is_empty() {
                return Ok(Value::Bool(false));
            }
            match eval(value, props)? {
                Value::Str(s) => {
                    let found = match op {
                        StrOp::Contains => s.contains(&**search),
                        StrOp::StartsWith => s.starts_with(&**search),
                        StrOp::EndsWith => s.ends_with(&**search),
                    };
                    Value::Bool(found != *not)
                }
                // NULL or not a string: FALSE, also for the negated forms.
                _ => Value::Bool(false),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_follow_java() {
        use Value::*;
        assert_eq!(java_compare(Str("10"), Int(5)), Ok(Ordering::Greater));
        assert!(
            java_compare(Str("7.5"), Int(5)).is_err(),
            "Integer.valueOf(\"7.5\") throws"
        );
        assert_eq!(java_compare(Str("7.5"), Double(5.0)), Ok(Ordering::Greater));
        assert_eq!(java_compare(Int(5), Long(5)), Ok(Ordering::Equal));
        assert_eq!(java_compare(Long(5), Double(5.5)), Ok(Ordering::Less));
        assert_eq!(java_compare(Str("TRUE"), Bool(true)), Ok(Ordering::Equal));
        assert_eq!(java_compare(Str("yes"), Bool(false)), Ok(Ordering::Equal));
        assert!(java_compare(Bool(true), Str("true")).is_err());
        assert_eq!(java_compare(Bool(true), Int(1)), Ok(Ordering::Less));
        assert_eq!(java_compare(Int(1), Bool(true)), Ok(Ordering::Less));
    }

    #[test]
    fn equality_and_null() {
        use Value::*;
        assert_eq!(equal(Null, Null), Ok(Bool(true)));
        assert_eq!(equal(Null, Int(1)), Ok(Null));
        assert_eq!(equal(Int(1), Null), Ok(Bool(false)));
        assert_eq!(equal(Str("x"), Str("x")), Ok(Bool(true)));
        assert_eq!(ordered(CmpOp::Gt, Str("10"), Str("9")), Ok(Bool(true)));
        assert!(ordered(CmpOp::Gt, Str("b"), Str("a")).is_err());
        assert_eq!(ordered(CmpOp::Le, Null, Int(1)), Ok(Null));
    }
}
