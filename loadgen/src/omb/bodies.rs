//! The message bodies a workload asks for: random bytes, OMB's randomized pool (each body a share of
//! random bytes, then zeros), or a payload file's bytes.

use std::path::Path;

use bytes::Bytes;

use super::workload::{PayloadSource, Workload};
use crate::payload::unix_micros;

/// A small xorshift generator: payload bytes need not be secure, only not compressible.
struct Noise(u64);

impl Noise {
    fn fill(&mut self, out: &mut [u8]) {
        for b in out {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            *b = (self.0 >> 24) as u8;
        }
    }
}

/// The message bodies the workload asks for.
pub fn bodies(w: &Workload, workload_file: &Path) -> Result<Vec<Bytes>, String> {
    let mut noise = Noise(unix_micros() | 1);
    let size = w.message_size;
    match &w.payload {
        PayloadSource::Random => {
            let mut body = vec![0u8; size];
            noise.fill(&mut body);
            Ok(vec![Bytes::from(body)])
        }
        PayloadSource::Randomized { ratio, pool } => {
            let random = ((size as f64) * ratio).round() as usize;
            Ok((0..*pool)
                .map(|_| {
                    let mut body = vec![0u8; size];
                    noise.fill(body.get_mut(..random.min(size)).unwrap_or_default());
                    Bytes::from(body)
                })
                .collect())
        }
        PayloadSource::File(path) => {
            // As OMB: relative to the working directory; else next to the workload file.
            let beside = workload_file.parent().map(|d| d.join(path));
            let found = if path.exists() {
                path.clone()
            } else {
                beside
                    .filter(|p| p.exists())
                    .unwrap_or_else(|| path.clone())
            };
            let body = std::fs::read(&found)
                .map_err(|e| format!("payloadFile {}: {e}", found.display()))?;
            if body.len() != size {
                return Err(format!(
                    "payloadFile {} has {} bytes, messageSize is {size}",
                    found.display(),
                    body.len()
                ));
            }
            Ok(vec![Bytes::from(body)])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    const W: &str = "topics: 2\npartitionsPerTopic: 4\nmessageSize: 64\nsubscriptionsPerTopic: 2\n\
                     consumerPerSubscription: 3\nproducersPerTopic: 2\nproducerRate: 1000\n\
                     testDurationMinutes: 1\n";

    fn workload(text: &str) -> Workload {
        super::super::workload::parse(text, "t").unwrap()
    }

    #[test]
    fn bodies_follow_the_payload_keys() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("w.yaml");
        let w = workload(W);
        let random = bodies(&w, &file).unwrap();
        assert_eq!(random.len(), 1);
        assert_eq!(random[0].len(), 64);
        assert!(random[0].iter().filter(|b| **b == 0).count() < 16);
        let mut r = w.clone();
        r.payload = PayloadSource::Randomized {
            ratio: 0.25,
            pool: 3,
        };
        let pool = bodies(&r, &file).unwrap();
        assert_eq!(pool.len(), 3);
        assert!(pool
            .iter()
            .all(|b| b.len() == 64 && b[16..].iter().all(|x| *x == 0)));
        assert_ne!(pool[0], pool[1]);
        // payloadFile: found next to the workload; its length must be messageSize.
        std::fs::write(dir.path().join("p.data"), vec![7u8; 64]).unwrap();
        let mut f = w.clone();
        f.payload = PayloadSource::File(PathBuf::from("p.data"));
        assert_eq!(bodies(&f, &file).unwrap()[0], Bytes::from(vec![7u8; 64]));
        f.message_size = 32;
        assert!(bodies(&f, &file)
            .unwrap_err()
            .contains("has 64 bytes, messageSize is 32"));
    }
}
