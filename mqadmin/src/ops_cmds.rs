//! The operators' commands added beside the first set, one family per module: topic maintenance
//! (`topic_ops_cmds`), consumer-group settings and backlog skipping (`group_ops_cmds`), send and
//! read checks (`check_cmds`), metadata and config exports (`export_cmds`) and the controller's
//! broker-metadata cleanup (`controller_clean_cmds`). One subcommand enum for them all, so the
//! command line and `run` name it once.

use std::time::Duration;

use clap::Subcommand;
use client::ClientError;

use crate::table::Report;
use crate::{check_cmds, controller_clean_cmds, export_cmds, group_ops_cmds, topic_ops_cmds};

#[derive(Debug, Subcommand)]
pub enum OpsCommand {
    #[command(flatten)]
    Topic(topic_ops_cmds::TopicOpsCommand),
    #[command(flatten)]
    Group(group_ops_cmds::GroupOpsCommand),
    #[command(flatten)]
    Check(check_cmds::CheckCommand),
    #[command(flatten)]
    Export(export_cmds::ExportCommand),
    #[command(flatten)]
    ControllerClean(controller_clean_cmds::ControllerCleanCommand),
}

pub async fn run(command: OpsCommand, timeout: Duration) -> Result<Report, ClientError> {
    match command {
        OpsCommand::Topic(cmd) => topic_ops_cmds::run(cmd, timeout).await,
        OpsCommand::Group(cmd) => group_ops_cmds::run(cmd, timeout).await,
        OpsCommand::Check(cmd) => check_cmds::run(cmd, timeout).await,
        OpsCommand::Export(cmd) => export_cmds::run(cmd, timeout).await,
        OpsCommand::ControllerClean(cmd) => controller_clean_cmds::run(cmd, timeout).await,
    }
}

/// Apache's `-bn` (one dash, two letters) as `--bn`, which clap reads; every other argument as is.
pub fn rewrite_two_letter_flags(args: impl Iterator<Item = String>) -> Vec<String> {
    args.map(|a| if a == "-bn" { "--bn".to_owned() } else { a })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bn_is_rewritten() {
        let args = [
            "mqadmin",
            "cleanBrokerMetadata",
            "-bn",
            "broker-a",
            "-b",
            "1",
        ]
        .map(str::to_owned);
        assert_eq!(
            rewrite_two_letter_flags(args.into_iter()),
            [
                "mqadmin",
                "cleanBrokerMetadata",
                "--bn",
                "broker-a",
                "-b",
                "1"
            ]
        );
    }
}
