//! cleanBrokerMetadata (controller mode): removes a broker group's replicas (all, or the
//! controller-assigned ids given) from the controllers' metadata with CLEAN_BROKER_DATA, sent to
//! the leader found through CONTROLLER_GET_METADATA_INFO, as Apache's tool does. Living replicas
//! are refused unless `-l`.

use std::time::Duration;

use clap::{Args, Subcommand};
use client::request::{expect_success, request};
use client::ClientError;
use protocol::{request_code, ExtFields};
use remoting::Client;
use serde_json::json;

use crate::table::Report;

#[derive(Debug, Subcommand)]
pub enum ControllerCleanCommand {
    /// Clean metadata of broker on controller.
    #[command(name = "cleanBrokerMetadata")]
    CleanBrokerMetadata(CleanBrokerMetadataArgs),
}

#[derive(Debug, Args)]
pub struct CleanBrokerMetadataArgs {
    /// The address of a controller (the leader is asked of it)
    #[arg(short = 'a', long = "controllerAddress")]
    pub controller: String,
    /// Controller-assigned ids of the replicas to clean, e.g. 1;2;3 (default: every replica)
    #[arg(short = 'b', long = "brokerControllerIdsToClean")]
    pub ids: Option<String>,
    /// The broker name of the replicas (Apache's `-bn`)
    #[arg(long = "brokerName", visible_alias = "bn")]
    pub broker_name: String,
    /// The cluster name of the broker (required unless -l)
    #[arg(short = 'c', long = "clusterName")]
    pub cluster: Option<String>,
    /// Clean living replicas too
    #[arg(short = 'l', long = "cleanLivingBroker")]
    pub clean_living: bool,
}

pub async fn run(
    command: ControllerCleanCommand,
    timeout: Duration,
) -> Result<Report, ClientError> {
    match command {
        ControllerCleanCommand::CleanBrokerMetadata(args) => clean(args, timeout).await,
    }
}

/// The ids of `-b`: numbers separated by ';'.
pub fn check_ids(text: &str) -> Result<String, ClientError> {
    let ids: Vec<&str> = text.split(';').map(str::trim).collect();
    if ids.iter().any(|id| id.parse::<u64>().is_err()) {
        return Err(ClientError::Invalid(format!(
            "please set the option <brokerControllerIdsToClean> according to the format (1;2;3): {text:?}"
        )));
    }
    Ok(ids.join(";"))
}

async fn clean(args: CleanBrokerMetadataArgs, timeout: Duration) -> Result<Report, ClientError> {
    let broker_name = args.broker_name.trim();
    let cluster = args
        .cluster
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty());
    if !args.clean_living && cluster.is_none() {
        return Err(ClientError::Invalid(
            "cleanLivingBroker option is false, clusterName option can not be empty.".into(),
        ));
    }
    let ids = args.ids.as_deref().map(check_ids).transpose()?;
    let asked = args.controller.trim();
    let meta = Client::connect_str(asked, timeout)
        .await?
        .invoke(
            request(request_code::CONTROLLER_GET_METADATA_INFO, ExtFields::new()),
            timeout,
        )
        .await?;
    let meta = expect_success(meta)?;
    let leader = meta
        .ext("controllerLeaderAddress")
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| ClientError::Invalid(format!("controller {asked} knows no leader")))?;
    let mut fields = ExtFields::new();
    if let Some(c) = cluster {
        fields.insert("clusterName", c);
    }
    fields.insert("brokerName", broker_name);
    if let Some(ids) = &ids {
        fields.insert("brokerControllerIdsToClean", ids);
    }
    fields.insert(
        "isCleanLivingBroker",
        if args.clean_living { "true" } else { "false" },
    );
    fields.insert_display("invokeTime", client::uniq_key::now_millis());
    let resp = Client::connect_str(&leader, timeout)
        .await?
        .invoke(request(request_code::CLEAN_BROKER_DATA, fields), timeout)
        .await?;
    expect_success(resp)?;
    Ok(Report::lines(
        vec![format!(
            "clear broker {broker_name} metadata from controller success! "
        )],
        json!({"brokerName": broker_name, "controllerLeader": leader, "ids": ids,
            "cleanLivingBroker": args.clean_living}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_lists_are_numbers() {
        assert_eq!(check_ids("1; 2;3").unwrap(), "1;2;3");
        assert!(check_ids("1;x").is_err());
        assert!(check_ids("").is_err());
    }
}
