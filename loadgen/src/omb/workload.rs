//! OpenMessaging Benchmark's workload file (its `Workload` YAML: one flat mapping of camelCase keys),
//! read into what `loadgen omb` runs. Every key OMB knows is either honoured or refused with the
//! reason; unknown keys are refused too, so a run never silently differs from what the file says.

use std::path::{Path, PathBuf};
use std::time::Duration;

use yaml_rust2::{Yaml, YamlLoader};

/// OMB's warm-up when the file does not say (its generator's fixed minute).
pub const DEFAULT_WARMUP: Duration = Duration::from_secs(60);

/// Where message bodies come from.
#[derive(Debug, Clone, PartialEq)]
pub enum PayloadSource {
    /// No payloadFile and no useRandomizedPayloads: one body of random bytes.
    Random,
    /// `payloadFile`: the file's bytes (its length must be messageSize).
    File(PathBuf),
    /// `useRandomizedPayloads`: a pool of `pool` bodies, each `ratio` random bytes then zeros.
    Randomized { ratio: f64, pool: usize },
}

/// A workload as `loadgen omb` runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub name: String,
    pub topics: u32,
    pub partitions_per_topic: u32,
    pub message_size: usize,
    pub payload: PayloadSource,
    pub subscriptions_per_topic: u32,
    pub consumer_per_subscription: u32,
    pub producers_per_topic: u32,
    /// Messages per second of all producers together; 0 = as fast as they can.
    pub producer_rate: f64,
    /// Build this much backlog (GiB) with consumers paused, then let them drain it.
    pub consumer_backlog_size_gb: u64,
    pub test_duration: Duration,
    pub warmup: Duration,
}

/// Producers and consumers one loadgen process runs at most.
pub const MAX_CLIENTS: u64 = 10_000;

/// Keys accepted only at the value that makes them do nothing, and why other values are refused.
const INERT: &[(&str, &str)] = &[
    (
        "keyDistributor",
        "only NO_KEY: loadgen sends without keys (KEY_ROUND_ROBIN / RANDOM_NANO are not implemented)",
    ),
    (
        "messageRateReceivedForSubscription",
        "only 100: every subscription receives every message (no filtered subscriptions)",
    ),
    (
        "producerIncrementRate",
        "only 0: the producer rate is fixed for the whole run (no stepped increase)",
    ),
    (
        "producerPauseBeforeDrain",
        "only 0: producers keep sending while the backlog drains",
    ),
    (
        "producerPauseDuringDrain",
        "only 0: producers keep sending while the backlog drains",
    ),
    (
        "consumerOnly",
        "only false: producers keep sending while the backlog drains",
    ),
];

/// Keys always refused, with the reason.
const REFUSED: &[(&str, &str)] = &[
    (
        "producerStartRate",
        "OMB's search for the highest balanced rate is not implemented: producerRate 0 sends as fast as the producers can",
    ),
    (
        "acceptableBacklog",
        "OMB's search for the highest balanced rate is not implemented: producerRate 0 sends as fast as the producers can",
    ),
    (
        "producerIncrementSeconds",
        "the producer rate is fixed for the whole run (no stepped increase)",
    ),
    (
        "messageSizeDistribution",
        "every message has messageSize bytes (no size distribution)",
    ),
];

/// The keys read into [`Workload`].
const HONOURED: &[&str] = &[
    "name",
    "topics",
    "partitionsPerTopic",
    "messageSize",
    "payloadFile",
    "useRandomizedPayloads",
    "randomBytesRatio",
    "randomizedPayloadPoolSize",
    "subscriptionsPerTopic",
    "consumerPerSubscription",
    "producersPerTopic",
    "producerRate",
    "consumerBacklogSizeGB",
    "testDurationMinutes",
    "warmupDurationMinutes",
];

/// The file's mapping with its values checked by type.
struct Fields<'a> {
    pairs: Vec<(&'a str, &'a Yaml)>,
    errors: Vec<String>,
}

impl<'a> Fields<'a> {
    fn get(&self, key: &str) -> Option<&'a Yaml> {
        self.pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn refuse(&mut self, key: &str, why: impl std::fmt::Display) {
        self.errors.push(format!("{key}: {why}"));
    }

    /// A non-negative integer (0 when absent, as OMB's Java defaults).
    fn count(&mut self, key: &str) -> u64 {
        match self.get(key) {
            None => 0,
            Some(Yaml::Integer(n)) if *n >= 0 => *n as u64,
            Some(other) => {
                self.refuse(
                    key,
                    format!("must be a non-negative integer, not {other:?}"),
                );
                0
            }
        }
    }

