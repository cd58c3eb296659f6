//! Building requests the way the Java client does (JSON header, string extFields, language JAVA) and
//! checking response codes.

use protocol::{ExtFields, LanguageCode, RemotingCommand, SerializeType};

use crate::error::ClientError;

/// A request with `fields` as its extFields, JSON header, language JAVA.
pub fn request(code: i32, fields: ExtFields) -> RemotingCommand {
    RemotingCommand::request(code)
        .with_language(LanguageCode::Java)
        .with_serialize_type(SerializeType::Json)
        .with_ext_fields(fields)
}

/// `Ok(response)` when its code is one of `accepted`, else the code as an error.
pub fn expect_code(
    response: RemotingCommand,
    accepted: &[i32],
) -> Result<RemotingCommand, ClientError> {
    if accepted.contains(&response.code) {
        Ok(response)
    } else {
        Err(ClientError::Response {
            code: response.code,
            remark: response.remark.unwrap_or_default(),
        })
    }
}

/// `Ok(response)` when it is SUCCESS.
pub fn expect_success(response: RemotingCommand) -> Result<RemotingCommand, ClientError> {
    expect_code(response, &[protocol::response_code::SUCCESS])
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::frame::{decode_frame, encode_to_bytes};

    #[test]
    fn requests_carry_what_the_java_client_sends() {
        let mut fields = ExtFields::new();
        fields.insert("topic", "T");
        fields.insert_display("queueId", 3);
        let cmd = request(protocol::request_code::GET_ROUTEINFO_BY_TOPIC, fields);
        let bytes = encode_to_bytes(&cmd).unwrap();
        let header_len = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) & 0x00FF_FFFF;
        let header = std::str::from_utf8(&bytes[8..8 + header_len as usize]).unwrap();
        // String extFields, serializeTypeCurrentRPC and language JAVA, as strict brokers require.
        assert!(header.contains(r#""queueId":"3""#), "{header}");
        assert!(
            header.contains(r#""serializeTypeCurrentRPC":"JSON""#),
            "{header}"
        );
        assert!(header.contains(r#""language":"JAVA""#), "{header}");
        assert!(header.contains(r#""code":105"#), "{header}");
        let mut buf = bytes::BytesMut::from(&bytes[..]);
        let back = decode_frame(&mut buf).unwrap().unwrap();
        assert_eq!(back.ext("topic"), Some("T"));
    }

    #[test]
    fn non_success_codes_become_errors_with_their_code() {
        let ok = RemotingCommand::response(0, None);
        assert!(expect_success(ok).is_ok());
        let busy = RemotingCommand::response(2, Some("busy".into()));
        let err = expect_success(busy).unwrap_err();
        assert_eq!(err.response_code(), Some(2));
        assert_eq!(err.kind(), crate::error::ErrorKind::Response(2));
        assert!(err.to_string().contains("SYSTEM_BUSY"), "{err}");
        let not_found = RemotingCommand::response(19, None);
        assert!(expect_code(not_found, &[0, 19]).is_ok());
    }
}
