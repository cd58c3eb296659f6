//! Apache's proxy metrics keys: `metricsExporterType` (DISABLE, the default, or PROM: Apache's names
//! served beside ours at `metricsPromExporterHost`:`metricsPromExporterPort`; OTLP_GRPC and LOG are
//! refused, not built), `proxyClusterName` and `proxyName` (the `cluster` and `node_id` labels),
//! `proxyMode` (only `cluster`: this proxy has no broker inside), `metricsLabel` (`k:v,k2:v2`, extra
//! labels on every series), `metricsInDelta` (only false: Prometheus text is cumulative), and ours,
//! `metricsPromUnitSuffix`, as the broker's.

/// The exporter keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsConfig {
    /// `metricsExporterType = PROM`.
    pub prom: bool,
    /// `metricsPromExporterHost`: empty is `bindAddress`.
    pub host: String,
    pub cluster: String,
    pub proxy_name: String,
    pub labels: Vec<(String, String)>,
    pub unit_suffix: bool,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            prom: false,
            host: String::new(),
            cluster: "DefaultCluster".into(),
            proxy_name: default_proxy_name(),
            labels: Vec::new(),
            unit_suffix: false,
        }
    }
}

/// Apache's default proxyName: the host name, else `DEFAULT_PROXY`.
fn default_proxy_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "DEFAULT_PROXY".into())
}

fn boolean(value: &str) -> Result<bool, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("{value:?} is not true or false"))
}

impl MetricsConfig {
    /// Applies `key` when it is one of these keys: `None` for other keys.
    pub fn set(&mut self, key: &str, value: &str) -> Option<Result<(), String>> {
        let v = value.trim();
        let result = match key {
            "metricsExporterType" => match v.to_ascii_uppercase().as_str() {
                "" | "DISABLE" => {
                    self.prom = false;
                    Ok(())
                }
                "PROM" => {
                    self.prom = true;
                    Ok(())
                }
                "OTLP_GRPC" | "LOG" => Err(format!(
                    "the {v} metrics exporter is not built: use PROM (Apache's metric names in \
                     Prometheus text at metricsPromExporterPort) and scrape it, or DISABLE"
                )),
                _ => Err(format!("{v:?}: expected DISABLE, PROM, OTLP_GRPC or LOG")),
            },
            "metricsPromExporterHost" => {
                self.host = v.to_owned();
                Ok(())
            }
            "proxyClusterName" => {
                self.cluster = v.to_owned();
                Ok(())
            }
            "proxyName" => {
                self.proxy_name = v.to_owned();
                Ok(())
            }
            "proxyMode" => match v.to_ascii_lowercase().as_str() {
                "cluster" => Ok(()),
                _ => Err(format!(
                    "{v:?}: only cluster mode is built (this proxy talks remoting to brokers \
                     elsewhere; it has no broker inside)"
                )),
            },
            "metricsLabel" => {
                let mut labels = Vec::new();
                for pair in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    match pair.split_once(':') {
                        Some((k, val)) if valid_label(k.trim()) && !val.contains(':') => {
                            labels.push((k.trim().to_owned(), val.trim().to_owned()))
                        }
                        _ => {
                            return Some(Err(format!(
                                "{pair:?}: expected key:value pairs separated by commas, keys of \
                                 letters, digits and _"
                            )))
                        }
                    }
                }
                self.labels = labels;
                Ok(())
            }
            "metricsInDelta" => match boolean(v) {
                Ok(false) => Ok(()),
                Ok(true) => Err(
                    "delta temporality is an OTLP setting; Prometheus text is cumulative".into(),
                ),
                Err(e) => Err(e),
            },
            "metricsPromUnitSuffix" => boolean(v).map(|b| self.unit_suffix = b),
            _ => return None,
        };
        Some(result)
    }
}

/// A Prometheus label name that is not one the exporter sets itself.
fn valid_label(k: &str) -> bool {
    let mut chars = k.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !matches!(
            k,
            "cluster" | "node_id" | "node_type" | "otel_scope_name" | "le" | "request_code"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apaches_keys_are_applied_or_refused_with_a_reason() {
        let mut m = MetricsConfig::default();
        assert!(!m.prom);
        m.set("metricsExporterType", "PROM").unwrap().unwrap();
        assert!(m.prom);
        let otlp = m.set("metricsExporterType", "OTLP_GRPC").unwrap();
        assert!(otlp.unwrap_err().contains("not built"));
        assert!(m.set("metricsExporterType", "x").unwrap().is_err());
        m.set("metricsLabel", "env:prod, dc:a1").unwrap().unwrap();
        assert_eq!(
            m.labels,
            [("env".into(), "prod".into()), ("dc".into(), "a1".into())]
        );
        assert!(m.set("metricsLabel", "bad").unwrap().is_err());
        assert!(m.set("metricsLabel", "node_type:x").unwrap().is_err());
        m.set("proxyName", "p1").unwrap().unwrap();
        m.set("proxyClusterName", "C1").unwrap().unwrap();
        assert_eq!((m.proxy_name.as_str(), m.cluster.as_str()), ("p1", "C1"));
        assert!(m.set("proxyMode", "LOCAL").unwrap().is_err());
        m.set("proxyMode", "CLUSTER").unwrap().unwrap();
        assert!(m.set("metricsInDelta", "true").unwrap().is_err());
        m.set("metricsInDelta", "false").unwrap().unwrap();
        assert!(m.set("grpcServerPort", "1").is_none());
    }
}
