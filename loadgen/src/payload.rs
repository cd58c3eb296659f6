//! Messages loadgen sends: bodies of the asked size that start with a send-time stamp (so consumers
//! can measure end-to-end latency in microseconds), and keys / tags / a user property of asked sizes.

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{BufMut, Bytes, BytesMut};
use client::Message;

/// Marks a body that carries a stamp: these 4 bytes, then the send time in unix microseconds (u64 BE).
pub const STAMP_MAGIC: &[u8; 4] = b"LGT1";
pub const STAMP_LEN: usize = 12;
/// The user property `--property-size` fills.
pub const USER_PROPERTY: &str = "LOADGEN_PROP";
/// The property a RocketMQ 5 client sets for a message due this many ms after its send.
pub const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";

/// Microseconds since the Unix epoch (a wall clock, comparable between processes on one host).
pub fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The send time stamped into a body, if it has one.
pub fn stamp_of(body: &[u8]) -> Option<u64> {
    let magic = body.get(0..4)?;
    if magic != STAMP_MAGIC {
        return None;
    }
    let raw: [u8; 8] = body.get(4..STAMP_LEN)?.try_into().ok()?;
    Some(u64::from_be_bytes(raw))
}

/// What each message looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadSpec {
    pub size: usize,
    /// Length of the KEYS property (0: none); each message gets a different key.
    pub key_size: usize,
    /// The TAGS property (None: none).
    pub tags: Option<String>,
    /// Length of the extra user property (0: none).
    pub property_size: usize,
    /// Timer messages due this long after their stamp (0: plain messages).
    pub timer_delay_ms: u64,
}

/// Makes messages for one executor.
pub struct PayloadMaker {
    topic: String,
    spec: PayloadSpec,
    filler: Bytes,
    /// Bodies used in turn instead of `filler` (each `spec.size` long); empty: `filler` only.
    pool: Vec<Bytes>,
    property_value: String,
    key_prefix: String,
    seq: u64,
}

impl PayloadMaker {
    pub fn new(topic: &str, spec: PayloadSpec, executor: usize) -> PayloadMaker {
        // A repeating printable pattern: not all-zero, so nothing along the way can special-case it.
        let filler: Vec<u8> = (0..spec.size).map(|i| b'a' + (i % 26) as u8).collect();
        let property_value = "p".repeat(spec.property_size);
        PayloadMaker {
            topic: topic.to_owned(),
            filler: Bytes::from(filler),
            pool: Vec::new(),
            property_value,
            key_prefix: format!("lg{executor}-"),
            spec,
            seq: 0,
        }
    }

    /// Bodies taken in turn, message after message, instead of the printable pattern (each is cut or
    /// zero-padded to the spec's size; its first bytes still give way to the send stamp).
    pub fn with_bodies(mut self, bodies: Vec<Bytes>) -> PayloadMaker {
        let size = self.spec.size;
        self.pool = bodies
            .into_iter()
            .map(|b| {
                let mut v = b.to_vec();
                v.resize(size, 0);
                Bytes::from(v)
            })
            .collect();
        self
    }

    /// The body this message starts from.
    fn filler(&self) -> &Bytes {
        let len = self.pool.len() as u64;
        if len == 0 {
            return &self.filler;
        }
        let index = usize::try_from(self.seq % len).unwrap_or(0);
        self.pool.get(index).unwrap_or(&self.filler)
    }

    pub fn body_size(&self) -> usize {
        self.spec.size
    }

    /// A body stamped with the current time (unstamped when too small for a stamp).
    pub fn body(&self) -> Bytes {
        self.body_stamped(unix_micros())
    }

    /// A body stamped with `stamp` (unix microseconds).
    pub fn body_stamped(&self, stamp: u64) -> Bytes {
        if self.spec.size < STAMP_LEN {
            return self.filler().clone();
        }
        let mut body = BytesMut::with_capacity(self.spec.size);
        body.put_slice(STAMP_MAGIC);
        body.put_u64(stamp);
        body.put_slice(self.filler().get(STAMP_LEN..).unwrap_or_default());
        body.freeze()
    }

    /// The next message, stamped now.
    pub fn message(&mut self) -> Message {
        self.message_stamped(unix_micros())
    }

