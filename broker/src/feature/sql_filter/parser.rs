//! Recursive-descent parser for RocketMQ's SQL92 filter grammar, one function per production of its
//! `SelectorParser.jj` (OR, then AND, then `=` `<>` `IS [NOT] NULL`, then `>` `>=` `<` `<=`
//! `[NOT] BETWEEN` `[NOT] IN` `[NOT] CONTAINS|STARTSWITH|ENDSWITH`, then unary `+` `-` `NOT`, then
//! literals, properties and parentheses), with the checks Apache makes while it builds the tree.
//! As in Apache's parser, nothing after a complete expression is read beyond the one token that
//! ends it (`a = 1 b` filters by `a = 1`).

use std::collections::VecDeque;

use super::ast::{CmpOp, Expr, Literal, StrOp};
use super::error::SqlError;
use super::eval::{java_compare, literal_value};
use super::lexer::{Lexer, Spanned, Tok};

/// Deepest expression tree accepted (and deepest nesting of parentheses and unary operators while
/// parsing): bounds the recursion of parsing, evaluating and dropping a filter.
pub const MAX_DEPTH: usize = 100;

/// An expression with the depth of its tree and where it starts in the text.
struct Node {
    e: Expr,
    depth: usize,
    at: usize,
}

/// `Double.MIN_VALUE`: Apache refuses a decimal literal below it (so `0.0` too).
const JAVA_DOUBLE_MIN_VALUE: f64 = 4.9e-324;

pub fn parse(src: &str) -> Result<Expr, SqlError> {
    let mut p = Parser {
        lexer: Lexer::new(src),
        ahead: VecDeque::new(),
        nesting: 0,
    };
    let n = p.or_expr()?;
    Ok(as_boolean(n)?.e)
}

struct Parser<'s> {
    lexer: Lexer<'s>,
    ahead: VecDeque<Result<Spanned, SqlError>>,
    nesting: usize,
}

/// A node over children whose deepest tree is `child_depth` deep.
fn node(e: Expr, at: usize, child_depth: usize) -> Result<Node, SqlError> {
    let depth = child_depth + 1;
    if depth > MAX_DEPTH {
        return Err(SqlError::at(
            format!("expression nested more than {MAX_DEPTH} levels deep"),
            at,
        ));
    }
    Ok(Node { e, depth, at })
}

fn leaf(e: Expr, at: usize) -> Node {
    Node { e, depth: 1, at }
}

/// Apache's `asBooleanExpression`: a boolean node as it is, a property cast to a boolean, anything
/// else refused.
fn as_boolean(n: Node) -> Result<Node, SqlError> {
    if n.e.is_boolean() {
        return Ok(n);
    }
    if matches!(n.e, Expr::Property(_)) {
        return node(Expr::BoolCast(Box::new(n.e)), n.at, n.depth);
    }
    Err(SqlError::at(
        "expression does not give a boolean value",
        n.at,
    ))
}

/// Apache's `checkLessThanOperand`: `>`, `>=`, `<`, `<=` and BETWEEN take numbers, properties and
/// negations, never a string, boolean or NULL constant nor a boolean expression.
fn check_ordered_operand(n: &Node, op: &str) -> Result<(), SqlError> {
    let refused = match &n.e {
        Expr::Literal(Literal::Str(_)) | Expr::BoolConst(_) => true,
        Expr::Literal(_) => false,
        e => e.is_boolean(),
    };
    if refused {
        return Err(SqlError::at(
            format!("{op} compares numbers or properties only"),
            n.at,
        ));
    }
    Ok(())
}

/// Apache's `checkEqualOperand` and `checkEqualOperandCompatability` for `=` and `<>`.
fn check_equal_operands(l: &Node, r: &Node, at: usize) -> Result<(), SqlError> {
    for n in [l, r] {
        if n.e == Expr::BoolConst(None) {
            return Err(SqlError::at(
                "NULL cannot be compared with = or <> (use IS NULL)",
                n.at,
            ));
        }
    }
    if matches!(l.e, Expr::BoolConst(_)) && matches!(r.e, Expr::Literal(_)) {
        return Err(SqlError::at(
            "a boolean constant cannot be compared with a string or number constant",
            at,
        ));
    }
    Ok(())
}

