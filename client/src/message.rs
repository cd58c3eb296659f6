//! A message to send: topic, body, flag and its properties string (TAGS, KEYS, user properties).

use bytes::Bytes;
use protocol::message::properties;

/// A message as the producer sends it. Properties are kept encoded (`k\u{1}v\u{2}` pairs), the form
/// they travel in, so sending does not re-encode them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub topic: String,
    pub body: Bytes,
    pub flag: i32,
    properties: String,
}

impl Message {
    /// A message with `WAIT=true`, like the Java client's `Message` constructor.
    pub fn new(topic: impl Into<String>, body: impl Into<Bytes>) -> Message {
        let mut props = String::new();
        properties::push(&mut props, properties::WAIT, "true");
        Message {
            topic: topic.into(),
            body: body.into(),
            flag: 0,
            properties: props,
        }
    }

    /// Sets the TAGS property.
    pub fn with_tags(self, tags: &str) -> Message {
        self.with_property(properties::TAGS, tags)
    }

    /// Sets the KEYS property (several keys separated by spaces).
    pub fn with_keys(self, keys: &str) -> Message {
        self.with_property(properties::KEYS, keys)
    }

    pub fn with_flag(mut self, flag: i32) -> Message {
        self.flag = flag;
        self
    }

    /// Sets one property, replacing an earlier value of the same name.
    pub fn with_property(mut self, key: &str, value: &str) -> Message {
        self.set_property(key, value);
        self
    }

    pub fn set_property(&mut self, key: &str, value: &str) {
        if properties::get(&self.properties, key).is_some() {
            self.properties = properties::with(&self.properties, key, value);
        } else {
            // Appending keeps the common case free of a rebuild.
            properties::push(&mut self.properties, key, value);
        }
    }

    pub fn property(&self, key: &str) -> Option<&str> {
        properties::get(&self.properties, key)
    }

    /// The encoded properties string.
    pub fn properties(&self) -> &str {
        &self.properties
    }

    pub fn tags(&self) -> Option<&str> {
        self.property(properties::TAGS)
    }

    pub fn keys(&self) -> Option<&str> {
        self.property(properties::KEYS)
    }

    /// The client-side msgId (UNIQ_KEY), once the producer has set it.
    pub fn uniq_key(&self) -> Option<&str> {
        self.property(properties::UNIQ_KEY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_are_encoded_like_the_java_client() {
        let msg = Message::new("T", &b"hello"[..])
            .with_tags("TagA")
            .with_keys("k1 k2");
        assert_eq!(
            msg.properties(),
            "WAIT\u{1}true\u{2}TAGS\u{1}TagA\u{2}KEYS\u{1}k1 k2\u{2}"
        );
        assert_eq!(msg.tags(), Some("TagA"));
        assert_eq!(msg.keys(), Some("k1 k2"));
        let msg = msg.with_tags("TagB");
        assert_eq!(msg.tags(), Some("TagB"));
        assert_eq!(properties::parse(msg.properties()).len(), 3);
        assert_eq!(msg.uniq_key(), None);
    }
}
