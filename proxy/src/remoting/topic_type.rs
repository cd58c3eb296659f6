//! Topics' message types (the `message.type` attribute), asked of a broker of the topic's route with
//! GET_TOPIC_CONFIG and cached as Apache's proxy caches topic configs: an entry older than
//! `topicConfigCacheRefreshSeconds` is fetched again on its next use (the old type answers when that
//! fails), one unused for `topicConfigCacheExpiredSeconds` is dropped, at most
//! `topicConfigCacheMaxNum` topics are kept.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use protocol::body::{from_json, TopicConfig};
use protocol::signature::Credentials;
use protocol::topic_attributes::TopicMessageType;
use protocol::{request_code, response_code, RemotingCommand};

use super::pool::Pool;
use super::route::Routes;
use crate::status::ProxyError;

/// How long other callers trust one caller's refresh before they start their own.
const REFRESH_WAIT: Duration = Duration::from_secs(10);

struct Entry {
    ty: TopicMessageType,
    loaded: Instant,
    used: Instant,
    /// Since when a caller fetches it again: the others answer with `ty` meanwhile (not for longer
    /// than [`REFRESH_WAIT`], in case that caller was cancelled).
    refreshing: Option<Instant>,
}

pub struct TopicTypes {
    refresh: Duration,
    expire: Duration,
    max: usize,
    /// Which broker of a route is asked first; turns so the load spreads as Apache's random pick does.
    next: AtomicUsize,
    cache: Mutex<HashMap<String, Entry>>,
}

impl TopicTypes {
    pub fn new(refresh: Duration, expire: Duration, max: usize) -> TopicTypes {
        TopicTypes {
            refresh,
            expire,
            max: max.max(1),
            next: AtomicUsize::new(0),
            cache: Mutex::default(),
        }
    }

    /// `topic`'s message type. UNSPECIFIED when no broker of its route answers (Apache's proxy answers
    /// the same, so every typed check then fails); an error only when the name servers do not know
    /// the topic.
    pub async fn get(
        &self,
        pool: &Pool,
        routes: &Routes,
        topic: &str,
        creds: Option<&Credentials>,
    ) -> Result<TopicMessageType, ProxyError> {
        let now = Instant::now();
        let stale = {
            let mut map = self.lock();
            match map.get_mut(topic) {
                Some(e) if now.duration_since(e.used) < self.expire => {
                    e.used = now;
                    let refreshing = e
                        .refreshing
                        .is_some_and(|since| now.duration_since(since) < REFRESH_WAIT);
                    if refreshing || now.duration_since(e.loaded) < self.refresh {
                        return Ok(e.ty);
                    }
                    e.refreshing = Some(now);
                    Some(e.ty)
                }
                _ => None,
            }
        };
        let loaded = self.load(pool, routes, topic, creds).await;
        let mut map = self.lock();
        match loaded {
            Ok(ty) => {
                self.insert(&mut map, topic, ty, now);
                Ok(ty)
            }
            Err(e @ ProxyError::TopicNotFound(_)) => {
                map.remove(topic);
                Err(e)
            }
            Err(e) => match stale {
                Some(ty) => {
                    tracing::warn!("message type of topic {topic} not refreshed, {ty} kept: {e}");
                    // Tried again one refresh period later, not on every call while brokers fail.
                    if let Some(entry) = map.get_mut(topic) {
                        entry.refreshing = None;
                        entry.loaded = now;
                    }
                    Ok(ty)
                }
                None => {
                    tracing::warn!("message type of topic {topic} unknown: {e}");
                    Ok(TopicMessageType::Unspecified)
                }
            },
        }
    }

