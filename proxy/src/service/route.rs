//! QueryRoute and QueryAssignment: a topic's queues from the name server, each broker shown at the
//! endpoint the SDK already uses (this proxy), as Apache's proxy does in cluster mode; each queue
//! accepts the message types of the topic's `message.type`.

use protocol::body::{perm, QueueData, TopicRouteData};

use super::caller::Caller;
use super::message_type::advertised;
use super::resource::topic_name;
use crate::pb::*;
use crate::state::Proxy;
use crate::status::{ok, ProxyError};

fn resource(caller: &Caller, name: &str) -> Resource {
    Resource {
        resource_namespace: caller.namespace.clone(),
        name: name.to_string(),
    }
}

fn broker(q: &QueueData, endpoints: &Option<Endpoints>) -> Broker {
    Broker {
        name: q.broker_name.clone(),
        id: 0,
        endpoints: endpoints.clone(),
    }
}

/// Queue ids 0..max(read, write): readable below readQueueNums, writable below writeQueueNums.
///
/// A broker group between masters (its master gone, a slave still registered) keeps its queues: every
/// receive, ack and send names the broker or picks its own queue and finds the group's current master
/// when it is made, while the SDKs refresh routes only every 30 s. Leaving such a group out kept a
/// SimpleConsumer (which receives from the queues of its route) off that group for 30 s after its
/// new master was serving.
fn queues_of(
    caller: &Caller,
    topic: &str,
    route: &TopicRouteData,
    endpoints: &Option<Endpoints>,
    accept: &[i32],
) -> Vec<MessageQueue> {
    let mut datas: Vec<&QueueData> = route.queue_datas.iter().collect();
    datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    let mut out = Vec::new();
    for q in datas {
        if !route
            .broker_datas
            .iter()
            .any(|b| b.broker_name == q.broker_name && !b.broker_addrs.is_empty())
        {
            continue;
        }
        let n = q.read_queue_nums.max(q.write_queue_nums);
        for id in 0..n {
            let r = perm::is_readable(q.perm) && id < q.read_queue_nums;
            let w = perm::is_writeable(q.perm) && id < q.write_queue_nums;
            let permission = match (r, w) {
                (true, true) => Permission::ReadWrite,
                (true, false) => Permission::Read,
                (false, true) => Permission::Write,
                (false, false) => Permission::None,
            };
            out.push(MessageQueue {
                topic: Some(resource(caller, topic)),
                id,
                permission: permission as i32,
                broker: Some(broker(q, endpoints)),
                accept_message_types: accept.to_vec(),
            });
        }
    }
    out
}

fn access_point(endpoints: &Option<Endpoints>) -> Result<(), ProxyError> {
    if endpoints.as_ref().is_none_or(|e| e.addresses.is_empty()) {
        return Err(ProxyError::Code(
            Code::IllegalAccessPoint,
            "endpoints (the address the client uses for this proxy) are required".into(),
        ));
    }
    Ok(())
}

pub async fn query_route(
    proxy: &Proxy,
    caller: &Caller,
    req: QueryRouteRequest,
) -> Result<QueryRouteResponse, ProxyError> {
    let topic = topic_name(&req.topic)?;
    access_point(&req.endpoints)?;
    let route = proxy.routes.get(&proxy.pool, topic).await?;
    let accept = advertised(proxy, topic).await?;
    let message_queues = queues_of(caller, topic, &route, &req.endpoints, &accept);
    Ok(QueryRouteResponse {
        status: Some(ok()),
        message_queues,
    })
}

/// One assignment per broker with readable queues, queue id -1: POP then serves every queue of that
/// broker, so consumers of a group share queues without rebalancing.
pub async fn query_assignment(
    proxy: &Proxy,
    caller: &Caller,
    req: QueryAssignmentRequest,
) -> Result<QueryAssignmentResponse, ProxyError> {
    let topic = topic_name(&req.topic)?;
    access_point(&req.endpoints)?;
    let route = proxy.routes.get(&proxy.pool, topic).await?;
    let accept = advertised(proxy, topic).await?;
    let mut datas: Vec<&QueueData> = route
        .queue_datas
        .iter()
        .filter(|q| perm::is_readable(q.perm) && q.read_queue_nums > 0)
        .collect();
    datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    let assignments = datas
        .into_iter()
        .map(|q| Assignment {
            message_queue: Some(MessageQueue {
                topic: Some(resource(caller, topic)),
                id: -1,
                permission: Permission::ReadWrite as i32,
                broker: Some(broker(q, &req.endpoints)),
                accept_message_types: accept.clone(),
            }),
        })
        .collect();
    Ok(QueryAssignmentResponse {
        status: Some(ok()),
        assignments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::body::BrokerData;

    fn route(groups: &[(&str, &[i64])]) -> TopicRouteData {
        let mut r = TopicRouteData::default();
        for (name, ids) in groups {
            r.queue_datas.push(QueueData {
                broker_name: name.to_string(),
                read_queue_nums: 4,
                write_queue_nums: 4,
                perm: perm::READ | perm::WRITE,
                topic_sys_flag: 0,
            });
            r.broker_datas.push(BrokerData {
                broker_name: name.to_string(),
                broker_addrs: ids
                    .iter()
                    .map(|id| (*id, format!("10.0.0.{id}:10911")))
                    .collect(),
                ..BrokerData::default()
            });
        }
        r
    }

    fn names(route: &TopicRouteData) -> Vec<(String, i32)> {
        let caller = Caller {
            client_id: String::new(),
            namespace: String::new(),
            creds: None,
        };
        queues_of(&caller, "T", route, &None, &[])
            .into_iter()
            .map(|q| (q.broker.map(|b| b.name).unwrap_or_default(), q.id))
            .collect()
    }

    #[test]
    fn a_group_between_masters_keeps_its_queues() {
        // Group a: its master gone, a slave (id 2) still registered.
        let r = route(&[("a", &[2]), ("b", &[0, 1])]);
        let got = names(&r);
        assert_eq!(got.len(), 8, "{got:?}");
        assert!(got.contains(&("a".to_string(), 0)));
        assert!(got.contains(&("a".to_string(), 3)));
        // Shown as the master: the SDKs receive only from queues of broker id 0.
        let caller = Caller {
            client_id: String::new(),
            namespace: String::new(),
            creds: None,
        };
        assert!(queues_of(&caller, "T", &r, &None, &[])
            .iter()
            .all(|q| q.broker.as_ref().is_some_and(|b| b.id == 0)));
    }

    #[test]
    fn a_group_with_no_registered_broker_has_no_queues() {
        let mut r = route(&[("a", &[]), ("b", &[0])]);
        assert_eq!(names(&r).len(), 4);
        r.broker_datas.retain(|b| b.broker_name != "a");
        assert_eq!(names(&r).len(), 4);
    }
}
