//! What a command prints: an aligned text table (RocketMQ's `#Column` headers) by default, or its
//! JSON value with `--json` for scripts.

use serde_json::Value;

/// Rows of text under `#`-prefixed headers, columns padded to their widest cell.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| format!("#{h}")).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        if self.headers.is_empty() && self.rows.is_empty() {
            return String::new();
        }
        let columns = self
            .headers
            .len()
            .max(self.rows.iter().map(Vec::len).max().unwrap_or(0));
        let mut widths = vec![0usize; columns];
        for line in std::iter::once(&self.headers).chain(self.rows.iter()) {
            for (width, cell) in widths.iter_mut().zip(line) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for line in std::iter::once(&self.headers).chain(self.rows.iter()) {
            let mut text = String::new();
            for (i, cell) in line.iter().enumerate() {
                let width = widths.get(i).copied().unwrap_or(0);
                if i + 1 == line.len() {
                    text.push_str(cell);
                } else {
                    text.push_str(&format!("{cell:<width$}  "));
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        }
        out
    }
}

/// A JSON value as a cell or a printed field: strings as they are, absent or null as nothing.
pub fn cell(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A command's result: the table for people and the JSON value for scripts.
#[derive(Debug, Clone)]
pub struct Report {
    pub table: Table,
    /// Text printed after the table (totals, notes).
    pub footer: Vec<String>,
    pub json: Value,
}

impl Report {
    pub fn new(table: Table, json: Value) -> Report {
        Report {
            table,
            footer: Vec::new(),
            json,
        }
    }

    /// A result printed as plain lines (RocketMQ's "... success" messages, `key=value` lists).
    pub fn lines(lines: Vec<String>, json: Value) -> Report {
        Report {
            table: Table::default(),
            footer: lines,
            json,
        }
    }

    pub fn with_footer(mut self, line: String) -> Report {
        self.footer.push(line);
        self
    }

    pub fn with_footers(mut self, lines: impl IntoIterator<Item = String>) -> Report {
        self.footer.extend(lines);
        self
    }

    pub fn render(&self, json: bool) -> String {
        if json {
            let mut text =
                serde_json::to_string_pretty(&self.json).unwrap_or_else(|_| "null".into());
            text.push('\n');
            return text;
        }
        let mut text = self.table.render();
        for line in &self.footer {
            text.push_str(line);
            text.push('\n');
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_to_the_widest_cell() {
        let mut t = Table::new(&["Broker", "QID"]);
        t.row(vec!["broker-a".into(), "0".into()]);
        t.row(vec!["b".into(), "12".into()]);
        assert_eq!(t.render(), "#Broker   #QID\nbroker-a  0\nb         12\n");
        let r = Report::new(t, serde_json::json!({"a": 1})).with_footer("Diff Total: 3".into());
        assert!(r.render(false).ends_with("Diff Total: 3\n"));
        assert_eq!(r.render(true), "{\n  \"a\": 1\n}\n");
        let lines = Report::lines(vec!["done".into()], serde_json::json!(null));
        assert_eq!(lines.render(false), "done\n");
    }
}
