//! `apache.rocketmq.v2.MessagingService`: each RPC becomes remoting calls to the name servers and
//! brokers, as Apache's proxy does in cluster mode. One file per group of RPCs.

mod caller;
pub mod message_type;
pub mod pop;
pub mod receipt;
pub mod recall;
mod resource;
pub mod route;
pub mod send;
pub mod telemetry;
pub mod transaction;

pub use caller::Caller;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::pb::messaging_service_server::MessagingService;
use crate::pb::*;
use crate::state::Proxy;
use crate::status::{ok, ProxyError};

pub struct Service {
    pub proxy: Arc<Proxy>,
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// Runs one unary RPC: metadata, the handler, metrics; an error becomes the response's status.
macro_rules! unary {
    ($self:ident, $req:ident, $name:literal, $handler:path, $resp:ident) => {{
        let started = Instant::now();
        let proxy = $self.proxy.clone();
        let result = match authorized(&proxy, &$req).await {
            Ok(caller) => $handler(&proxy, &caller, $req.into_inner()).await,
            Err(e) => Err(e),
        };
        let ok = result.is_ok();
        let resp = result.unwrap_or_else(|e| {
            tracing::debug!(concat!($name, " failed: {}"), e);
            let mut resp = $resp::default();
            resp.status = Some(e.status());
            resp
        });
        let code = resp.status.as_ref().map_or(Code::Ok as i32, |s| s.code);
        proxy.metrics.record($name, ok, code, started.elapsed());
        Ok(Response::new(resp))
    }};
}

/// The caller of a request that passed the plain ACL or ACL 2.0 checks (whichever is on).
async fn authorized<T: crate::acl2::request::AuthRequest>(
    proxy: &Arc<Proxy>,
    req: &Request<T>,
) -> Result<Caller, ProxyError> {
    let caller = Caller::of(proxy, req)?;
    crate::acl2::check(proxy, req.metadata(), req.remote_addr(), req.get_ref()).await?;
    Ok(caller)
}

#[tonic::async_trait]
impl MessagingService for Service {
    async fn query_route(
        &self,
        request: Request<QueryRouteRequest>,
    ) -> Result<Response<QueryRouteResponse>, Status> {
        unary!(
            self,
            request,
            "QueryRoute",
            route::query_route,
            QueryRouteResponse
        )
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        unary!(self, request, "Heartbeat", heartbeat, HeartbeatResponse)
    }

    async fn send_message(
        &self,
        request: Request<SendMessageRequest>,
    ) -> Result<Response<SendMessageResponse>, Status> {
        unary!(
            self,
            request,
            "SendMessage",
            send::send_message,
            SendMessageResponse
        )
    }

    async fn query_assignment(
        &self,
        request: Request<QueryAssignmentRequest>,
    ) -> Result<Response<QueryAssignmentResponse>, Status> {
        unary!(
            self,
            request,
            "QueryAssignment",
            route::query_assignment,
            QueryAssignmentResponse
        )
    }

    type ReceiveMessageStream = BoxStream<ReceiveMessageResponse>;

    async fn receive_message(
        &self,
        request: Request<ReceiveMessageRequest>,
    ) -> Result<Response<Self::ReceiveMessageStream>, Status> {
        let started = Instant::now();
        let proxy = self.proxy.clone();
        let replies = match authorized(&proxy, &request).await {
            Ok(caller) => pop::receive_message(&proxy, &caller, request.into_inner()).await,
            Err(e) => Err(e),
        };
        // The stream's status reply (first), as the SDK reads it.
        let code = match &replies {
            Ok(r) => r
                .iter()
                .find_map(|m| match &m.content {
                    Some(receive_message_response::Content::Status(s)) => Some(s.code),
                    _ => None,
                })
                .unwrap_or(Code::Ok as i32),
            Err(e) => e.code() as i32,
        };
        proxy
            .metrics
            .record("ReceiveMessage", replies.is_ok(), code, started.elapsed());
        let replies = replies.unwrap_or_else(|e| {
            vec![ReceiveMessageResponse {
                content: Some(receive_message_response::Content::Status(e.status())),
            }]
        });
        Ok(Response::new(Box::pin(tokio_stream::iter(
            replies.into_iter().map(Ok),
        ))))
    }

    async fn ack_message(
        &self,
        request: Request<AckMessageRequest>,
    ) -> Result<Response<AckMessageResponse>, Status> {
        unary!(
            self,
            request,
            "AckMessage",
            pop::ack_message,
            AckMessageResponse
        )
    }