    /// Asks the brokers of `topic`'s route in turn (master, else any replica) until one answers.
    async fn load(
        &self,
        pool: &Pool,
        routes: &Routes,
        topic: &str,
        creds: Option<&Credentials>,
    ) -> Result<TopicMessageType, ProxyError> {
        let route = routes.get(pool, topic).await?;
        let addrs: Vec<&str> = route
            .broker_datas
            .iter()
            .filter_map(|b| {
                b.master_addr()
                    .or_else(|| b.broker_addrs.values().next().map(String::as_str))
            })
            .collect();
        let mut last = ProxyError::Unavailable(format!("topic {topic} has no broker address"));
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        for i in 0..addrs.len() {
            let Some(addr) = addrs.get(start.wrapping_add(i) % addrs.len()) else {
                continue;
            };
            let cmd = RemotingCommand::request(request_code::GET_TOPIC_CONFIG)
                .with_ext("topic", topic)
                .with_ext("lo", "true");
            let resp = match pool.invoke(addr, cmd, creds, None).await {
                Ok(resp) => resp,
                Err(e) => {
                    last = e.into();
                    continue;
                }
            };
            match resp.code {
                response_code::SUCCESS => match from_json::<TopicConfig>(&resp.body) {
                    Ok(tc) => return Ok(tc.message_type()),
                    Err(e) => {
                        last = ProxyError::Internal(format!(
                            "bad topic config of {topic} from {addr}: {e}"
                        ))
                    }
                },
                // A broker without topic attributes (RocketMQ 4.x) keeps no types: any is accepted,
                // as before types existed.
                response_code::REQUEST_CODE_NOT_SUPPORTED => return Ok(TopicMessageType::Mixed),
                _ => {
                    last = ProxyError::from_remoting(&resp, &format!("topic config of {topic}"));
                }
            }
        }
        Err(last)
    }

