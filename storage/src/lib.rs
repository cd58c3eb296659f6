//! One shard's message store: CommitLog, ConsumeQueue, IndexFile, group commit, recovery.
