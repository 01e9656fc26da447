//! `GET /v1/responses/{id}/input_items`: OpenAI's cursor-paged list of the items used
//! to generate a response.

use serde_json::{json, Value};

/// The most items one page holds, and how many unless asked.
const MOST_ITEMS: usize = 100;
const DEFAULT_ITEMS: usize = 20;

/// A query the list refuses: the parameter, and OpenAI's message naming what is accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageError {
    /// The query parameter at fault.
    pub param: &'static str,
    /// What was wrong and what is accepted.
    pub message: String,
}

/// One page of `items` (oldest first) as the query (`limit`, `order`, `after`,
/// `before`) asks: `desc` (newest first) unless `order=asc`, 20 a page unless `limit`
/// (1 to 100) says otherwise.
pub fn input_items_page(items: &[Value], query: &str) -> Result<Value, PageError> {
    let mut limit = DEFAULT_ITEMS;
    let mut descending = true;
    let (mut after, mut before) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "limit" => {
                limit = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=MOST_ITEMS).contains(n))
                    .ok_or_else(|| {
                        bad(
                            "limit",
                            &format!("Invalid 'limit': `{value}`; expected an integer from 1 to {MOST_ITEMS}."),
                        )
                    })?
            }
            "order" => {
                descending = match value {
                    "desc" => true,
                    "asc" => false,
                    other => {
                        return Err(bad(
                            "order",
                            &format!("Invalid 'order': `{other}`; expected 'asc' or 'desc'."),
                        ))
                    }
                }
            }
            "after" => after = Some(value),
            "before" => before = Some(value),
            // `include` and anything else change nothing the mock stores.
            _ => {}
        }
    }
    let mut ordered: Vec<&Value> = items.iter().collect();
    if descending {
        ordered.reverse();
    }
    let position = |cursor: &str, param: &'static str| {
        ordered
            .iter()
            .position(|item| item.get("id").and_then(Value::as_str) == Some(cursor))
            .ok_or_else(|| {
                bad(
                    param,
                    &format!(
                        "Invalid '{param}': no input item with id '{cursor}' in this response."
                    ),
                )
            })
    };
    let start = match after {
        Some(cursor) => position(cursor, "after")? + 1,
        None => 0,
    };
    let end = match before {
        Some(cursor) => position(cursor, "before")?,
        None => ordered.len(),
    };
    let window = ordered.get(start..end.max(start)).unwrap_or_default();
    // With only `before`, the page is the items just before the cursor.
    let data: Vec<&Value> = if before.is_some() && after.is_none() {
        window[window.len().saturating_sub(limit)..].to_vec()
    } else {
        window.iter().take(limit).copied().collect()
    };
    let id_of = |item: Option<&&Value>| item.and_then(|i| i.get("id")).cloned();
    Ok(json!({
        "object": "list",
        "data": data,
        "first_id": id_of(data.first()).unwrap_or(Value::Null),
        "last_id": id_of(data.last()).unwrap_or(Value::Null),
        "has_more": window.len() > data.len(),
    }))
}

fn bad(param: &'static str, message: &str) -> PageError {
    PageError {
        param,
        message: message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(n: usize) -> Vec<Value> {
        (0..n).map(|i| json!({"id": format!("i{i}")})).collect()
    }

    fn ids(list: &Value) -> Vec<&str> {
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn pages_in_either_order_with_cursors() {
        let all = items(5);
        let p = input_items_page(&all, "").unwrap();
        assert_eq!(ids(&p), ["i4", "i3", "i2", "i1", "i0"]);
        assert_eq!(
            (p["first_id"].as_str(), p["last_id"].as_str()),
            (Some("i4"), Some("i0"))
        );
        assert_eq!(p["has_more"], false);
        let p = input_items_page(&all, "order=asc&limit=2").unwrap();
        assert_eq!(ids(&p), ["i0", "i1"]);
        assert_eq!(p["has_more"], true);
        let p = input_items_page(&all, "order=asc&limit=2&after=i1").unwrap();
        assert_eq!(ids(&p), ["i2", "i3"]);
        let p = input_items_page(&all, "order=asc&limit=2&before=i3").unwrap();
        assert_eq!(ids(&p), ["i1", "i2"]);
        assert_eq!(p["has_more"], true);
        let p = input_items_page(&[], "").unwrap();
        assert_eq!(
            (p["first_id"].clone(), p["has_more"].clone()),
            (Value::Null, json!(false))
        );
    }

    #[test]
    fn bad_queries_say_what_is_accepted() {
        let all = items(2);
        for (query, param) in [
            ("limit=0", "limit"),
            ("limit=101", "limit"),
            ("order=up", "order"),
            ("after=zz", "after"),
        ] {
            let e = input_items_page(&all, query).unwrap_err();
            assert_eq!(e.param, param, "{query}");
            assert!(e.message.contains("Invalid"), "{}", e.message);
        }
    }
}
