//! RocketMQ remoting protocol: frames, headers, commands, messages and bodies. No I/O.
pub mod message;