    fn number(&mut self, key: &str) -> Option<f64> {
        let value = match self.get(key)? {
            Yaml::Integer(n) => *n as f64,
            Yaml::Real(text) => text.parse::<f64>().unwrap_or(f64::NAN),
            other => {
                self.refuse(key, format!("must be a number, not {other:?}"));
                return None;
            }
        };
        if value.is_finite() && value >= 0.0 {
            Some(value)
        } else {
            self.refuse(key, "must be a non-negative number");
            None
        }
    }

    fn flag(&mut self, key: &str) -> bool {
        match self.get(key) {
            None => false,
            Some(Yaml::Boolean(b)) => *b,
            Some(other) => {
                self.refuse(key, format!("must be true or false, not {other:?}"));
                false
            }
        }
    }

    fn text(&mut self, key: &str) -> Option<String> {
        match self.get(key)? {
            Yaml::String(s) => Some(s.clone()),
            Yaml::Integer(n) => Some(n.to_string()),
            Yaml::Real(r) => Some(r.clone()),
            other => {
                self.refuse(key, format!("must be a string, not {other:?}"));
                None
            }
        }
    }

    /// Whether an [`INERT`] key holds its inert value (absent counts as inert).
    fn is_inert(&self, key: &str) -> bool {
        match (key, self.get(key)) {
            (_, None) => true,
            ("keyDistributor", Some(Yaml::String(s))) => s == "NO_KEY",
            ("consumerOnly", Some(Yaml::Boolean(b))) => !b,
            ("messageRateReceivedForSubscription", Some(Yaml::Integer(n))) => *n == 100,
            (_, Some(Yaml::Integer(n))) => *n == 0,
            _ => false,
        }
    }
}

/// Reads a workload file; `fallback_name` names it when the file has no `name`.
pub fn load(path: &Path) -> Result<Workload, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read workload {}: {e}", path.display()))?;
    let stem = path.file_stem().map_or_else(
        || "workload".to_owned(),
        |s| s.to_string_lossy().into_owned(),
    );
    parse(&text, &stem).map_err(|e| format!("workload {}: {e}", path.display()))
}

/// Parses a workload's YAML text. Errors list every refused key with its reason.
pub fn parse(text: &str, fallback_name: &str) -> Result<Workload, String> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| format!("not YAML: {e}"))?;
    let [doc] = docs.as_slice() else {
        return Err(format!("expected one YAML document, found {}", docs.len()));
    };
    let Yaml::Hash(map) = doc else {
        return Err("expected a mapping of OMB workload keys".into());
    };
    let mut fields = Fields {
        pairs: Vec::with_capacity(map.len()),
        errors: Vec::new(),
    };
    for (key, value) in map {
        match key {
            Yaml::String(k) => fields.pairs.push((k.as_str(), value)),
            other => fields.errors.push(format!("key {other:?} is not a string")),
        }
    }
    let keys: Vec<&str> = fields.pairs.iter().map(|(k, _)| *k).collect();
    for key in keys {
        if HONOURED.contains(&key) {
            continue;
        }
        if let Some((_, why)) = INERT.iter().find(|(k, _)| *k == key) {
            if !fields.is_inert(key) {
                fields.refuse(key, format!("not supported: accepted {why}"));
            }
        } else if let Some((_, why)) = REFUSED.iter().find(|(k, _)| *k == key) {
            fields.refuse(key, format!("not supported: {why}"));
        } else {
            fields.refuse(
                key,
                "unknown key (not an OpenMessaging Benchmark workload key loadgen knows)",
            );
        }
    }
    let workload = read(&mut fields, fallback_name);
    if fields.errors.is_empty() {
        Ok(workload)
    } else {
        Err(fields.errors.join("; "))
    }
}

