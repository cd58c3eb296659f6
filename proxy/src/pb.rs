//! The messages and service of `apache.rocketmq.v2`, generated at build time from proto/.
#![allow(clippy::all, clippy::unwrap_used, clippy::expect_used)]

tonic::include_proto!("apache.rocketmq.v2");
