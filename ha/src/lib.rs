//! Master/slave replication of every shard's CommitLog (not implemented yet; see the README).
