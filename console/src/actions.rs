//! Admin actions (create or update a topic, reset a group's offsets by time, drain a broker process or
//! give it its write permission back) and the login that allows them. Each action is sent signed with
//! the operator's ACL account, so the brokers decide with their own ACL; the console refuses every
//! action when it was started without `--enableAdmin` or nobody is logged in.

use client::acl::Credentials;
use client::request::request;
use client::ClientError;
use mqadmin::admin::Admin;
use mqadmin::{consumer_cmds, stats_cmds, topic_cmds};
use protocol::header::{CommandHeader, WritePermOfBrokerRequestHeader};
use protocol::request_code;
use serde_json::{json, Value};

use crate::app::{error_response, Console};
use crate::clock::now_ms;
use crate::http::{Request, Response};
use crate::{api, session};

/// Why an action was not even tried.
fn refuse(status: u16, why: &str) -> Response {
    Response::json(status, &json!({ "error": why }))
}

fn field<'a>(body: &'a Value, name: &str) -> Result<&'a str, ClientError> {
    body.get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ClientError::Invalid(format!("`{name}` is required")))
}

fn int_field(body: &Value, name: &str, default: i64) -> Result<i64, ClientError> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Number(n)) => n
            .as_i64()
            .ok_or_else(|| ClientError::Invalid(format!("`{name}` must be an integer"))),
        Some(Value::String(s)) => s
            .trim()
            .parse()
            .map_err(|_| ClientError::Invalid(format!("`{name}` must be an integer"))),
        Some(_) => Err(ClientError::Invalid(format!("`{name}` must be an integer"))),
    }
}

fn to_i32(v: i64, name: &str) -> Result<i32, ClientError> {
    i32::try_from(v).map_err(|_| ClientError::Invalid(format!("`{name}` is out of range")))
}

/// POST /api/login: checks the account against a broker (a signed GET_BROKER_CONFIG, refused with
/// NO_PERMISSION for an unknown key or a wrong secret when ACL is on) and opens a session.
pub async fn login(console: &Console, req: &Request) -> Response {
    if !console.cli.enable_admin {
        return refuse(
            403,
            "admin actions are disabled: start the console with --enableAdmin",
        );
    }
    let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let (Ok(access_key), Ok(secret_key)) = (field(&body, "accessKey"), field(&body, "secretKey"))
    else {
        return refuse(400, "accessKey and secretKey are required");
    };
    let credentials = Credentials {
        access_key: access_key.to_owned(),
        secret_key: secret_key.to_owned(),
    };
    let check = async {
        let admin = console.admin(Some(credentials.clone()))?;
        let (_, addr) = admin
            .masters(None)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| ClientError::Invalid("no broker master is registered".into()))?;
        api::broker_config(&admin, &addr).await
    };
    if let Err(e) = check.await {
        return error_response(&e);
    }
    match console.sessions.open(credentials) {
        Ok(id) => Response::json(200, &json!({ "loggedIn": true, "accessKey": access_key }))
            .with_header(
                "Set-Cookie",
                format!(
                    "{}={id}; HttpOnly; SameSite=Strict; Path=/",
                    session::COOKIE
                ),
            ),
        Err(e) => refuse(500, &format!("cannot make a session id: {e}")),
    }
}

/// POST /api/logout.
pub fn logout(console: &Console, req: &Request) -> Response {
    if let Some(id) = req.cookie(session::COOKIE) {
        console.sessions.close(id);
    }
    Response::json(200, &json!({ "loggedIn": false })).with_header(
        "Set-Cookie",
        format!("{}=; Max-Age=0; Path=/", session::COOKIE),
    )
}

/// The operator's signing `Admin` for an action, or the refusal.
fn operator(console: &Console, req: &Request) -> Result<Admin, Response> {
    if !console.cli.enable_admin {
        return Err(refuse(
            403,
            "admin actions are disabled: start the console with --enableAdmin",
        ));
    }
    // A JSON content type cannot be sent cross-site without a CORS preflight, which is never granted.
    if !req
        .header("content-type")
        .is_some_and(|t| t.starts_with("application/json"))
    {
        return Err(refuse(415, "admin actions take application/json"));
    }
    let credentials = req
        .cookie(session::COOKIE)
        .and_then(|id| console.sessions.credentials(id))
        .ok_or_else(|| refuse(401, "log in with an ACL account to use admin actions"))?;
    console
        .admin(Some(credentials))
        .map_err(|e| error_response(&e))
}

