//! What the broker keeps between calls: tracked captures (cursors) and the pages
//! of `tmux_snapshot` results, in one store.
//!
//! Entries live at least `CAPTURE_TTL_SECONDS` since their last use; the store
//! holds at most `MAX_CAPTURES` entries and `MAX_CAPTURE_BYTES`, evicting the
//! least recently used first. Looking an entry up does not consume it. Dropping a
//! cursor entry releases its process-identity reference.

use crate::capture::CursorEntry;
use crate::limits;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// An immutable `tmux_snapshot` result, served page by page.
#[derive(Debug, Clone)]
pub struct Pages {
    pub records: Vec<Value>,
    /// The fields every page repeats (capture_id, server_identity, entity, coverage).
    pub header: Value,
    pub limit: usize,
}

#[derive(Debug, Clone)]
pub enum Retained {
    Cursor(CursorEntry),
    Pages(Pages),
}

impl Retained {
    fn cost(&self) -> usize {
        match self {
            Retained::Cursor(c) => c.rows.rows.iter().map(String::len).sum::<usize>() + c.pane_id.len() + c.generation.len() + 256,
            Retained::Pages(p) => p.records.iter().map(|r| r.to_string().len()).sum::<usize>() + p.header.to_string().len(),
        }
    }
}

struct Slot {
    entry: Arc<Retained>,
    last_used: Instant,
    cost: usize,
}

pub struct Store {
    slots: Mutex<HashMap<String, Slot>>,
    ttl: Duration,
    max_entries: usize,
    max_bytes: usize,
}

impl Default for Store {
    fn default() -> Self {
        Store::new(Duration::from_secs(limits::CAPTURE_TTL_SECONDS), limits::MAX_CAPTURES as usize, limits::MAX_CAPTURE_BYTES as usize)
    }
}

/// The entry alone is larger than the whole budget.
#[derive(Debug, PartialEq, Eq)]
pub struct TooLarge;

impl Store {
    pub fn new(ttl: Duration, max_entries: usize, max_bytes: usize) -> Self {
        Store { slots: Mutex::new(HashMap::new()), ttl, max_entries, max_bytes }
    }

    pub fn get(&self, key: &str) -> Option<Arc<Retained>> {
        let mut slots = self.slots.lock().unwrap();
        let now = Instant::now();
        slots.retain(|_, s| now.duration_since(s.last_used) < self.ttl);
        let slot = slots.get_mut(key)?;
        slot.last_used = now;
        Some(slot.entry.clone())
    }

    pub fn insert(&self, key: String, entry: Retained) -> Result<(), TooLarge> {
        let cost = entry.cost();
        if cost > self.max_bytes {
            return Err(TooLarge);
        }
        let mut slots = self.slots.lock().unwrap();
        let now = Instant::now();
        slots.retain(|_, s| now.duration_since(s.last_used) < self.ttl);
        let mut used: usize = slots.values().map(|s| s.cost).sum();
        while !slots.is_empty() && (slots.len() >= self.max_entries || used + cost > self.max_bytes) {
            let oldest = slots.iter().min_by_key(|(_, s)| s.last_used).map(|(k, _)| k.clone()).expect("non-empty");
            used -= slots.remove(&oldest).map_or(0, |s| s.cost);
        }
        slots.insert(key, Slot { entry: Arc::new(entry), last_used: now, cost });
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.slots.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pages(n: usize) -> Retained {
        Retained::Pages(Pages { records: (0..n).map(|i| json!({ "i": i })).collect(), header: json!({}), limit: 1 })
    }

    #[test]
    fn least_recently_used_is_evicted_first_and_lookups_do_not_consume() {
        let s = Store::new(Duration::from_secs(60), 2, 1 << 20);
        s.insert("a".into(), pages(1)).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        s.insert("b".into(), pages(1)).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        assert!(s.get("a").is_some()); // a is now more recent than b
        assert!(s.get("a").is_some());
        s.insert("c".into(), pages(1)).unwrap();
        assert!(s.get("b").is_none(), "b was least recently used");
        assert!(s.get("a").is_some() && s.get("c").is_some());
    }

    #[test]
    fn byte_budget_and_ttl() {
        let s = Store::new(Duration::from_millis(30), 100, 200);
        assert_eq!(s.insert("big".into(), pages(100)), Err(TooLarge));
        s.insert("x".into(), pages(2)).unwrap();
        std::thread::sleep(Duration::from_millis(40));
        assert!(s.get("x").is_none(), "expired");
    }
}
