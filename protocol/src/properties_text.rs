//! Java properties text, as RocketMQ carries configs in GET/UPDATE_BROKER_CONFIG and
//! GET/UPDATE_NAMESRV_CONFIG bodies and in `broker.properties`: `key=value` or `key: value` lines,
//! `#`/`!` comments, a trailing `\` continuing a line. (Unicode escapes are not decoded.)

/// The key-value pairs in order; a later duplicate is kept after the earlier one.
pub fn parse(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for raw in text.lines() {
        let line = raw.trim_start();
        if pending.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!'))
        {
            continue;
        }
        if let Some(stripped) = line.strip_suffix('\\') {
            pending.push_str(stripped);
            continue;
        }
        pending.push_str(line);
        let entry = std::mem::take(&mut pending);
        let (key, value) = entry.split_once(['=', ':']).unwrap_or((entry.as_str(), ""));
        let key = key.trim();
        if !key.is_empty() {
            out.push((key.to_owned(), value.trim().to_owned()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_separators_and_continuations() {
        let pairs = parse(
            "# c\nbrokerName=broker-a\n\n! x\nnamesrvAddr = a:1;b:2\nk: v\nlong=a\\\n  b\nflag\n",
        );
        assert_eq!(
            pairs,
            vec![
                ("brokerName".into(), "broker-a".into()),
                ("namesrvAddr".into(), "a:1;b:2".into()),
                ("k".into(), "v".into()),
                ("long".into(), "ab".into()),
                ("flag".into(), String::new()),
            ]
        );
    }
}
