//! Why an SQL92 expression does not compile, and where.

/// Why an expression does not compile, and where (a byte offset into it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError {
    pub message: String,
    pub at: usize,
}

impl SqlError {
    pub(super) fn at(message: impl Into<String>, at: usize) -> SqlError {
        SqlError {
            message: message.into(),
            at,
        }
    }
}

impl std::fmt::Display for SqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.at)
    }
}

impl std::error::Error for SqlError {}
