//! The load generator (not implemented yet; see the README).
