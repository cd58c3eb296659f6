//! The compiled form of a SQL92 filter: one node per expression object Apache's parser builds, so
//! evaluation can follow its semantics node by node.

/// A literal that is not a boolean (Apache's plain `ConstantExpression`).
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Str(Box<str>),
    /// A decimal literal within `int` range (Java `Integer`).
    Int(i32),
    /// A decimal literal beyond `int` range (Java `Long`).
    Long(i64),
    Double(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrOp {
    Contains,
    StartsWith,
    EndsWith,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Literal(Literal),
    /// `TRUE`, `FALSE` or `NULL` (Apache's `BooleanConstantExpression`).
    BoolConst(Option<bool>),
    Property(Box<str>),
    /// Unary minus.
    Negate(Box<Expr>),
    Not(Box<Expr>),
    /// A property used where a boolean is expected: true only for a Boolean value, which a message
    /// property (always a string) never is.
    BoolCast(Box<Expr>),
    /// A chain `a AND b AND c`, evaluated left to right as Apache's left-nested binary nodes are.
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Compare(CmpOp, Box<Expr>, Box<Expr>),
    /// `v [NOT] BETWEEN low AND high`: `v >= low AND v <= high`, or `v < low OR v > high`.
    Between {
        value: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        not: bool,
    },
    /// `prop [NOT] IN ('a', ...)`, the list sorted for lookup.
    In {
        property: Box<str>,
        list: Vec<Box<str>>,
        not: bool,
    },
    /// `v [NOT] CONTAINS|STARTSWITH|ENDSWITH 'text'`.
    Text {
        op: StrOp,
        value: Box<Expr>,
        search: Box<str>,
        not: bool,
    },
}

impl Expr {
    /// Whether Apache's node is a `BooleanExpression` (what AND, OR, NOT and the whole filter need).
    pub fn is_boolean(&self) -> bool {
        !matches!(self, Expr::Literal(_) | Expr::Property(_) | Expr::Negate(_))
    }
}
