//! A small async RocketMQ client on glommio: name-server routes, a producer, a pull consumer and
//! consumer offsets. Conservative on the wire (what the Java client sends), so it also drives strict
//! brokers. Single-executor types (`!Send`): create one set per glommio executor.

// Bytes from the network are parsed here: no indexing or slicing that could panic on them.
#![warn(clippy::indexing_slicing)]

pub mod acl;
pub mod broker_api;
pub mod connections;
mod error;
pub mod message;
pub mod namesrv;
pub mod pop;
pub mod producer;
mod producer_heartbeat;
pub mod pull;
pub mod request;
pub mod route;
pub mod transaction;
pub mod uniq_key;

pub use connections::BrokerConnections;
pub use error::{ClientError, ErrorKind};
pub use message::Message;
pub use namesrv::NameServer;
pub use producer::{Producer, ProducerConfig, SendResult};
pub use protocol::body::MessageQueue;
pub use pull::{PullConsumer, PullResult, PullStatus};
pub use route::TopicRoute;
pub use uniq_key::UniqKeyGenerator;