fn compare(op: CmpOp, l: Node, r: Node) -> Result<Node, SqlError> {
    let (depth, at) = (l.depth.max(r.depth), l.at);
    node(Expr::Compare(op, Box::new(l.e), Box::new(r.e)), at, depth)
}

fn not(n: Node) -> Result<Node, SqlError> {
    node(Expr::Not(Box::new(n.e)), n.at, n.depth)
}

impl Parser<'_> {
    fn fill(&mut self, n: usize) {
        while self.ahead.len() < n {
            let t = self.lexer.next_token();
            self.ahead.push_back(t);
        }
    }

    fn peek_nth(&mut self, n: usize) -> Result<&Tok, SqlError> {
        self.fill(n + 1);
        match self.ahead.get(n) {
            Some(Ok((t, _))) => Ok(t),
            Some(Err(e)) => Err(e.clone()),
            None => Err(SqlError::at("no token", 0)),
        }
    }

    fn peek(&mut self) -> Result<&Tok, SqlError> {
        self.peek_nth(0)
    }

    fn bump(&mut self) -> Result<Spanned, SqlError> {
        self.fill(1);
        self.ahead
            .pop_front()
            .unwrap_or_else(|| Err(SqlError::at("no token", 0)))
    }

    fn unexpected(&mut self, wanted: &str) -> SqlError {
        match self.bump() {
            Ok((t, at)) => SqlError::at(format!("expected {wanted}, found {}", t.describe()), at),
            Err(e) => e,
        }
    }

    fn expect(&mut self, want: Tok, wanted: &str) -> Result<usize, SqlError> {
        if *self.peek()? == want {
            return Ok(self.bump()?.1);
        }
        Err(self.unexpected(wanted))
    }

    fn string_literal(&mut self) -> Result<Box<str>, SqlError> {
        if let Tok::Str(_) = self.peek()? {
            if let (Tok::Str(s), _) = self.bump()? {
                return Ok(s);
            }
        }
        Err(self.unexpected("a string in single quotes"))
    }

    fn or_expr(&mut self) -> Result<Node, SqlError> {
        self.chain(Tok::Or, Parser::and_expr, Expr::Or)
    }

    fn and_expr(&mut self) -> Result<Node, SqlError> {
        self.chain(Tok::And, Parser::equality_expr, Expr::And)
    }

    /// `operand (op operand)*`; with more than one operand each must be boolean.
    fn chain(
        &mut self,
        op: Tok,
        operand: fn(&mut Self) -> Result<Node, SqlError>,
        build: fn(Vec<Expr>) -> Expr,
    ) -> Result<Node, SqlError> {
        let first = operand(self)?;
        if *self.peek()? != op {
            return Ok(first);
        }
        let at = first.at;
        let mut depth = first.depth;
        let mut terms = vec![as_boolean(first)?.e];
        while *self.peek()? == op {
            self.bump()?;
            let next = as_boolean(operand(self)?)?;
            depth = depth.max(next.depth);
            terms.push(next.e);
        }
        node(build(terms), at, depth)
    }

    fn equality_expr(&mut self) -> Result<Node, SqlError> {
        let mut left = self.comparison_expr()?;
        loop {
            match self.peek()? {
                Tok::Eq | Tok::Ne => {
                    let (op, at) = self.bump()?;
                    let right = self.comparison_expr()?;
                    check_equal_operands(&left, &right, at)?;
                    left = compare(CmpOp::Eq, left, right)?;
                    if op == Tok::Ne {
                        left = not(left)?;
                    }
                }
                Tok::Is => {
                    let (_, at) = self.bump()?;
                    let negated = *self.peek()? == Tok::Not;
                    if negated {
                        self.bump()?;
                    }
                    self.expect(Tok::Null, if negated { "NULL" } else { "NULL or NOT NULL" })?;
                    let null = leaf(Expr::BoolConst(None), at);
                    left = compare(CmpOp::Eq, left, null)?;
                    if negated {
                        left = not(left)?;
                    }
                }
                _ => return Ok(left),
            }
        }
    }

    fn comparison_expr(&mut self) -> Result<Node, SqlError> {
        let mut left = self.unary_expr()?;
        loop {
            let op = match self.peek()? {
                Tok::Gt => Some(CmpOp::Gt),
                Tok::Ge => Some(CmpOp::Ge),
                Tok::Lt => Some(CmpOp::Lt),
                Tok::Le => Some(CmpOp::Le),
                _ => None,
            };
            if let Some(op) = op {
                let (tok, _) = self.bump()?;
                let right = self.unary_expr()?;
                let name = tok.describe();
                check_ordered_operand(&left, &name)?;
                check_ordered_operand(&right, &name)?;
                left = compare(op, left, right)?;
                continue;
            }
            let negated = *self.peek()? == Tok::Not;
            let keyword = self.peek_nth(usize::from(negated))?.clone();
            match keyword {
                Tok::Contains | Tok::StartsWith | Tok::EndsWith | Tok::Between | Tok::In => {}
                _ if negated => {
                    self.bump()?;
                    return Err(
                        self.unexpected("BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH after NOT")
                    );
                }
                _ => return Ok(left),
            }
            if negated {
                self.bump()?;
            }
            self.bump()?;
            left = match keyword {
                Tok::Between => self.between(left, negated)?,
                Tok::In => self.in_list(left, negated)?,
                text => {
                    let op = match text {
                        Tok::Contains => StrOp::Contains,
                        Tok::StartsWith => StrOp::StartsWith,
                        _ => StrOp::EndsWith,
                    };
                    let search = self.string_literal()?;
                    let (at, depth) = (left.at, left.depth);
                    let e = Expr::Text {
                        op,
                        value: Box::new(left.e),
                        search,
                        not: negated,
                    };
                    node(e, at, depth)?
                }
            };
        }
    }

    fn between(&mut self, value: Node, not: bool) -> Result<Node, SqlError> {
        let low = self.unary_expr()?;
        self.expect(Tok::And, "AND of BETWEEN")?;
        let high = self.unary_expr()?;
        let name = if not { "NOT BETWEEN" } else { "BETWEEN" };
        for n in [&value, &low, &high] {
            check_ordered_operand(n, name)?;
        }
        // Apache refuses constant bounds in the wrong order (only for BETWEEN, not NOT BETWEEN).
        if !not {
            if let (Expr::Literal(l), Expr::Literal(h)) = (&low.e, &high.e) {
                let wrong = java_compare(literal_value(h), literal_value(l))
                    .map_or(true, |o| o == std::cmp::Ordering::Less);
                if wrong {
                    return Err(SqlError::at(
                        "BETWEEN's first value must not be above its second",
                        low.at,
                    ));
                }
            }
        }
        // Apache's tree has two levels here (comparisons joined by AND or OR): count both.
        let (depth, at) = (value.depth.max(low.depth).max(high.depth) + 1, value.at);
        let e = Expr::Between {
            value: Box::new(value.e),
            low: Box::new(low.e),
            high: Box::new(high.e),
            not,
        };
        node(e, at, depth)
    }

    fn in_list(&mut self, left: Node, not: bool) -> Result<Node, SqlError> {
        self.expect(Tok::LParen, "( after IN")?;
        let mut list = vec![self.string_literal()?];
        while *self.peek()? == Tok::Comma {
            self.bump()?;
            list.push(self.string_literal()?);
        }
        self.expect(Tok::RParen, ", or ) in the IN list")?;
        let Expr::Property(property) = left.e else {
            return Err(SqlError::at("IN needs a property on its left", left.at));
        };
        list.sort_unstable();
        list.dedup();
        Ok(leaf(
            Expr::In {
                property,
                list,
                not,
            },
            left.at,
        ))
    }

    fn unary_expr(&mut self) -> Result<Node, SqlError> {
        if self.nesting >= MAX_DEPTH {
            let at = match self.ahead.front() {
                Some(Ok((_, at))) => *at,
                _ => 0,
            };
            return Err(SqlError::at(
                format!("expression nested more than {MAX_DEPTH} levels deep"),
                at,
            ));
        }
        self.nesting += 1;
        let result = self.unary_inner();
        self.nesting -= 1;
        result
    }

    fn unary_inner(&mut self) -> Result<Node, SqlError> {
        match self.peek()? {
            Tok::Plus => {
                self.bump()?;
                self.unary_expr()
            }
            Tok::Minus => {
                let (_, at) = self.bump()?;
                let n = self.unary_expr()?;
                node(Expr::Negate(Box::new(n.e)), at, n.depth)
            }
            Tok::Not => {
                let (_, at) = self.bump()?;
                let n = as_boolean(self.unary_expr()?)?;
                node(Expr::Not(Box::new(n.e)), at, n.depth)
            }
            _ => self.primary_expr(),
        }
    }

    fn primary_expr(&mut self) -> Result<Node, SqlError> {
        let (tok, at) = match self.peek()? {
            Tok::LParen => {
                self.bump()?;
                let inner = self.or_expr()?;
                self.expect(Tok::RParen, ")")?;
                return Ok(inner);
            }
            Tok::Str(_)
            | Tok::Decimal(_)
            | Tok::Float(_)
            | Tok::True
            | Tok::False
            | Tok::Null
            | Tok::Id(_) => self.bump()?,
            _ => return Err(self.unexpected("a value, a property or (")),
        };
        let e = match tok {
            Tok::Str(s) => Expr::Literal(Literal::Str(s)),
            Tok::Decimal(text) => Expr::Literal(decimal(&text, at)?),
            Tok::Float(text) => Expr::Literal(float(&text, at)?),
            Tok::True => Expr::BoolConst(Some(true)),
            Tok::False => Expr::BoolConst(Some(false)),
            Tok::Id(name) => Expr::Property(name),
            _ => Expr::BoolConst(None),
        };
        Ok(leaf(e, at))
    }
}