    /// The next message, stamped `stamp` (open loop stamps the intended send time, so end-to-end
    /// latency also counts a late send).
    pub fn message_stamped(&mut self, stamp: u64) -> Message {
        // A timer message is stamped with its due time, so end-to-end latency measures lateness.
        let delay = self.spec.timer_delay_ms;
        let stamp = stamp.saturating_add(delay.saturating_mul(1000));
        let mut msg = Message::new(self.topic.as_str(), self.body_stamped(stamp));
        if delay > 0 {
            msg.set_property(TIMER_DELAY_MS, &delay.to_string());
        }
        if let Some(tags) = &self.spec.tags {
            msg.set_property(protocol::message::properties::TAGS, tags);
        }
        if self.spec.key_size > 0 {
            let mut key = format!("{}{}", self.key_prefix, self.seq);
            if key.len() < self.spec.key_size {
                key.push_str(&"k".repeat(self.spec.key_size - key.len()));
            } else {
                // Keep the distinguishing tail of the counter.
                key = key.split_off(key.len() - self.spec.key_size);
            }
            msg.set_property(protocol::message::properties::KEYS, &key);
        }
        if self.spec.property_size > 0 {
            msg.set_property(USER_PROPERTY, &self.property_value);
        }
        self.seq = self.seq.wrapping_add(1);
        msg
    }

    /// `n` messages stamped now.
    pub fn messages(&mut self, n: usize) -> Vec<Message> {
        self.messages_stamped(n, unix_micros())
    }

    pub fn messages_stamped(&mut self, n: usize, stamp: u64) -> Vec<Message> {
        (0..n).map(|_| self.message_stamped(stamp)).collect()
    }
}

/// A tag of `len` characters (`TagA` padded or cut).
pub fn tag_of_size(len: usize) -> String {
    "TagA"
        .chars()
        .chain(std::iter::repeat('x'))
        .take(len)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(size: usize) -> PayloadSpec {
        PayloadSpec {
            size,
            key_size: 8,
            tags: Some(tag_of_size(6)),
            property_size: 5,
            timer_delay_ms: 0,
        }
    }

    #[test]
    fn bodies_have_the_size_and_a_fresh_stamp() {
        let mut maker = PayloadMaker::new("T", spec(1024), 3);
        let before = unix_micros();
        let msg = maker.message();
        assert_eq!(msg.body.len(), 1024);
        let stamp = stamp_of(&msg.body).unwrap();
        assert!(stamp >= before && stamp <= unix_micros(), "{stamp}");
        assert_eq!(msg.tags(), Some("TagAxx"));
        assert_eq!(msg.property(USER_PROPERTY), Some("ppppp"));
        let keys: Vec<String> = (0..3)
            .map(|_| maker.message().keys().unwrap().to_owned())
            .collect();
        assert!(keys.iter().all(|k| k.len() == 8), "{keys:?}");
        assert_ne!(keys[0], keys[1]);
    }

    #[test]
    fn tiny_bodies_are_unstamped() {
        let mut maker = PayloadMaker::new(
            "T",
            PayloadSpec {
                size: 4,
                key_size: 0,
                tags: None,
                property_size: 0,
                timer_delay_ms: 0,
            },
            0,
        );
        let msg = maker.message();
        assert_eq!(msg.body.len(), 4);
        assert_eq!(stamp_of(&msg.body), None);
        assert_eq!(msg.keys(), None);
        assert_eq!(stamp_of(b"LGT1\0\0"), None);
        assert_eq!(stamp_of(b"XXXX\0\0\0\0\0\0\0\x07"), None);
        assert_eq!(stamp_of(b"LGT1\0\0\0\0\0\0\0\x07"), Some(7));
    }

    #[test]
    fn long_counters_keep_their_tail() {
        let mut maker = PayloadMaker::new(
            "T",
            PayloadSpec {
                size: 0,
                key_size: 2,
                tags: None,
                property_size: 0,
                timer_delay_ms: 0,
            },
            0,
        );
        let a = maker.message().keys().unwrap().to_owned();
        let b = maker.message().keys().unwrap().to_owned();
        assert_eq!((a.as_str(), b.as_str()), ("-0", "-1"));
    }

    #[test]
    fn bodies_of_a_pool_are_used_in_turn_behind_the_stamp() {
        let spec = PayloadSpec {
            size: 16,
            key_size: 0,
            tags: None,
            property_size: 0,
            timer_delay_ms: 0,
        };
        let pool = vec![Bytes::from(vec![1u8; 16]), Bytes::from(vec![2u8; 20])];
        let mut maker = PayloadMaker::new("T", spec, 0).with_bodies(pool);
        let tails: Vec<Vec<u8>> = (0..3)
            .map(|_| maker.message().body.get(STAMP_LEN..).unwrap().to_vec())
            .collect();
        assert_eq!(tails, vec![vec![1u8; 4], vec![2u8; 4], vec![1u8; 4]]);
    }

    #[test]
    fn timer_messages_carry_the_delay_and_are_stamped_with_their_due_time() {
        let spec = PayloadSpec {
            size: 16,
            key_size: 0,
            tags: None,
            property_size: 0,
            timer_delay_ms: 1500,
        };
        let mut maker = PayloadMaker::new("T", spec, 0);
        let msg = maker.message_stamped(1_000_000);
        assert_eq!(msg.property(TIMER_DELAY_MS), Some("1500"));
        assert_eq!(stamp_of(&msg.body), Some(1_000_000 + 1_500_000));
    }
}
