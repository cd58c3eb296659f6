//! Raft messages between controllers: each openraft RPC is a remoting request with a JSON body, sent
//! to the peer's controller port (the one address of `controllerDLegerPeers`).

use std::error::Error;

use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use protocol::{response_code, RemotingCommand};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::peer_client::PeerClient;
use super::types::{NodeId, TypeConfig};

/// Request codes of raft messages between controllers (not Apache's: its controllers speak DLedger
/// or JRaft on a port of their own). Far above Apache's codes so they never meet one.
pub const RAFT_APPEND_ENTRIES: i32 = 1_100_001;
pub const RAFT_VOTE: i32 = 1_100_002;
pub const RAFT_INSTALL_SNAPSHOT: i32 = 1_100_003;

/// Makes one connection per peer and replication stream.
pub struct Network;

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerConnection;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> PeerConnection {
        PeerConnection {
            target,
            client: PeerClient::new(node.addr.clone()),
        }
    }
}

/// openraft's client of one peer.
pub struct PeerConnection {
    target: NodeId,
    client: PeerClient,
}

type RpcResult<T, E> = Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

impl PeerConnection {
    async fn rpc<Req, Resp, E>(
        &mut self,
        code: i32,
        req: &Req,
        option: RPCOption,
    ) -> RpcResult<Resp, E>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: Error + DeserializeOwned,
    {
        let body = serde_json::to_vec(req).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let request = RemotingCommand::request(code).with_body(body);
        let response = self
            .client
            .call(request, option.hard_ttl())
            .await
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))?;
        if response.code != response_code::SUCCESS {
            let e = std::io::Error::other(format!(
                "peer n{} answered {}: {}",
                self.target,
                response.code,
                response.remark.unwrap_or_default()
            ));
            return Err(RPCError::Network(NetworkError::new(&e)));
        }
        let answer: Result<Resp, RaftError<NodeId, E>> = serde_json::from_slice(&response.body)
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for PeerConnection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>, openraft::error::Infallible> {
        self.rpc(RAFT_APPEND_ENTRIES, &rpc, option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        self.rpc(RAFT_INSTALL_SNAPSHOT, &rpc, option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>, openraft::error::Infallible> {
        self.rpc(RAFT_VOTE, &rpc, option).await
    }
}
