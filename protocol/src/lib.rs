//! RocketMQ remoting protocol: frames, headers, commands, messages and bodies. No I/O.
// Bytes from the network are parsed here: no indexing or slicing that could panic on them.
#![warn(clippy::indexing_slicing)]

pub mod message;

pub mod body;
pub mod code;
pub mod codec;
pub mod command;
pub mod ext_fields;
pub mod frame;
pub mod header;
pub mod language;
pub mod properties_text;
pub mod signature;
pub mod system_topics;
pub mod topic_attributes;
pub mod trace;

pub use code::{request_code, response_code};
pub use command::{RemotingCommand, SerializeType};
pub use ext_fields::ExtFields;
pub use frame::{decode_frame, encode_frame, frame_length, FrameBuffer, FrameError};
pub use language::LanguageCode;