fn read(f: &mut Fields<'_>, fallback_name: &str) -> Workload {
    let name = f.text("name").unwrap_or_else(|| fallback_name.to_owned());
    let topics = positive(f, "topics");
    let partitions_per_topic = positive(f, "partitionsPerTopic");
    let message_size = positive(f, "messageSize") as usize;
    let producers_per_topic = positive(f, "producersPerTopic");
    let subscriptions_per_topic = small(f, "subscriptionsPerTopic");
    let consumer_per_subscription = small(f, "consumerPerSubscription");
    let producer_rate = f.number("producerRate").unwrap_or(0.0);
    let consumer_backlog_size_gb = f.count("consumerBacklogSizeGB");
    let test_minutes = f.count("testDurationMinutes");
    let warmup = match f.get("warmupDurationMinutes") {
        None => DEFAULT_WARMUP,
        Some(_) => minutes(f.count("warmupDurationMinutes")),
    };
    let payload = payload(f);
    let consumers = u64::from(subscriptions_per_topic) * u64::from(consumer_per_subscription);
    if consumer_backlog_size_gb > 0 && consumers == 0 {
        f.refuse(
            "consumerBacklogSizeGB",
            "a backlog needs consumers to drain it (subscriptionsPerTopic and consumerPerSubscription at least 1)",
        );
    }
    let clients =
        u64::from(topics).saturating_mul(u64::from(producers_per_topic).saturating_add(consumers));
    if clients > MAX_CLIENTS {
        f.refuse(
            "topics",
            format!("{clients} producers and consumers in all: loadgen runs them in one process, at most {MAX_CLIENTS}"),
        );
    }
    Workload {
        name,
        topics,
        partitions_per_topic,
        message_size,
        payload,
        subscriptions_per_topic,
        consumer_per_subscription,
        producers_per_topic,
        producer_rate,
        consumer_backlog_size_gb,
        test_duration: minutes(test_minutes),
        warmup,
    }
}

fn minutes(n: u64) -> Duration {
    Duration::from_secs(n.saturating_mul(60))
}

/// A count that must be at least 1 (and fit a u32).
fn positive(f: &mut Fields<'_>, key: &str) -> u32 {
    if f.get(key).is_none() {
        f.refuse(key, "missing (required)");
        return 0;
    }
    let n = f.count(key);
    match u32::try_from(n) {
        Ok(n) if n >= 1 => n,
        _ => {
            f.refuse(key, "must be at least 1");
            0
        }
    }
}

/// A count that may be 0 (OMB's Java default when absent).
fn small(f: &mut Fields<'_>, key: &str) -> u32 {
    let n = f.count(key);
    u32::try_from(n).unwrap_or_else(|_| {
        f.refuse(key, "too large");
        0
    })
}

