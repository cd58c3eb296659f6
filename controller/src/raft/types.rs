//! The openraft type configuration: commands and replies of `replicas`, u64 node ids.

use std::io::Cursor;

use crate::replicas::{Command, Reply};

pub type NodeId = u64;

openraft::declare_raft_types!(
    /// The controller's raft types.
    pub TypeConfig:
        D = Command,
        R = Reply,
        NodeId = NodeId,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// The controller's raft node.
pub type Raft = openraft::Raft<TypeConfig>;
