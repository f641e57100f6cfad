//! What the broker keeps between calls: tracked captures (cursors) and the pages
//! of `tmux_snapshot` results, in one store.
//!
//! Every entry records its [`Owner`]: the agent whose budget it counts against
//! and the view (scope) of the agent that made it. A reader gets an entry only
//! when its own view covers the owner's, so a cursor or page cannot carry
//! records across scopes. The one exception is the hand-off cursor of the key
//! binding (and the chain continued from it): a person handed that one pane
//! over, and a cursor only ever reads that pane.
//!
//! Budgets are floors per agent (docs/spec.md Decision 6, issue "cursor loss
//! under many agents"): each agent keeps its entries for at least
//! `CAPTURE_TTL_SECONDS` since their last use, up to `MAX_CAPTURES` entries
//! and `MAX_CAPTURE_BYTES`; inserting beyond that evicts the agent's *own*
//! least recently used entries, never another agent's. Hand-off cursors are
//! pinned: only their TTL ends them. A broker-wide ceiling
//! (`MAX_TOTAL_RETAINED_*`) bounds memory when very many agents are full at
//! once; only then is the least recently used entry of the agent holding the
//! most bytes evicted.
//!
//! Sizes are what the entry really holds on the heap (string capacities plus
//! per-allocation overhead), not the length of its JSON text: snapshot records
//! are kept as compact JSON strings rather than `serde_json::Value` trees,
//! which cost about nine times their text. Records are shared: a snapshot's
//! record whose text equals one of the previous snapshot's points at the same
//! text ([`Store::pages`]), so 120 snapshots of an unchanged server hold one
//! copy of the records, not 120. Each entry still counts the shared text as
//! its own, so the budgets stay an upper bound of what is held.

use crate::capture::{CursorEntry, SinceEntry};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tmux_mcp_core::limits;

/// What a reader may see: the whole server, or the panes placed in some sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum View {
    Server,
    Sessions(BTreeSet<String>),
    /// A hand-off chain: readable by every agent of this broker.
    Anyone,
}

impl View {
    /// Whether a reader with this view may read what was made under `made`.
    pub fn covers(&self, made: &View) -> bool {
        match (self, made) {
            (_, View::Anyone) | (View::Server, _) => true,
            (View::Sessions(mine), View::Sessions(theirs)) => theirs.is_subset(mine),
            _ => false,
        }
    }
}

/// Who made an entry: whose budget it counts against, and under which view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// The agent session; `None` for the key binding's hand-off cursor (pinned).
    pub agent: Option<u64>,
    pub view: View,
}

/// An immutable `tmux_snapshot` result, served page by page.
#[derive(Debug, Clone)]
pub struct Pages {
    /// Each record as compact JSON text, possibly shared with other entries.
    pub records: Vec<Arc<str>>,
    /// The fields every page repeats (capture_id, server_identity, entity, coverage).
    pub header: Value,
    pub limit: usize,
}

impl Pages {
    pub fn new(records: &[Value], header: Value, limit: usize) -> Pages {
        Pages {
            records: records.iter().map(|r| Arc::from(r.to_string())).collect(),
            header,
            limit,
        }
    }

    /// Records `[start, end)` as JSON values again.
    pub fn slice(&self, start: usize, end: usize) -> Vec<Value> {
        self.records[start..end]
            .iter()
            .map(|r| serde_json::from_str(r).expect("retained records are JSON we wrote"))
            .collect()
    }
}

#[derive(Debug, Clone)]
pub enum Retained {
    Cursor(CursorEntry),
    Pages(Pages),
    /// A `capture_since` cursor (a few row hashes, no rows).
    Since(SinceEntry),
}

/// Bookkeeping of one heap allocation (glibc's chunk header and rounding).
const ALLOC_OVERHEAD: usize = 16;

fn string_heap(capacity: usize) -> usize {
    if capacity == 0 {
        0
    } else {
        capacity + ALLOC_OVERHEAD
    }
}