fn payload(f: &mut Fields<'_>) -> PayloadSource {
    let randomized = f.flag("useRandomizedPayloads");
    let file = f.text("payloadFile");
    if !randomized {
        for key in ["randomBytesRatio", "randomizedPayloadPoolSize"] {
            if f.get(key).is_some() {
                f.refuse(key, "has an effect only with useRandomizedPayloads: true");
            }
        }
        return file.map_or(PayloadSource::Random, |p| {
            PayloadSource::File(PathBuf::from(p))
        });
    }
    if file.is_some() {
        f.refuse(
            "payloadFile",
            "useRandomizedPayloads: true replaces the file's payload: give one or the other",
        );
    }
    let ratio = f.number("randomBytesRatio").unwrap_or(0.0);
    if ratio > 1.0 {
        f.refuse("randomBytesRatio", "must be between 0 and 1");
    }
    let pool = f.count("randomizedPayloadPoolSize");
    if pool == 0 || pool > 100_000 {
        f.refuse(
            "randomizedPayloadPoolSize",
            "must be 1..=100000 with useRandomizedPayloads: true",
        );
    }
    PayloadSource::Randomized {
        ratio,
        pool: usize::try_from(pool).unwrap_or(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STANDARD: &str = "
# comment
name: 1 topic / 16 partitions / 1Kb
topics: 1
partitionsPerTopic: 16
keyDistributor: \"NO_KEY\"
messageSize: 1024
payloadFile: \"payload/payload-1Kb.data\"
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 50000
consumerBacklogSizeGB: 0
testDurationMinutes: 15
";

    #[test]
    fn a_standard_workload_is_read_whole() {
        let w = parse(STANDARD, "x").unwrap();
        assert_eq!(w.name, "1 topic / 16 partitions / 1Kb");
        assert_eq!(
            (w.topics, w.partitions_per_topic, w.message_size),
            (1, 16, 1024)
        );
        assert_eq!(
            w.payload,
            PayloadSource::File(PathBuf::from("payload/payload-1Kb.data"))
        );
        assert_eq!(
            (
                w.subscriptions_per_topic,
                w.consumer_per_subscription,
                w.producers_per_topic
            ),
            (1, 1, 1)
        );
        assert_eq!(w.producer_rate, 50_000.0);
        assert_eq!(w.consumer_backlog_size_gb, 0);
        assert_eq!(w.test_duration, Duration::from_secs(900));
        assert_eq!(w.warmup, DEFAULT_WARMUP);
    }

    #[test]
    fn randomized_payloads_backlog_and_warmup_are_read() {
        let text = "topics: 2\npartitionsPerTopic: 100\nmessageSize: 100\nuseRandomizedPayloads: true\n\
                    randomBytesRatio: 0.5\nrandomizedPayloadPoolSize: 1000\nsubscriptionsPerTopic: 1\n\
                    consumerPerSubscription: 4\nproducersPerTopic: 4\nproducerRate: 0\n\
                    consumerBacklogSizeGB: 2\ntestDurationMinutes: 5\nwarmupDurationMinutes: 0\n";
        let w = parse(text, "file-stem").unwrap();
        assert_eq!(w.name, "file-stem");
        assert_eq!(
            w.payload,
            PayloadSource::Randomized {
                ratio: 0.5,
                pool: 1000
            }
        );
        assert_eq!((w.producer_rate, w.consumer_backlog_size_gb), (0.0, 2));
        assert_eq!(w.warmup, Duration::ZERO);
        assert_eq!(w.test_duration, Duration::from_secs(300));
    }

    #[test]
    fn inert_values_pass_and_others_are_refused_with_the_reason() {
        let ok = format!("{STANDARD}producerIncrementRate: 0\nconsumerOnly: false\nmessageRateReceivedForSubscription: 100\n");
        assert!(parse(&ok, "x").is_ok());
        let keyed = STANDARD.replace("NO_KEY", "KEY_ROUND_ROBIN");
        let e = parse(&keyed, "x").unwrap_err();
        assert!(
            e.contains("keyDistributor: not supported") && e.contains("NO_KEY"),
            "{e}"
        );
        let stepped = format!("{STANDARD}producerIncrementRate: 1000\nproducerStartRate: 5000\n");
        let e = parse(&stepped, "x").unwrap_err();
        assert!(e.contains("producerIncrementRate: not supported"), "{e}");
        assert!(e.contains("producerStartRate: not supported"), "{e}");
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused() {
        let e = parse(&format!("{STANDARD}partitionPerTopic: 3\n"), "x").unwrap_err();
        assert!(e.contains("partitionPerTopic: unknown key"), "{e}");
        let e = parse(&STANDARD.replace("topics: 1", "topics: many"), "x").unwrap_err();
        assert!(e.contains("topics: must be a non-negative integer"), "{e}");
        let e = parse(&STANDARD.replace("topics: 1\n", ""), "x").unwrap_err();
        assert!(e.contains("topics: missing"), "{e}");
        let e = parse(
            &STANDARD.replace("producerRate: 50000", "producerRate: -1"),
            "x",
        )
        .unwrap_err();
        assert!(
            e.contains("producerRate: must be a non-negative number"),
            "{e}"
        );
        let e = parse(&format!("{STANDARD}randomBytesRatio: 0.5\n"), "x").unwrap_err();
        assert!(
            e.contains("randomBytesRatio: has an effect only with"),
            "{e}"
        );
        assert!(parse("- a\n- b\n", "x").unwrap_err().contains("mapping"));
        assert!(parse("topics: [1\n", "x").unwrap_err().contains("not YAML"));
        let nested = format!("{STANDARD}extra:\n  a: 1\n");
        assert!(parse(&nested, "x")
            .unwrap_err()
            .contains("extra: unknown key"));
    }

    #[test]
    fn more_clients_than_one_process_runs_are_refused() {
        let text = STANDARD.replace("topics: 1", "topics: 100000");
        let e = parse(&text, "x").unwrap_err();
        assert!(
            e.contains("topics: 200000 producers and consumers in all"),
            "{e}"
        );
        let huge = STANDARD
            .replace(
                "consumerPerSubscription: 1",
                "consumerPerSubscription: 4000000000",
            )
            .replace(
                "subscriptionsPerTopic: 1",
                "subscriptionsPerTopic: 4000000000",
            );
        assert!(parse(&huge, "x").is_err());
    }

    #[test]
    fn a_backlog_without_consumers_is_refused() {
        let text = STANDARD
            .replace("consumerBacklogSizeGB: 0", "consumerBacklogSizeGB: 1")
            .replace("consumerPerSubscription: 1", "consumerPerSubscription: 0");
        let e = parse(&text, "x").unwrap_err();
        assert!(
            e.contains("consumerBacklogSizeGB: a backlog needs consumers"),
            "{e}"
        );
    }
}