/// Apache's `createFromDecimal`: an `int` when it fits, else a `long`; beyond that an error.
fn decimal(text: &str, at: usize) -> Result<Literal, SqlError> {
    let digits = text.trim_end_matches(['l', 'L']);
    let value: i64 = digits
        .parse()
        .map_err(|_| SqlError::at(format!("{text} is out of the range of a long"), at))?;
    Ok(i32::try_from(value).map_or(Literal::Long(value), Literal::Int))
}

/// Apache's `createFloat`: a double, refused when infinite or below `Double.MIN_VALUE` (zero too).
fn float(text: &str, at: usize) -> Result<Literal, SqlError> {
    let value: f64 = text
        .parse()
        .map_err(|_| SqlError::at(format!("{text} is not a number"), at))?;
    if value.is_infinite() {
        return Err(SqlError::at(
            format!("{text} is greater than the largest double"),
            at,
        ));
    }
    if value < JAVA_DOUBLE_MIN_VALUE {
        return Err(SqlError::at(
            format!("{text} is less than 4.9E-324 (Apache refuses a zero decimal literal)"),
            at,
        ));
    }
    Ok(Literal::Double(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prop(s: &str) -> Box<Expr> {
        Box::new(Expr::Property(s.into()))
    }

    fn int(v: i32) -> Box<Expr> {
        Box::new(Expr::Literal(Literal::Int(v)))
    }

    #[test]
    fn precedence_follows_the_grammar() {
        // AND binds tighter than OR.
        let e = parse("a = 1 OR b = 2 AND c = 3").unwrap();
        let Expr::Or(terms) = e else { panic!("{e:?}") };
        assert_eq!(terms.len(), 2);
        assert!(matches!(terms[1], Expr::And(_)));
        // NOT binds tighter than =: (NOT a) = 1.
        let e = parse("NOT a = 1").unwrap();
        assert_eq!(
            e,
            Expr::Compare(
                CmpOp::Eq,
                Box::new(Expr::Not(Box::new(Expr::BoolCast(prop("a"))))),
                int(1)
            )
        );
        // <> is NOT of =; IS NOT NULL is NOT of = NULL.
        assert_eq!(
            parse("a <> 1").unwrap(),
            Expr::Not(Box::new(Expr::Compare(CmpOp::Eq, prop("a"), int(1))))
        );
        assert_eq!(
            parse("a IS NOT NULL").unwrap(),
            Expr::Not(Box::new(Expr::Compare(
                CmpOp::Eq,
                prop("a"),
                Box::new(Expr::BoolConst(None))
            )))
        );
        assert_eq!(
            parse("-a > +2").unwrap(),
            Expr::Compare(CmpOp::Gt, Box::new(Expr::Negate(prop("a"))), int(2))
        );
    }

    #[test]
    fn literals() {
        let lit = |src: &str| match parse(&format!("a = {src}")).unwrap() {
            Expr::Compare(_, _, r) => *r,
            e => panic!("{e:?}"),
        };
        assert_eq!(lit("2147483647"), *int(i32::MAX));
        assert_eq!(
            lit("2147483648"),
            Expr::Literal(Literal::Long(2_147_483_648))
        );
        assert_eq!(lit("5L"), *int(5));
        assert_eq!(lit("1.5e2"), Expr::Literal(Literal::Double(150.0)));
        assert_eq!(lit("'it''s'"), Expr::Literal(Literal::Str("it's".into())));
        assert_eq!(lit("TRUE"), Expr::BoolConst(Some(true)));
        assert!(parse("a = 9223372036854775808").is_err());
        assert!(
            parse("a > 0.0").is_err(),
            "Apache refuses a zero decimal literal"
        );
        assert!(parse("a > 1e999").is_err());
        assert!(parse("a > 9223372036854775807").is_ok());
    }

    #[test]
    fn apache_build_checks() {
        for bad in [
            "",
            "'x'",
            "5",
            "a > 'x'",
            "'x' < a",
            "a > TRUE",
            "a >= NULL",
            "(a > 1) > 2",
            "a = NULL",
            "NULL <> a",
            "TRUE = 'x'",
            "TRUE = 1",
            "a BETWEEN 5 AND 1",
            "a BETWEEN 'a' AND 'b'",
            "a BETWEEN NULL AND 1",
            "'x' IN ('x')",
            "(a) = 1 IN ('x')",
            "a IN ()",
            "a IN (1)",
            "a CONTAINS b",
            "a NOT LIKE 'x'",
            "a = 1 NOT",
            "a IS 1",
            "a IS NOT 1",
            "a = 1 AND",
            "(a = 1",
            "a = 'x' AND 5",
            "NOT 5",
            "a = = 1",
            "a = 1 !",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
        for good in [
            "TRUE",
            "NULL",
            "NOT FALSE",
            "a",
            "a NOT BETWEEN 5 AND 1",
            "a BETWEEN -5 AND -10",
            "a BETWEEN 1 AND 2.5",
            "'x' = TRUE",
            "TRUE = FALSE",
            "1 = 'x'",
            "a = b",
            "5 IS NULL",
            "a = 1 = 2",
            "'abc' CONTAINS 'b'",
            "a CONTAINS 'x' CONTAINS 'y'",
            "-(a BETWEEN 1 AND 2) BETWEEN 1 AND 2",
            "a in ('x', 'y') and b not in ('z') or c startswith 'p' and d not endswith 's'",
            "a = 1 b = 2",
            "a = 1 b = 2 # never read",
        ] {
            // The last two: text past a complete expression is not read, as in Apache.
            assert!(parse(good).is_ok(), "{good:?}: {:?}", parse(good));
        }
    }

    #[test]
    fn depth_is_bounded_without_overflowing_the_stack() {
        let deep_parens = format!("{}a = 1{}", "(".repeat(5000), ")".repeat(5000));
        assert!(parse(&deep_parens).is_err());
        let deep_not = format!("{}TRUE", "NOT ".repeat(5000));
        assert!(parse(&deep_not).is_err());
        let long_chain = format!("a{}", " = 1".repeat(5000));
        assert!(parse(&long_chain).is_err());
        let text_chain = format!("a{}", " CONTAINS 'x'".repeat(5000));
        assert!(parse(&text_chain).is_err());
        // Long flat AND/OR chains are one node, not a deep tree.
        let wide = (0..5000)
            .map(|i| format!("a = {i}"))
            .collect::<Vec<_>>()
            .join(" OR ");
        assert!(parse(&wide).is_ok());
        let ok_parens = format!("{}a = 1{}", "(".repeat(50), ")".repeat(50));
        assert!(parse(&ok_parens).is_ok());
    }
}
