//! The name server: route table, broker registration and route queries.
