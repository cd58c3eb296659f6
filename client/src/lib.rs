//! A small async RocketMQ client used by loadgen, the admin CLI and tests (not implemented yet).
