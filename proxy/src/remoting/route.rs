//! Topic routes from the name servers (GET_ROUTEINFO_BY_TOPIC), cached briefly: every gRPC call
//! needs the route of its topic, and brokers register every 30 s, so a few seconds old is fresh.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use protocol::body::from_json;
use protocol::body::TopicRouteData;
use protocol::{request_code, response_code, RemotingCommand};

use super::pool::Pool;
use crate::status::ProxyError;

const ROUTE_TTL: Duration = Duration::from_secs(3);

pub struct Routes {
    namesrv: Vec<String>,
    cache: Mutex<HashMap<String, (Instant, Arc<TopicRouteData>)>>,
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
        let route = Arc::new(self.fetch(pool, topic).await?);
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
            .broker_datas
            .iter()
            .find(|b| b.broker_name == broker_name)
            .and_then(|b| b.master_addr())
            .map(str::to_string)
            .ok_or_else(|| {
                ProxyError::Unavailable(format!("broker {broker_name} has no master for {topic}"))
            })
    }
}
