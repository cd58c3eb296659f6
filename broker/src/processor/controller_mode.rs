//! Controller mode requests a broker serves: NOTIFY_BROKER_ROLE_CHANGED from the controller leader
//! after an election (control shard), and EXCHANGE_BROKER_HA_INFO from a new slave asking where
//! this master's HA port is.

use std::rc::Rc;

use protocol::response_code as rc;
use protocol::RemotingCommand;

use crate::common::reply::{error, ok};
use crate::config::BrokerRole;
use crate::replication::replicas::MasterInfo;
use crate::shard::Shard;

/// The controller's notice: applied in the background (the notice is oneway).
pub fn role_changed(shard: &Rc<Shard>, req: &RemotingCommand) -> RemotingCommand {
    if !shard.cfg.controller.enabled {
        return error(rc::SYSTEM_ERROR, "this broker is not in controller mode");
    }
    let info = MasterInfo::from_command(req);
    tracing::info!(
        "controller mode: notice of master {:?} ({:?}) at epoch {}",
        info.master_broker_id,
        info.master_addr,
        info.master_epoch
    );
    let shard = shard.clone();
    glommio::spawn_local(async move { crate::replication::replicas::apply(&shard, info).await })
        .detach();
    ok()
}

/// This master's HA address, flush offset and address (Apache's ExchangeHAInfoResponseHeader).
pub fn exchange_ha_info(shard: &Shard) -> RemotingCommand {
    if shard.role() == BrokerRole::Slave {
        return error(rc::SYSTEM_ERROR, "this broker is not a master now");
    }
    let mut resp = ok();
    resp.set_ext("masterHaAddress", &shard.cfg.ha_server_addr());
    resp.set_ext(
        "masterFlushOffset",
        &shard.store.flushed_physical_offset().to_string(),
    );
    resp.set_ext("masterAddress", &shard.cfg.broker_addr());
    resp
}
