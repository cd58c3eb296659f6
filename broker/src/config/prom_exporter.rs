//! Apache RocketMQ 5's metrics exporter keys: `metricsExporterType` (DISABLE, the default, or PROM:
//! Apache's metric names served in Prometheus text at `metricsPromExporterHost`:
//! `metricsPromExporterPort`); OTLP_GRPC and LOG are refused at start (not built). Our own metric
//! names stay on `metricsPort`.

/// Apache's default `metricsPromExporterPort`.
pub const DEFAULT_PROM_PORT: u16 = 5557;

/// Which exporter Apache's metrics go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExporterType {
    #[default]
    Disable,
    Prom,
}

/// The exporter keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromExporterConfig {
    pub exporter_type: ExporterType,
    pub port: u16,
    /// Empty: the broker's bind address (Apache's default is every address).
    pub host: String,
    /// Ours (`metricsPromUnitSuffix`): names with a unit get it appended, as the OpenTelemetry 1.29
    /// exporter of Apache 5.1.4 and later prints them (`rocketmq_rpc_latency_milliseconds`,
    /// `rocketmq_storage_size_bytes`); off (the default): the names of Apache's documentation, as
    /// Apache 5.1.0 to 5.1.3 print them.
    pub unit_suffix: bool,
}

impl Default for PromExporterConfig {
    fn default() -> Self {
        PromExporterConfig {
            exporter_type: ExporterType::Disable,
            port: DEFAULT_PROM_PORT,
            host: String::new(),
            unit_suffix: false,
        }
    }
}

impl PromExporterConfig {
    /// Applies `key` when it is an exporter key: `None` for other keys, `Some(Err(reason))` for a bad
    /// value or an exporter that is not built.
    pub fn set(&mut self, key: &str, value: &str) -> Option<Result<(), String>> {
        let result = match key {
            "metricsExporterType" => match value.to_ascii_uppercase().as_str() {
                "" | "DISABLE" => {
                    self.exporter_type = ExporterType::Disable;
                    Ok(())
                }
                "PROM" => {
                    self.exporter_type = ExporterType::Prom;
                    Ok(())
                }
                "OTLP_GRPC" | "LOG" => Err(format!(
                    "the {value} metrics exporter is not built: use PROM (Apache's metric names in \
                     Prometheus text at metricsPromExporterPort) and scrape it, or DISABLE"
                )),
                _ => Err("expected DISABLE, PROM, OTLP_GRPC or LOG".to_owned()),
            },
            "metricsPromExporterPort" => value
                .parse::<u16>()
                .map(|p| self.port = p)
                .map_err(|_| "expected a port number".to_owned()),
            "metricsPromExporterHost" => {
                self.host = value.to_owned();
                Ok(())
            }
            "metricsPromUnitSuffix" => match value {
                "true" => {
                    self.unit_suffix = true;
                    Ok(())
                }
                "false" => {
                    self.unit_suffix = false;
                    Ok(())
                }
                _ => Err("expected true or false".to_owned()),
            },
            _ => return None,
        };
        Some(result)
    }

    /// Whether the PROM endpoint is served.
    pub fn enabled(&self) -> bool {
        self.exporter_type == ExporterType::Prom
    }

    /// Refuses a PROM port equal to `metricsPort` (ours): each set of names has a port of its own.
    pub fn validate(&self, metrics_port: u16) -> Result<(), (&'static str, String, &'static str)> {
        if self.enabled() && metrics_port != 0 && metrics_port == self.port {
            return Err((
                "metricsPromExporterPort",
                self.port.to_string(),
                "equals metricsPort: our metric names (metricsPort) and Apache's \
                 (metricsExporterType = PROM) are served on ports of their own; set one of them to \
                 another port",
            ));
        }
        Ok(())
    }

    /// The keys as the broker reports its configuration.
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let kind = match self.exporter_type {
            ExporterType::Disable => "DISABLE",
            ExporterType::Prom => "PROM",
        };
        vec![
            ("metricsExporterType", kind.to_owned()),
            ("metricsPromExporterPort", self.port.to_string()),
            ("metricsPromExporterHost", self.host.clone()),
            ("metricsPromUnitSuffix", self.unit_suffix.to_string()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prom_is_applied_and_the_unbuilt_exporters_refused() {
        let mut c = PromExporterConfig::default();
        assert_eq!(c.set("brokerName", "b"), None);
        assert!(!c.enabled());
        assert_eq!(c.port, 5557);
        assert_eq!(c.set("metricsExporterType", "PROM"), Some(Ok(())));
        assert!(c.enabled());
        assert_eq!(c.set("metricsPromExporterPort", "6000"), Some(Ok(())));
        assert_eq!(c.port, 6000);
        assert_eq!(c.set("metricsPromExporterHost", "127.0.0.1"), Some(Ok(())));
        assert!(matches!(
            c.set("metricsExporterType", "OTLP_GRPC"),
            Some(Err(_))
        ));
        assert!(matches!(c.set("metricsExporterType", "LOG"), Some(Err(_))));
        assert!(matches!(c.set("metricsExporterType", "JMX"), Some(Err(_))));
        assert!(matches!(
            c.set("metricsPromExporterPort", "x"),
            Some(Err(_))
        ));
        assert_eq!(c.set("metricsExporterType", "disable"), Some(Ok(())));
        assert!(!c.enabled());
        assert!(c.validate(5557).is_ok(), "off: no clash");
        c.set("metricsExporterType", "PROM");
        assert!(c.validate(6000).is_err(), "the same port as metricsPort");
        assert!(c.validate(0).is_ok());
        assert!(c.validate(5557).is_ok());
    }
}
