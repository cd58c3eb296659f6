//! Topic routes from the name servers (GET_ROUTEINFO_BY_TOPIC), cached briefly: every gRPC call
//! needs the route of its topic, and brokers register every 30 s, so a few seconds old is fresh.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use protocol::body::from_json;
use protocol::body::perm;
use protocol::body::TopicRouteData;
use protocol::{request_code, response_code, RemotingCommand};

use super::pool::Pool;
use crate::status::ProxyError;

const ROUTE_TTL: Duration = Duration::from_secs(3);

/// One queue a message can be sent to: on a writable queue data of a broker with a live master.
#[derive(Debug, Clone)]
pub struct WritableQueue {
    pub broker_name: Arc<str>,
    pub master_addr: Arc<str>,
    pub queue_id: i32,
}

/// A route as fetched, with its writable queues listed once (every send picks from them).
pub struct CachedRoute {
    pub route: Arc<TopicRouteData>,
    /// Ordered by broker name, then queue id.
    pub writable: Vec<WritableQueue>,
}

impl CachedRoute {
    fn new(route: TopicRouteData) -> CachedRoute {
        let mut datas: Vec<_> = route.queue_datas.iter().collect();
        datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
        let mut writable = Vec::new();
        for q in datas {
            if !perm::is_writeable(q.perm) {
                continue;
            }
            let Some(addr) = route.master_addr_of(&q.broker_name) else {
                continue;
            };
            let broker_name: Arc<str> = Arc::from(q.broker_name.as_str());
            let master_addr: Arc<str> = Arc::from(addr);
            for queue_id in 0..q.write_queue_nums {
                writable.push(WritableQueue {
                    broker_name: broker_name.clone(),
                    master_addr: master_addr.clone(),
                    queue_id,
                });
            }
        }
        CachedRoute {
            route: Arc::new(route),
            writable,
        }
    }
}

pub struct Routes {
    namesrv: Vec<String>,
    cache: Mutex<HashMap<String, (Instant, Arc<CachedRoute>)>>,
}

impl Routes {
    pub fn new(namesrv: Vec<String>) -> Routes {
        Routes {
            namesrv,
            cache: Mutex::default(),
        }
    }

    /// The route of `topic`, from the cache when fresh, else from the first name server that answers.
    pub async fn get(&self, pool: &Pool, topic: &str) -> Result<Arc<TopicRouteData>, ProxyError> {
        Ok(self.get_cached(pool, topic).await?.route.clone())
    }

    /// [`Routes::get`] with the route's writable queues.
    pub async fn get_cached(
        &self,
        pool: &Pool,
        topic: &str,
    ) -> Result<Arc<CachedRoute>, ProxyError> {
        if let Some((at, r)) = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(topic)
        {
            if at.elapsed() < ROUTE_TTL {
                return Ok(r.clone());
            }
        }
        let route = Arc::new(CachedRoute::new(self.fetch(pool, topic).await?));
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(topic.to_string(), (Instant::now(), route.clone()));
        Ok(route)
    }

    async fn fetch(&self, pool: &Pool, topic: &str) -> Result<TopicRouteData, ProxyError> {
        let mut last = ProxyError::Unavailable("no name server configured".into());
        for addr in &self.namesrv {
            let cmd = RemotingCommand::request(request_code::GET_ROUTEINFO_BY_TOPIC)
                .with_ext("topic", topic);
            match pool.invoke(addr, cmd, None, None).await {
                Ok(resp) if resp.code == response_code::SUCCESS => {
                    return from_json(&resp.body).map_err(|e| {
                        ProxyError::Internal(format!("bad route of {topic} from {addr}: {e}"))
                    });
                }
                Ok(resp) if resp.code == response_code::TOPIC_NOT_EXIST => {
                    return Err(ProxyError::TopicNotFound(topic.to_string()));
                }
                Ok(resp) => {
                    last = ProxyError::from_remoting(&resp, &format!("route of {topic}"));
                }
                Err(e) => last = ProxyError::Unavailable(e.to_string()),
            }
        }
        Err(last)
    }

    /// The master address of `broker_name` in `topic`'s route.
    pub async fn master_of(
        &self,
        pool: &Pool,
        topic: &str,
        broker_name: &str,
    ) -> Result<String, ProxyError> {
        let route = self.get(pool, topic).await?;
        route
            .master_addr_of(broker_name)
            .map(str::to_string)
            .ok_or_else(|| {
                ProxyError::Unavailable(format!("broker {broker_name} has no master for {topic}"))
            })
    }
}
