//! `RemotingCommand`: one request or response of RocketMQ's remoting protocol, decoded.

use bytes::Bytes;

use crate::ext_fields::ExtFields;
use crate::language::LanguageCode;

/// How a command's header is encoded (the high byte of the frame's second int).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SerializeType {
    #[default]
    Json,
    /// RocketMQ's binary header (`RocketMQSerializable`).
    RocketMq,
}

impl SerializeType {
    /// The byte code on the wire.
    pub fn code(self) -> u8 {
        match self {
            SerializeType::Json => 0,
            SerializeType::RocketMq => 1,
        }
    }

    pub fn from_code(code: u8) -> Option<SerializeType> {
        match code {
            0 => Some(SerializeType::Json),
            1 => Some(SerializeType::RocketMq),
            _ => None,
        }
    }

    /// The name used in the JSON field `serializeTypeCurrentRPC` and in `ROCKETMQ_SERIALIZE_TYPE`.
    pub fn name(self) -> &'static str {
        match self {
            SerializeType::Json => "JSON",
            SerializeType::RocketMq => "ROCKETMQ",
        }
    }
}

/// Bits of `RemotingCommand::flag`.
pub mod flag {
    /// Set on responses.
    pub const RESPONSE: i32 = 1;
    /// Set on requests that expect no response.
    pub const ONEWAY: i32 = 2;
}

/// The `version` this crate puts in commands it creates: RocketMQ V4_9_4's ordinal, a version every
/// client since 4.x understands.
pub const DEFAULT_VERSION: i32 = 401;

/// Ordinals of RocketMQ's `MQVersion.Version` that change how a broker reads a client's request
/// (`RemotingCommand::version` carries the client's ordinal).
pub mod mq_version {
    /// Clients since 3.4.9 send `maxReconsumeTimes`, which then overrides the group's `retryMaxTimes`.
    pub const V3_4_9: i32 = 121;
    /// Clients up to 4.9.3 leave `_UNIQUE_KEY_QUERY` out of the ACL signature; later ones sign it.
    pub const V4_9_3: i32 = 399;
}

/// One remoting command. `serialize_type` is how its header was (or will be) encoded; the frame
/// decoder sets it from the frame, and a response made with [`RemotingCommand::response_to`] keeps
/// the request's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotingCommand {
    pub code: i32,
    pub language: LanguageCode,
    pub version: i32,
    pub opaque: i32,
    pub flag: i32,
    pub remark: Option<String>,
    pub ext_fields: ExtFields,
    pub body: Bytes,
    /// More body bytes, sent after `body` back to back without being joined first (a pull's stored
    /// records, shared with the store): the frame's body is `body` then each of these. Decoding
    /// never fills it; [`body_len`](Self::body_len) counts both, [`joined_body`](Self::joined_body)
    /// joins them.
    pub body_tail: Vec<Bytes>,
    pub serialize_type: SerializeType,
}

impl Default for RemotingCommand {
    fn default() -> Self {
        RemotingCommand {
            code: 0,
            language: LanguageCode::Java,
            version: DEFAULT_VERSION,
            opaque: 0,
            flag: 0,
            remark: None,
            ext_fields: ExtFields::new(),
            body: Bytes::new(),
            body_tail: Vec::new(),
            serialize_type: SerializeType::Json,
        }
    }
}

impl RemotingCommand {
    /// A request with this code, opaque 0 (the sender picks one with [`with_opaque`](Self::with_opaque)),
    /// language JAVA, JSON header.
    pub fn request(code: i32) -> Self {
        RemotingCommand {
            code,
            ..RemotingCommand::default()
        }
    }

    /// A response with this code and remark; callers set `opaque` and the serialize type, or use
    /// [`response_to`](Self::response_to).
    pub fn response(code: i32, remark: Option<String>) -> Self {
        RemotingCommand {
            code,
            flag: flag::RESPONSE,
            remark,
            ..RemotingCommand::default()
        }
    }

    /// The response to `self` (a request): same opaque and serialize type, response bit set.
    pub fn response_to(&self, code: i32, remark: Option<String>) -> Self {
        RemotingCommand {
            code,
            opaque: self.opaque,
            flag: flag::RESPONSE,
            remark,
            serialize_type: self.serialize_type,
            ..RemotingCommand::default()
        }
    }

    pub fn is_response(&self) -> bool {
        self.flag & flag::RESPONSE != 0
    }

    pub fn is_oneway(&self) -> bool {
        self.flag & flag::ONEWAY != 0
    }

    pub fn mark_oneway(&mut self) {
        self.flag |= flag::ONEWAY;
    }

    pub fn mark_response(&mut self) {
        self.flag |= flag::RESPONSE;
    }

    /// Sets one ext field.
    pub fn set_ext(&mut self, key: &str, value: &str) {
        self.ext_fields.insert(key, value);
    }

    /// One ext field's value.
    pub fn ext(&self, key: &str) -> Option<&str> {
        self.ext_fields.get(key)
    }

    pub fn set_body(&mut self, body: impl Into<Bytes>) {
        self.body = body.into();
        self.body_tail.clear();
    }

    /// Bytes of the whole body: `body` and `body_tail`.
    pub fn body_len(&self) -> usize {
        self.body_tail
            .iter()
            .fold(self.body.len(), |n, part| n.saturating_add(part.len()))
    }

    /// The whole body as one buffer (a copy only when `body_tail` has parts).
    pub fn joined_body(&self) -> Bytes {
        if self.body_tail.is_empty() {
            return self.body.clone();
        }
        let mut out = bytes::BytesMut::with_capacity(self.body_len());
        out.extend_from_slice(&self.body);
        for part in &self.body_tail {
            out.extend_from_slice(part);
        }
        out.freeze()
    }

    pub fn with_ext(mut self, key: &str, value: &str) -> Self {
        self.ext_fields.insert(key, value);
        self
    }

    pub fn with_ext_fields(mut self, ext_fields: ExtFields) -> Self {
        self.ext_fields = ext_fields;
        self
    }

    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.set_body(body);
        self
    }

    pub fn with_opaque(mut self, opaque: i32) -> Self {
        self.opaque = opaque;
        self
    }

    pub fn with_remark(mut self, remark: impl Into<String>) -> Self {
        self.remark = Some(remark.into());
        self
    }

    pub fn with_serialize_type(mut self, serialize_type: SerializeType) -> Self {
        self.serialize_type = serialize_type;
        self
    }

    pub fn with_language(mut self, language: LanguageCode) -> Self {
        self.language = language;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_copies_opaque_and_serialize_type() {
        let mut req = RemotingCommand::request(10)
            .with_opaque(77)
            .with_serialize_type(SerializeType::RocketMq);
        assert!(!req.is_response());
        req.mark_oneway();
        assert!(req.is_oneway());
        let resp = req.response_to(17, Some("no topic".into()));
        assert_eq!(resp.opaque, 77);
        assert_eq!(resp.serialize_type, SerializeType::RocketMq);
        assert!(resp.is_response());
        assert!(!resp.is_oneway());
        assert_eq!(resp.code, 17);
        assert_eq!(resp.remark.as_deref(), Some("no topic"));
    }
}