impl Retained {
    /// Heap bytes this entry holds, approximately but never below its text.
    pub fn cost(&self) -> usize {
        let fixed = std::mem::size_of::<Slot>() + 256;
        match self {
            Retained::Cursor(c) => {
                let rows: usize = c
                    .rows
                    .rows
                    .iter()
                    .map(|r| std::mem::size_of::<String>() + string_heap(r.capacity()))
                    .sum();
                fixed
                    + rows
                    + string_heap(c.rows.rows.capacity() * std::mem::size_of::<String>())
                    + c.pane_id.capacity()
                    + c.generation.capacity()
            }
            Retained::Since(c) => {
                fixed
                    + string_heap(8 * (c.window.capacity() + c.pending.capacity()))
                    + c.pane_id.capacity()
                    + c.process_generation.as_ref().map_or(0, String::capacity)
            }
            Retained::Pages(p) => {
                // The text plus the Arc's two counters, shared or not.
                let records: usize = p
                    .records
                    .iter()
                    .map(|r| std::mem::size_of::<Arc<str>>() + string_heap(r.len() + 16))
                    .sum();
                // A small Value tree: about nine times its JSON text.
                fixed + records + 9 * p.header.to_string().len()
            }
        }
    }
}

struct Slot {
    entry: Arc<Retained>,
    owner: Owner,
    last_used: Instant,
    cost: usize,
    /// Its place in the recency orders: larger is more recent.
    tick: u64,
}

/// How much one agent (or the hand-off pool) holds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub entries: usize,
    pub bytes: usize,
}

#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub ttl: Duration,
    /// Per agent.
    pub entries: usize,
    /// Per agent.
    pub bytes: usize,
    /// Broker-wide ceiling.
    pub total_entries: usize,
    /// Broker-wide ceiling.
    pub total_bytes: usize,
    /// Pinned hand-off cursors kept at most (the oldest goes first beyond).
    pub handoffs: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            ttl: Duration::from_secs(limits::CAPTURE_TTL_SECONDS),
            entries: limits::MAX_CAPTURES as usize,
            bytes: limits::MAX_CAPTURE_BYTES as usize,
            total_entries: limits::MAX_TOTAL_RETAINED_ENTRIES as usize,
            total_bytes: limits::MAX_TOTAL_RETAINED_BYTES as usize,
            handoffs: limits::MAX_HANDOFF_CURSORS as usize,
        }
    }
}

/// The entries with their recency orders. Every operation costs O(log n) in
/// the entries held, whatever their number: the TTL sweep pops the oldest
/// entries from the front of one order, eviction takes the front of the
/// agent's own, and a use moves one key in both; nothing scans the store.
#[derive(Default)]
struct Slots {
    map: HashMap<String, Slot>,
    /// Every key by its last use, oldest first. Ticks are handed out under
    /// the store's lock from a monotonic clock, so this is also `last_used`
    /// order.
    recency: BTreeMap<u64, String>,
    /// Each agent's keys (`None`: the hand-off pool) by last use, oldest first.
    by_agent: HashMap<Option<u64>, BTreeMap<u64, String>>,
    usage: HashMap<Option<u64>, Usage>,
    total: Usage,
    next_tick: u64,
}

impl Slots {
    fn tick(&mut self) -> u64 {
        self.next_tick += 1;
        self.next_tick
    }

    /// Takes `tick` of `agent`'s key out of both orders.
    fn unorder(&mut self, agent: Option<u64>, tick: u64) {
        self.recency.remove(&tick);
        if let Some(order) = self.by_agent.get_mut(&agent) {
            order.remove(&tick);
            if order.is_empty() {
                self.by_agent.remove(&agent);
            }
        }
    }

    fn order(&mut self, agent: Option<u64>, tick: u64, key: &str) {
        self.recency.insert(tick, key.to_string());
        self.by_agent
            .entry(agent)
            .or_default()
            .insert(tick, key.to_string());
    }

    fn remove(&mut self, key: &str) -> Option<Slot> {
        let slot = self.map.remove(key)?;
        self.unorder(slot.owner.agent, slot.tick);
        let u = self.usage.entry(slot.owner.agent).or_default();
        u.entries -= 1;
        u.bytes -= slot.cost;
        if u.entries == 0 {
            self.usage.remove(&slot.owner.agent);
        }
        self.total.entries -= 1;
        self.total.bytes -= slot.cost;
        Some(slot)
    }

    fn add(&mut self, key: String, mut slot: Slot) {
        // Keys are random 128-bit values; a collision replaces the entry.
        self.remove(&key);
        slot.tick = self.tick();
        self.order(slot.owner.agent, slot.tick, &key);
        let u = self.usage.entry(slot.owner.agent).or_default();
        u.entries += 1;
        u.bytes += slot.cost;
        self.total.entries += 1;
        self.total.bytes += slot.cost;
        self.map.insert(key, slot);
    }

