//! A topic's route turned into what a client uses: the writable and readable queues, and each broker
//! group's master address.

use std::collections::BTreeMap;

use protocol::body::{perm, MessageQueue, TopicRouteData};

use crate::error::ClientError;

/// Queues and master addresses of one topic, in the Java client's order (by broker name, then queue id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicRoute {
    pub topic: String,
    pub data: TopicRouteData,
    write_queues: Vec<MessageQueue>,
    read_queues: Vec<MessageQueue>,
    masters: BTreeMap<String, String>,
}

/// Queues `0..count` of a topic on one broker group.
fn queues<'a>(
    topic: &'a str,
    broker: &'a str,
    count: i32,
) -> impl Iterator<Item = MessageQueue> + 'a {
    (0..count.max(0)).map(move |queue_id| MessageQueue {
        topic: topic.to_owned(),
        broker_name: broker.to_owned(),
        queue_id,
    })
}

impl TopicRoute {
    /// Writable queues are those of write-permitted queue data whose broker group has a master (as
    /// the Java producer's `topicRouteData2TopicPublishInfo`); readable ones need read permission.
    pub fn new(topic: &str, data: TopicRouteData) -> TopicRoute {
        let masters: BTreeMap<String, String> = data
            .broker_datas
            .iter()
            .filter_map(|b| {
                b.master_addr()
                    .map(|addr| (b.broker_name.clone(), addr.to_owned()))
            })
            .collect();
        let mut queue_datas = data.queue_datas.clone();
        queue_datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
        let write_queues = queue_datas
            .iter()
            .filter(|q| perm::is_writeable(q.perm) && masters.contains_key(&q.broker_name))
            .flat_map(|q| queues(topic, &q.broker_name, q.write_queue_nums))
            .collect();
        let read_queues = queue_datas
            .iter()
            .filter(|q| perm::is_readable(q.perm))
            .flat_map(|q| queues(topic, &q.broker_name, q.read_queue_nums))
            .collect();
        TopicRoute {
            topic: topic.to_owned(),
            data,
            write_queues,
            read_queues,
            masters,
        }
    }

    pub fn write_queues(&self) -> &[MessageQueue] {
        &self.write_queues
    }

    pub fn read_queues(&self) -> &[MessageQueue] {
        &self.read_queues
    }

    /// The master address of a broker group.
    pub fn master_addr(&self, broker_name: &str) -> Result<&str, ClientError> {
        self.masters
            .get(broker_name)
            .map(String::as_str)
            .ok_or_else(|| ClientError::NoBrokerAddr(broker_name.to_owned()))
    }

    /// Every master address, once.
    pub fn master_addrs(&self) -> impl Iterator<Item = &str> {
        self.masters.values().map(String::as_str)
    }

    /// The `n`th writable queue, round robin (`n` is a caller's running counter).
    pub fn select_write_queue(&self, n: usize) -> Result<&MessageQueue, ClientError> {
        let len = self.write_queues.len();
        if len == 0 {
            return Err(ClientError::NoWritableQueue(self.topic.clone()));
        }
        self.write_queues
            .get(n % len)
            .ok_or_else(|| ClientError::NoWritableQueue(self.topic.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::body::from_json;

    // As the Java name server writes it: unquoted integer keys in brokerAddrs.
    const JAVA_ROUTE: &str = r#"{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"brokerName":"broker-b","cluster":"DefaultCluster"},{"brokerAddrs":{1:"127.0.0.1:10931"},"brokerName":"broker-c","cluster":"DefaultCluster"},{"brokerAddrs":{0:"127.0.0.1:10811"},"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-b","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":3},{"brokerName":"broker-c","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},{"brokerName":"broker-a","perm":4,"readQueueNums":1,"topicSysFlag":0,"writeQueueNums":1}]}"#;

    #[test]
    fn queues_follow_permissions_and_masters() {
        let data: TopicRouteData = from_json(JAVA_ROUTE.as_bytes()).unwrap();
        let route = TopicRoute::new("T", data);
        // broker-a is read-only, broker-c has no master: only broker-b's 3 write queues.
        let writable: Vec<_> = route
            .write_queues()
            .iter()
            .map(|q| (q.broker_name.as_str(), q.queue_id))
            .collect();
        assert_eq!(
            writable,
            vec![("broker-b", 0), ("broker-b", 1), ("broker-b", 2)]
        );
        assert_eq!(route.read_queues().len(), 1 + 2 + 4);
        assert_eq!(route.read_queues()[0].broker_name, "broker-a");
        assert_eq!(route.master_addr("broker-b").unwrap(), "127.0.0.1:10911");
        assert!(route.master_addr("broker-c").is_err());
        assert_eq!(route.master_addrs().count(), 2);
        let picks: Vec<i32> = (0..5)
            .map(|n| route.select_write_queue(n).unwrap().queue_id)
            .collect();
        assert_eq!(picks, vec![0, 1, 2, 0, 1]);
        assert_eq!(route.write_queues()[0].topic, "T");
    }

    #[test]
    fn no_writable_queue_is_an_error() {
        let route = TopicRoute::new("T", TopicRouteData::default());
        assert!(matches!(
            route.select_write_queue(0),
            Err(ClientError::NoWritableQueue(_))
        ));
    }
}