/// Answers a POST under /api/admin/.
pub async fn act(console: &Console, req: &Request) -> Response {
    let admin = match operator(console, req) {
        Ok(a) => a,
        Err(refusal) => return refusal,
    };
    let body: Value = match serde_json::from_slice(&req.body) {
        Ok(v) => v,
        Err(e) => return refuse(400, &format!("body is not JSON: {e}")),
    };
    let result = match req.path.as_str() {
        "/api/admin/topic" => update_topic(&admin, &body).await,
        "/api/admin/resetOffset" => reset_offset(&admin, &body).await,
        "/api/admin/drain" => write_perm(&admin, &body, false).await,
        "/api/admin/undrain" => write_perm(&admin, &body, true).await,
        other => return refuse(404, &format!("no such action: {other}")),
    };
    match result {
        Ok(v) => {
            tracing::info!("{} by {:?}: {v}", req.path, admin.credentials);
            Response::json(200, &v)
        }
        Err(e) => error_response(&e),
    }
}

async fn update_topic(admin: &Admin, body: &Value) -> Result<Value, ClientError> {
    let topic = field(body, "topic")?;
    let cluster = body
        .get("clusterName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let addrs = admin
        .masters(cluster)
        .await?
        .into_iter()
        .map(|(_, a)| a)
        .collect();
    let spec = topic_cmds::TopicSpec {
        topic,
        read_queues: to_i32(int_field(body, "readQueueNums", 8)?, "readQueueNums")?,
        write_queues: to_i32(int_field(body, "writeQueueNums", 8)?, "writeQueueNums")?,
        perm: to_i32(int_field(body, "perm", 6)?, "perm")?,
        order: false,
        attributes: body.get("attributes").and_then(Value::as_str),
    };
    Ok(topic_cmds::update_topic(admin, addrs, spec).await?.json)
}

async fn reset_offset(admin: &Admin, body: &Value) -> Result<Value, ClientError> {
    let group = field(body, "group")?;
    let topic = field(body, "topic")?;
    let timestamp = match body.get("timestamp") {
        Some(Value::Number(n)) => n
            .as_i64()
            .ok_or_else(|| ClientError::Invalid("`timestamp` must be an integer".into()))?,
        Some(Value::String(s)) => consumer_cmds::parse_timestamp(s, now_ms())?,
        _ => return Err(ClientError::Invalid("`timestamp` is required".into())),
    };
    let spec = stats_cmds::ResetSpec {
        group,
        topic,
        timestamp,
        force: true,
        cplus: false,
    };
    Ok(stats_cmds::reset_offset_by_time(admin, spec).await?.json)
}

/// Drains a broker process (`write` false) or gives its write permission back: its
/// `brokerPermission` through UPDATE_BROKER_CONFIG (admin-only, so the broker's ACL decides), then
/// WIPE/ADD_WRITE_PERM_OF_BROKER of each of its shard-brokers on every name server, as
/// `mqadmin wipeWritePerm` / `addWritePerm` do, so clients stop sending there at their next route
/// refresh.
async fn write_perm(admin: &Admin, body: &Value, write: bool) -> Result<Value, ClientError> {
    let process = field(body, "process")?;
    let rows: Vec<api::BrokerRow> = api::brokers(admin)
        .await?
        .into_iter()
        .filter(|r| r.process == process)
        .collect();
    let master = rows.iter().find(|r| r.broker_id == 0).ok_or_else(|| {
        ClientError::Invalid(format!("no master of broker {process} is registered"))
    })?;
    let perm = if write { "6" } else { "4" };
    let cmd = request(
        request_code::UPDATE_BROKER_CONFIG,
        protocol::ExtFields::new(),
    )
    .with_body(format!("brokerPermission={perm}\n").into_bytes());
    admin.call(&master.addr, cmd).await?;
    let mut names: Vec<&str> = rows.iter().map(|r| r.broker_name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let code = if write {
        request_code::ADD_WRITE_PERM_OF_BROKER
    } else {
        request_code::WIPE_WRITE_PERM_OF_BROKER
    };
    let mut namesrvs = Vec::new();
    for name in names {
        let header = WritePermOfBrokerRequestHeader {
            broker_name: name.to_owned(),
        };
        for (addr, result) in admin
            .call_every_namesrv(&request(code, header.to_ext_fields()))
            .await
        {
            namesrvs.push(json!({
                "brokerName": name, "namesrv": addr.to_string(),
                "result": result.map_or_else(|e| e.to_string(), |()| "success".to_owned()),
            }));
        }
    }
    Ok(json!({
        "process": process, "brokerPermission": perm, "broker": master.addr,
        "namesrvs": namesrvs,
    }))
}