    /// Marks `key` used at `now`: the most recent entry, in both orders.
    fn touch(&mut self, key: &str, now: Instant) {
        let tick = self.tick();
        let Some(slot) = self.map.get_mut(key) else {
            return;
        };
        let (agent, old) = (slot.owner.agent, slot.tick);
        slot.last_used = now;
        slot.tick = tick;
        self.unorder(agent, old);
        self.order(agent, tick, key);
    }

    /// The least recently used entry of `agent`.
    fn oldest_of(&self, agent: Option<u64>) -> Option<String> {
        self.by_agent
            .get(&agent)?
            .first_key_value()
            .map(|(_, k)| k.clone())
    }

    /// Drops the entries unused for `ttl`: the oldest first, stopping at the
    /// first one still live.
    fn expire(&mut self, now: Instant, ttl: Duration) {
        while let Some((_, key)) = self.recency.first_key_value() {
            let expired = self
                .map
                .get(key)
                .is_none_or(|s| now.duration_since(s.last_used) >= ttl);
            if !expired {
                break;
            }
            let key = key.clone();
            if self.remove(&key).is_none() {
                // Not in the map: an order out of step; drop the stray key.
                if let Some((&tick, _)) = self.recency.first_key_value() {
                    self.recency.remove(&tick);
                }
            }
        }
    }
}

pub struct Store {
    slots: Mutex<Slots>,
    budget: Budget,
    /// The records of the last [`Pages`] made, for the next one to share.
    /// Never served from here: only text equal to a new record's is taken.
    last_records: Mutex<HashSet<Arc<str>>>,
}

impl Default for Store {
    fn default() -> Self {
        Store::new(Budget::default())
    }
}

/// The entry alone is larger than an agent's whole budget.
#[derive(Debug, PartialEq, Eq)]
pub struct TooLarge;

impl Store {
    pub fn new(budget: Budget) -> Self {
        Store {
            slots: Mutex::new(Slots::default()),
            budget,
            last_records: Mutex::default(),
        }
    }

    /// A `tmux_snapshot` result to retain, sharing the text of every record
    /// equal to one of the previous result's (listings of a server repeat
    /// almost every record).
    pub fn pages(&self, records: &[Value], header: Value, limit: usize) -> Pages {
        let mut last = self.last_records.lock().unwrap();
        let texts: Vec<Arc<str>> = records
            .iter()
            .map(|r| {
                let text = r.to_string();
                last.get(text.as_str())
                    .cloned()
                    .unwrap_or_else(|| Arc::from(text))
            })
            .collect();
        *last = texts.iter().cloned().collect();
        Pages {
            records: texts,
            header,
            limit,
        }
    }

    /// The entry under `key`, if it is live and `reader` may read it. An entry
    /// the reader may not read is answered exactly like a missing one.
    pub fn get(&self, key: &str, reader: &View) -> Option<Arc<Retained>> {
        let mut slots = self.slots.lock().unwrap();
        let now = Instant::now();
        slots.expire(now, self.budget.ttl);
        let slot = slots.map.get(key)?;
        if !reader.covers(&slot.owner.view) {
            return None;
        }
        let entry = slot.entry.clone();
        slots.touch(key, now);
        Some(entry)
    }