    async fn forward_message_to_dead_letter_queue(
        &self,
        request: Request<ForwardMessageToDeadLetterQueueRequest>,
    ) -> Result<Response<ForwardMessageToDeadLetterQueueResponse>, Status> {
        unary!(
            self,
            request,
            "ForwardMessageToDeadLetterQueue",
            pop::forward_to_dlq,
            ForwardMessageToDeadLetterQueueResponse
        )
    }

    type PullMessageStream = BoxStream<PullMessageResponse>;

    async fn pull_message(
        &self,
        _request: Request<PullMessageRequest>,
    ) -> Result<Response<Self::PullMessageStream>, Status> {
        Err(Status::unimplemented(
            "PullMessage (the 5.x PullConsumer) is not served by this proxy",
        ))
    }

    async fn update_offset(
        &self,
        _request: Request<UpdateOffsetRequest>,
    ) -> Result<Response<UpdateOffsetResponse>, Status> {
        Err(Status::unimplemented(
            "UpdateOffset is not served by this proxy",
        ))
    }

    async fn get_offset(
        &self,
        _request: Request<GetOffsetRequest>,
    ) -> Result<Response<GetOffsetResponse>, Status> {
        Err(Status::unimplemented(
            "GetOffset is not served by this proxy",
        ))
    }

    async fn query_offset(
        &self,
        _request: Request<QueryOffsetRequest>,
    ) -> Result<Response<QueryOffsetResponse>, Status> {
        Err(Status::unimplemented(
            "QueryOffset is not served by this proxy",
        ))
    }

    async fn end_transaction(
        &self,
        request: Request<EndTransactionRequest>,
    ) -> Result<Response<EndTransactionResponse>, Status> {
        unary!(
            self,
            request,
            "EndTransaction",
            transaction::end_transaction,
            EndTransactionResponse
        )
    }

    type TelemetryStream = BoxStream<TelemetryCommand>;

    async fn telemetry(
        &self,
        request: Request<tonic::Streaming<TelemetryCommand>>,
    ) -> Result<Response<Self::TelemetryStream>, Status> {
        let caller = Caller::of(&self.proxy, &request)
            .map_err(|e| Status::unauthenticated(e.to_string()))?;
        let auth = (request.metadata().clone(), request.remote_addr());
        let out = telemetry::open(self.proxy.clone(), caller, auth, request.into_inner());
        Ok(Response::new(Box::pin(out)))
    }

    async fn notify_client_termination(
        &self,
        request: Request<NotifyClientTerminationRequest>,
    ) -> Result<Response<NotifyClientTerminationResponse>, Status> {
        unary!(
            self,
            request,
            "NotifyClientTermination",
            notify_client_termination,
            NotifyClientTerminationResponse
        )
    }

    async fn change_invisible_duration(
        &self,
        request: Request<ChangeInvisibleDurationRequest>,
    ) -> Result<Response<ChangeInvisibleDurationResponse>, Status> {
        unary!(
            self,
            request,
            "ChangeInvisibleDuration",
            pop::change_invisible_duration,
            ChangeInvisibleDurationResponse
        )
    }

    async fn recall_message(
        &self,
        request: Request<RecallMessageRequest>,
    ) -> Result<Response<RecallMessageResponse>, Status> {
        unary!(
            self,
            request,
            "RecallMessage",
            recall::recall_message,
            RecallMessageResponse
        )
    }

    async fn sync_lite_subscription(
        &self,
        _request: Request<SyncLiteSubscriptionRequest>,
    ) -> Result<Response<SyncLiteSubscriptionResponse>, Status> {
        Err(Status::unimplemented(
            "lite topics are not served by this proxy",
        ))
    }
}

/// Heartbeat: the SDK's liveness signal. The proxy keeps no consumer registry (POP needs none);
/// producers of transactional topics are registered with the brokers by the telemetry session.
async fn heartbeat(
    _proxy: &Proxy,
    caller: &Caller,
    _req: HeartbeatRequest,
) -> Result<HeartbeatResponse, ProxyError> {
    if caller.client_id.is_empty() {
        return Err(ProxyError::Code(
            Code::ClientIdRequired,
            "x-mq-client-id is required".into(),
        ));
    }
    Ok(HeartbeatResponse { status: Some(ok()) })
}

async fn notify_client_termination(
    proxy: &Proxy,
    caller: &Caller,
    _req: NotifyClientTerminationRequest,
) -> Result<NotifyClientTerminationResponse, ProxyError> {
    proxy.sessions.remove(&caller.client_id, None);
    Ok(NotifyClientTerminationResponse { status: Some(ok()) })
}
