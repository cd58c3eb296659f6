//! Request dispatch: one processor module per request family, answering on the name server's state.

mod broker;
mod kv;
mod namesrv_config;
mod route;
mod write_perm;

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use protocol::{request_code, response_code, RemotingCommand};
use remoting::{ConnectionContext, Handler};

use crate::name_server::NameServer;
use crate::response;

impl NameServer {
    /// Answers one request (synchronously: nothing here waits on I/O).
    pub fn process(&self, request: &RemotingCommand, connection_id: u64) -> RemotingCommand {
        match request.code {
            request_code::REGISTER_BROKER => broker::register(self, request, connection_id),
            request_code::UNREGISTER_BROKER => broker::unregister(self, request),
            request_code::QUERY_DATA_VERSION => broker::query_data_version(self, request),
            request_code::GET_ROUTEINFO_BY_TOPIC => route::route_by_topic(self, request),
            request_code::GET_BROKER_CLUSTER_INFO => route::cluster_info(self, request),
            request_code::GET_ALL_TOPIC_LIST_FROM_NAMESERVER => route::all_topics(self, request),
            request_code::GET_TOPICS_BY_CLUSTER => route::topics_by_cluster(self, request),
            request_code::DELETE_TOPIC_IN_NAMESRV => route::delete_topic(self, request),
            request_code::PUT_KV_CONFIG => kv::put(self, request),
            request_code::GET_KV_CONFIG => kv::get(self, request),
            request_code::DELETE_KV_CONFIG => kv::delete(self, request),
            request_code::GET_KVLIST_BY_NAMESPACE => kv::list_namespace(self, request),
            request_code::UPDATE_NAMESRV_CONFIG => namesrv_config::update(self, request),
            request_code::GET_NAMESRV_CONFIG => namesrv_config::get(self, request),
            request_code::WIPE_WRITE_PERM_OF_BROKER => write_perm::wipe(self, request),
            request_code::ADD_WRITE_PERM_OF_BROKER => write_perm::add(self, request),
            code => {
                let name = request_code::name(code).unwrap_or("unknown");
                tracing::debug!("request code {code} ({name}) not supported");
                response::error(
                    request,
                    response_code::REQUEST_CODE_NOT_SUPPORTED,
                    format!(" request type {code} ({name}) not supported"),
                )
            }
        }
    }
}

impl Handler for NameServer {
    fn handle(
        self: Rc<Self>,
        request: RemotingCommand,
        ctx: ConnectionContext,
    ) -> Pin<Box<dyn Future<Output = Option<RemotingCommand>>>> {
        if controller::is_controller_code(request.code) {
            let embedded = self.controller.borrow().clone();
            if let Some(controller) = embedded {
                return controller.handle(request, ctx);
            }
        }
        if request.code == request_code::REGISTER_BROKER {
            self.channels
                .borrow_mut()
                .entry(ctx.id)
                .or_insert_with(|| ctx.sink.clone());
        }
        let response = self.process(&request, ctx.id);
        Box::pin(async move { Some(response) })
    }

    fn on_close(&self, ctx: &ConnectionContext) {
        // The embedded controller elects at once when a master's heartbeat connection closes.
        let embedded = self.controller.borrow().clone();
        if let Some(controller) = embedded {
            controller.on_close(ctx);
        }
        self.channels.borrow_mut().remove(&ctx.id);
        let gone = self.table.borrow_mut().remove_connection(ctx.id);
        for addr in gone {
            tracing::info!(
                "broker {addr} removed: its connection from {} closed",
                ctx.peer
            );
        }
    }
}
