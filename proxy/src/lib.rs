//! The `proxy` binary's library: a gRPC front (`apache.rocketmq.v2.MessagingService`) for the
//! RocketMQ 5 SDKs that talks remoting to the name servers and brokers, holding no messages itself.

pub mod acl;
pub mod acl2;
pub mod config;
pub mod convert;
pub mod metrics;
pub mod metrics_apache;
pub mod metrics_config;
pub mod pb;
pub mod remoting;
pub mod service;
pub mod session;
pub mod state;
pub mod status;
pub mod tls;