    fn insert(
        &self,
        map: &mut HashMap<String, Entry>,
        topic: &str,
        ty: TopicMessageType,
        now: Instant,
    ) {
        if map.len() >= self.max && !map.contains_key(topic) {
            map.retain(|_, e| now.duration_since(e.used) < self.expire);
            if map.len() >= self.max {
                let oldest = map
                    .iter()
                    .min_by_key(|(_, e)| e.used)
                    .map(|(k, _)| k.clone());
                if let Some(k) = oldest {
                    map.remove(&k);
                }
            }
        }
        map.insert(
            topic.to_string(),
            Entry {
                ty,
                loaded: now,
                used: now,
                refreshing: None,
            },
        );
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use protocol::body::{to_json, BrokerData, QueueData, TopicRouteData};
    use protocol::frame::{encode_to_bytes, FrameBuffer};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// What the fake broker answers to GET_TOPIC_CONFIG.
    #[derive(Clone)]
    enum Answer {
        /// SUCCESS with a topic config as Java writes it, `message.type` set or not.
        Config(Option<&'static str>),
        NotSupported,
        Fails,
    }

    struct Fake {
        answer: Answer,
        asks: usize,
    }

    /// One address serving as name server (routes of T and U) and broker (their configs).
    async fn fake(state: Arc<Mutex<Fake>>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let me = addr.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let (state, me) = (state.clone(), me.clone());
                tokio::spawn(async move {
                    let mut frames = FrameBuffer::new();
                    loop {
                        while let Some(req) = frames.next_frame().unwrap() {
                            let resp = answer(&req, &state, &me);
                            sock.write_all(&encode_to_bytes(&resp).unwrap())
                                .await
                                .unwrap();
                        }
                        if sock.read_buf(frames.read_space().unwrap()).await.unwrap() == 0 {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    fn answer(req: &RemotingCommand, state: &Mutex<Fake>, me: &str) -> RemotingCommand {
        let topic = req.ext_fields.get("topic").unwrap_or_default().to_string();
        if req.code == request_code::GET_ROUTEINFO_BY_TOPIC {
            if topic != "T" && topic != "U" {
                return req.response_to(response_code::TOPIC_NOT_EXIST, None);
            }
            let route = TopicRouteData {
                queue_datas: vec![QueueData {
                    broker_name: "b".into(),
                    read_queue_nums: 4,
                    write_queue_nums: 4,
                    perm: 6,
                    ..Default::default()
                }],
                broker_datas: vec![BrokerData {
                    cluster: "c".into(),
                    broker_name: "b".into(),
                    broker_addrs: [(0, me.to_string())].into_iter().collect(),
                    ..Default::default()
                }],
                ..Default::default()
            };
            let mut resp = req.response_to(response_code::SUCCESS, None);
            resp.set_body(to_json(&route));
            return resp;
        }
        assert_eq!(req.code, request_code::GET_TOPIC_CONFIG);
        assert_eq!(req.ext_fields.get("lo"), Some("true"));
        let mut st = state.lock().unwrap();
        st.asks += 1;
        match st.answer {
            Answer::Config(ty) => {
                let attrs = ty
                    .map(|t| format!(r#""message.type":"{t}""#))
                    .unwrap_or_default();
                let body = format!(
                    r#"{{"attributes":{{{attrs}}},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"{topic}","topicSysFlag":0,"writeQueueNums":4}}"#
                );
                let mut resp = req.response_to(response_code::SUCCESS, None);
                resp.set_body(body.into_bytes());
                resp
            }
            Answer::NotSupported => {
                req.response_to(response_code::REQUEST_CODE_NOT_SUPPORTED, None)
            }
            Answer::Fails => req.response_to(response_code::SYSTEM_ERROR, Some("down".into())),
        }
    }

    struct Setup {
        state: Arc<Mutex<Fake>>,
        pool: Pool,
        routes: Routes,
    }

    impl Setup {
        async fn new(answer: Answer) -> Setup {
            let state = Arc::new(Mutex::new(Fake { answer, asks: 0 }));
            let addr = fake(state.clone()).await;
            let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
            Setup {
                state,
                pool: Pool::new(Duration::from_secs(2), tx),
                routes: Routes::new(vec![addr]),
            }
        }

        fn set(&self, answer: Answer) {
            self.state.lock().unwrap().answer = answer;
        }

        fn asks(&self) -> usize {
            self.state.lock().unwrap().asks
        }

        async fn get(
            &self,
            types: &TopicTypes,
            topic: &str,
        ) -> Result<TopicMessageType, ProxyError> {
            let f = types.get(&self.pool, &self.routes, topic, None);
            tokio::time::timeout(Duration::from_secs(10), f)
                .await
                .unwrap()
        }
    }

    const REFRESH: Duration = Duration::from_millis(300);

    #[tokio::test]
    async fn a_type_is_cached_and_a_change_seen_after_the_refresh_time() {
        let s = Setup::new(Answer::Config(Some("FIFO"))).await;
        let types = TopicTypes::new(REFRESH, Duration::from_secs(60), 100);
        assert_eq!(s.get(&types, "T").await.unwrap(), TopicMessageType::Fifo);
        s.set(Answer::Config(Some("NORMAL")));
        assert_eq!(s.get(&types, "T").await.unwrap(), TopicMessageType::Fifo);
        assert_eq!(s.asks(), 1, "a fresh type is not asked again");
        tokio::time::sleep(REFRESH + Duration::from_millis(50)).await;
        assert_eq!(s.get(&types, "T").await.unwrap(), TopicMessageType::Normal);
        assert_eq!(s.asks(), 2);
        // No attribute: NORMAL, as Apache reads it.
        s.set(Answer::Config(None));
        assert_eq!(s.get(&types, "U").await.unwrap(), TopicMessageType::Normal);
    }

    #[tokio::test]
    async fn failures_keep_the_old_type_or_leave_it_unspecified() {
        let s = Setup::new(Answer::Config(Some("TRANSACTION"))).await;
        let types = TopicTypes::new(REFRESH, Duration::from_secs(60), 100);
        assert_eq!(
            s.get(&types, "T").await.unwrap(),
            TopicMessageType::Transaction
        );
        s.set(Answer::Fails);
        tokio::time::sleep(REFRESH + Duration::from_millis(50)).await;
        assert_eq!(
            s.get(&types, "T").await.unwrap(),
            TopicMessageType::Transaction
        );
        // Never learnt: UNSPECIFIED, and not cached (asked again next time).
        assert_eq!(
            s.get(&types, "U").await.unwrap(),
            TopicMessageType::Unspecified
        );
        let asks = s.asks();
        s.set(Answer::Config(Some("DELAY")));
        assert_eq!(s.get(&types, "U").await.unwrap(), TopicMessageType::Delay);
        assert_eq!(s.asks(), asks + 1);
        // A topic the name servers do not know is an error of its own.
        assert!(matches!(
            s.get(&types, "Nope").await,
            Err(ProxyError::TopicNotFound(_))
        ));
    }

    #[tokio::test]
    async fn a_broker_without_topic_configs_accepts_every_type() {
        let s = Setup::new(Answer::NotSupported).await;
        let types = TopicTypes::new(REFRESH, Duration::from_secs(60), 100);
        assert_eq!(s.get(&types, "T").await.unwrap(), TopicMessageType::Mixed);
    }

    #[tokio::test]
    async fn unused_types_expire_and_the_cache_is_bounded() {
        let s = Setup::new(Answer::Config(Some("FIFO"))).await;
        let types = TopicTypes::new(Duration::from_secs(60), Duration::from_millis(200), 1);
        s.get(&types, "T").await.unwrap();
        s.get(&types, "U").await.unwrap();
        // One topic at most: T made room for U, so T is asked again.
        s.get(&types, "T").await.unwrap();
        assert_eq!(s.asks(), 3);
        tokio::time::sleep(Duration::from_millis(250)).await;
        s.get(&types, "T").await.unwrap();
        assert_eq!(s.asks(), 4, "an expired type is asked again");
    }
}
