//! The receipt handle the proxy gives the SDK for a popped message: the broker's `extraInfo` (which
//! ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME take back) followed by the message's commit-log
//! offset (which CONSUMER_SEND_MSG_BACK needs to move it to the dead-letter queue), space separated,
//! as Apache's proxy appends it.

use protocol::header::extra_info::ExtraInfo;

use crate::pb::Code;
use crate::status::ProxyError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptHandle {
    pub extra_info: ExtraInfo,
    pub commit_log_offset: i64,
}

impl ReceiptHandle {
    pub fn encode(&self) -> String {
        format!("{} {}", self.extra_info, self.commit_log_offset)
    }

    pub fn decode(text: &str) -> Result<ReceiptHandle, ProxyError> {
        let invalid = |why: String| ProxyError::Code(Code::InvalidReceiptHandle, why);
        let (info, offset) = text
            .rsplit_once(' ')
            .ok_or_else(|| invalid(format!("receipt handle {text:?} is not this proxy's")))?;
        let commit_log_offset = offset
            .parse()
            .map_err(|_| invalid(format!("receipt handle {text:?} is not this proxy's")))?;
        let extra_info = ExtraInfo::parse(info).map_err(|e| invalid(e.to_string()))?;
        if extra_info.queue_offset.is_none() {
            return Err(invalid(format!(
                "receipt handle {text:?} has no queue offset"
            )));
        }
        Ok(ReceiptHandle {
            extra_info,
            commit_log_offset,
        })
    }

    /// The message's queue offset (always present in handles this proxy made).
    pub fn queue_offset(&self) -> i64 {
        self.extra_info
            .queue_offset
            .unwrap_or(self.extra_info.ck_queue_offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_garbage_is_an_invalid_handle() {
        let h = ReceiptHandle::decode("10 1700000000000 60000 0 1 broker-a 2 12 4096").unwrap();
        assert_eq!(h.extra_info.broker_name, "broker-a");
        assert_eq!(h.queue_offset(), 12);
        assert_eq!(h.commit_log_offset, 4096);
        assert_eq!(ReceiptHandle::decode(&h.encode()).unwrap(), h);
        for bad in ["", "x", "10 1 2 0 0 b 3 4 y", "10 1 2 0 0 b 3 4"] {
            let e = ReceiptHandle::decode(bad).unwrap_err();
            assert_eq!(e.code(), Code::InvalidReceiptHandle, "{bad}");
        }
    }
}