    pub fn insert(&self, key: String, entry: Retained, owner: Owner) -> Result<(), TooLarge> {
        let cost = entry.cost();
        if cost > self.budget.bytes {
            return Err(TooLarge);
        }
        let freed = {
            let mut slots = self.slots.lock().unwrap();
            let now = Instant::now();
            let before = slots.total.bytes;
            slots.expire(now, self.budget.ttl);
            let agent = owner.agent;
            // The agent's own floors (the hand-off pool has a count cap only).
            loop {
                let u = slots.usage.get(&agent).copied().unwrap_or_default();
                let over = match agent {
                    Some(_) => {
                        u.entries >= self.budget.entries || u.bytes + cost > self.budget.bytes
                    }
                    None => u.entries >= self.budget.handoffs,
                };
                match slots.oldest_of(agent).filter(|_| over) {
                    Some(k) => {
                        slots.remove(&k);
                    }
                    None => break,
                }
            }
            // The broker-wide ceiling: take from whoever holds the most.
            while slots.total.entries >= self.budget.total_entries
                || slots.total.bytes + cost > self.budget.total_bytes
            {
                let Some(biggest) = slots
                    .usage
                    .iter()
                    .filter(|(a, _)| a.is_some())
                    .max_by_key(|(_, u)| u.bytes)
                    .map(|(a, _)| *a)
                else {
                    break;
                };
                match slots.oldest_of(biggest) {
                    Some(k) => {
                        slots.remove(&k);
                    }
                    None => break,
                }
            }
            slots.add(
                key,
                Slot {
                    entry: Arc::new(entry),
                    owner,
                    last_used: now,
                    cost,
                    tick: 0,
                },
            );
            before.saturating_sub(slots.total.bytes - cost)
        };
        if freed >= 1 << 20 {
            tmux_mcp_core::platform::release_free_memory();
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.slots.lock().unwrap().total.entries
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries and bytes held in all (for `status`).
    pub fn usage(&self) -> Usage {
        self.slots.lock().unwrap().total
    }

    /// What one agent holds (`None`: the hand-off pool).
    pub fn usage_of(&self, agent: Option<u64>) -> Usage {
        self.slots
            .lock()
            .unwrap()
            .usage
            .get(&agent)
            .copied()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pages(n: usize) -> Retained {
        let records: Vec<Value> = (0..n).map(|i| json!({ "i": i })).collect();
        Retained::Pages(Pages::new(&records, json!({}), 1))
    }

    fn agent(id: u64) -> Owner {
        Owner {
            agent: Some(id),
            view: View::Server,
        }
    }

    fn budget(entries: usize, bytes: usize) -> Budget {
        Budget {
            ttl: Duration::from_secs(60),
            entries,
            bytes,
            total_entries: 1 << 20,
            total_bytes: 1 << 40,
            handoffs: 2,
        }
    }

    #[test]
    fn least_recently_used_is_evicted_first_and_lookups_do_not_consume() {
        let s = Store::new(budget(2, 1 << 20));
        s.insert("a".into(), pages(1), agent(1)).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        s.insert("b".into(), pages(1), agent(1)).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        assert!(s.get("a", &View::Server).is_some()); // a is now more recent than b
        assert!(s.get("a", &View::Server).is_some());
        s.insert("c".into(), pages(1), agent(1)).unwrap();
        assert!(
            s.get("b", &View::Server).is_none(),
            "b was least recently used"
        );
        assert!(s.get("a", &View::Server).is_some() && s.get("c", &View::Server).is_some());
    }

    /// The recency orders against a plain model: 2,000 inserts and lookups by
    /// three agents (budget four entries each) keep exactly the entries the
    /// model's least-recently-used rule keeps, and the orders stay in step.
    #[test]
    fn recency_orders_match_a_plain_lru_model() {
        let s = Store::new(budget(4, 1 << 30));
        let mut model: Vec<Vec<String>> = vec![Vec::new(); 3]; // oldest first
        let mut seed = 0x2545_f491_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for i in 0..2000 {
            let a = (next() % 3) as usize;
            if next() % 2 == 0 || model[a].is_empty() {
                let key = format!("k{i}");
                s.insert(key.clone(), pages(1), agent(a as u64)).unwrap();
                if model[a].len() == 4 {
                    model[a].remove(0);
                }
                model[a].push(key);
            } else {
                let at = (next() as usize) % model[a].len();
                let key = model[a].remove(at);
                assert!(s.get(&key, &View::Server).is_some(), "{key} is held");
                model[a].push(key);
            }
            if i % 100 == 0 {
                let slots = s.slots.lock().unwrap();
                assert_eq!(slots.recency.len(), slots.map.len());
                let by_agent: usize = slots.by_agent.values().map(BTreeMap::len).sum();
                assert_eq!(by_agent, slots.map.len());
            }
        }
        for (a, keys) in model.iter().enumerate() {
            let slots = s.slots.lock().unwrap();
            let held: Vec<&String> = slots.by_agent[&Some(a as u64)].values().collect();
            assert_eq!(
                held,
                keys.iter().collect::<Vec<_>>(),
                "agent {a}, oldest first"
            );
        }
    }

    #[test]
    fn byte_budget_and_ttl() {
        let s = Store::new(Budget {
            ttl: Duration::from_millis(30),
            ..budget(100, 2000)
        });
        assert_eq!(s.insert("big".into(), pages(100), agent(1)), Err(TooLarge));
        s.insert("x".into(), pages(2), agent(1)).unwrap();
        std::thread::sleep(Duration::from_millis(40));
        assert!(s.get("x", &View::Server).is_none(), "expired");
        assert_eq!(s.usage(), Usage::default(), "expiry gives the bytes back");
    }

    #[test]
    fn floors_are_per_agent_a_busy_agent_evicts_only_its_own() {
        let s = Store::new(budget(4, 1 << 20));
        s.insert("quiet".into(), pages(1), agent(1)).unwrap();
        for i in 0..100 {
            s.insert(format!("busy{i}"), pages(1), agent(2)).unwrap();
        }
        assert!(
            s.get("quiet", &View::Server).is_some(),
            "another agent's churn evicted a quiet agent's cursor"
        );
        assert_eq!(s.usage_of(Some(2)).entries, 4);
        assert_eq!(s.usage_of(Some(1)).entries, 1);
    }

    #[test]
    fn handoff_cursors_are_pinned_against_agent_churn() {
        let s = Store::new(Budget {
            total_entries: 5,
            ..budget(4, 1 << 20)
        });
        s.insert(
            "handed".into(),
            pages(1),
            Owner {
                agent: None,
                view: View::Anyone,
            },
        )
        .unwrap();
        for a in 1..20 {
            s.insert(format!("x{a}"), pages(1), agent(a)).unwrap();
        }
        assert!(
            s.get("handed", &View::Sessions(BTreeSet::new())).is_some(),
            "a hand-off cursor was evicted by other agents' entries"
        );
        assert!(s.len() <= 5, "the broker-wide ceiling holds: {}", s.len());
    }

    #[test]
    fn readers_get_only_what_their_view_covers() {
        let s = Store::new(budget(10, 1 << 20));
        let alpha: BTreeSet<String> = ["$1".to_string()].into();
        let both: BTreeSet<String> = ["$1".to_string(), "$2".to_string()].into();
        s.insert(
            "server".into(),
            pages(1),
            Owner {
                agent: Some(1),
                view: View::Server,
            },
        )
        .unwrap();
        s.insert(
            "alpha".into(),
            pages(1),
            Owner {
                agent: Some(2),
                view: View::Sessions(alpha.clone()),
            },
        )
        .unwrap();
        assert!(
            s.get("server", &View::Sessions(both.clone())).is_none(),
            "a session-scoped reader read a server-scoped page"
        );
        assert!(s.get("alpha", &View::Sessions(alpha)).is_some());
        assert!(
            s.get("alpha", &View::Sessions(both)).is_some(),
            "a wider view covers a narrower one"
        );
        assert!(s.get("alpha", &View::Server).is_some());
    }

    #[test]
    fn equal_records_are_shared_between_results() {
        let s = Store::default();
        let records = |title: &str| -> Vec<Value> {
            (0..3).map(|i| json!({ "id": format!("%{i}"), "title": if i == 1 { title } else { "same" } })).collect()
        };
        let a = s.pages(&records("one"), json!({}), 1);
        let b = s.pages(&records("two"), json!({}), 1);
        assert!(
            Arc::ptr_eq(&a.records[0], &b.records[0]) && Arc::ptr_eq(&a.records[2], &b.records[2]),
            "unchanged records share their text"
        );
        assert!(!Arc::ptr_eq(&a.records[1], &b.records[1]));
        assert_eq!(
            (&*a.records[1], &*b.records[1]),
            (
                r#"{"id":"%1","title":"one"}"#,
                r#"{"id":"%1","title":"two"}"#
            )
        );
        assert_eq!(
            b.slice(0, 3),
            records("two"),
            "each result reads back exactly as made"
        );
        let ca = Retained::Pages(a).cost();
        assert_eq!(
            ca,
            Retained::Pages(Pages::new(&records("one"), json!({}), 1)).cost(),
            "a shared record is still counted in full"
        );
    }

    #[test]
    fn cost_counts_heap_not_json_text() {
        let records: Vec<Value> = (0..1000)
            .map(|i| json!({ "id": format!("%{i}"), "title": "x".repeat(50) }))
            .collect();
        let text: usize = records.iter().map(|r| r.to_string().len()).sum();
        let cost = Retained::Pages(Pages::new(&records, json!({}), 50)).cost();
        assert!(
            cost > text,
            "cost {cost} is below the text it holds ({text})"
        );
        assert!(
            cost < 2 * text + 4096,
            "compact records should cost about their text: {cost} vs {text}"
        );
    }
}
