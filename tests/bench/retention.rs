//! `scripts/bench --retention`: what a lookup and an evicting insert cost in the
//! retention store as it fills (100 to 100,000 entries of one agent), against
//! the scanning LRU it replaced (issue 18, item 5), side by side in one run.
//! Prints figures and ratios; asserts nothing.
//!
//! The reference below is the old algorithm, kept here only to be measured:
//! each lookup swept every entry for the TTL, each eviction scanned every
//! entry for the agent's oldest.

use serde_json::json;
use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};
use tmux_mcp_engine::retention::{Budget, Owner, Pages, Retained, Store, View};

const TTL: Duration = Duration::from_secs(600);

fn entry() -> Retained {
    Retained::Pages(Pages::new(&[json!({ "i": 1 })], json!({}), 1))
}

fn budget(entries: usize) -> Budget {
    Budget {
        ttl: TTL,
        entries,
        bytes: 1 << 40,
        total_entries: 1 << 30,
        total_bytes: 1 << 40,
        handoffs: 2,
    }
}

/// The scanning LRU: `HashMap` of last uses, a full sweep per operation.
#[derive(Default)]
struct Scanning {
    map: HashMap<String, Instant>,
}

impl Scanning {
    fn expire(&mut self, now: Instant) {
        let old: Vec<String> = self
            .map
            .iter()
            .filter(|(_, t)| now.duration_since(**t) >= TTL)
            .map(|(k, _)| k.clone())
            .collect();
        for k in old {
            self.map.remove(&k);
        }
    }

    fn get(&mut self, key: &str) -> bool {
        let now = Instant::now();
        self.expire(now);
        match self.map.get_mut(key) {
            Some(t) => {
                *t = now;
                true
            }
            None => false,
        }
    }

    fn insert(&mut self, key: String, cap: usize) {
        let now = Instant::now();
        self.expire(now);
        while self.map.len() >= cap {
            let oldest = self
                .map
                .iter()
                .min_by_key(|(_, t)| **t)
                .map(|(k, _)| k.clone())
                .expect("a full map has an oldest entry");
            self.map.remove(&oldest);
        }
        self.map.insert(key, now);
    }
}

/// Nanoseconds per call of `f`, over `n` calls.
fn per_call(n: usize, mut f: impl FnMut(usize)) -> f64 {
    let start = Instant::now();
    for i in 0..n {
        f(i);
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let owner = Owner {
        agent: Some(1),
        view: View::Server,
    };
    println!("retention store: one agent, budget = entries held; ns per call");
    println!(
        "{:>8} | {:>12} {:>12} {:>7} | {:>12} {:>12} {:>7}",
        "entries", "get: store", "scanning", "ratio", "insert: store", "scanning", "ratio"
    );
    for n in [100usize, 1_000, 10_000, 100_000] {
        let store = Store::new(budget(n));
        let mut scanning = Scanning::default();
        for i in 0..n {
            store
                .insert(format!("k{i}"), entry(), owner.clone())
                .expect("fits");
            scanning.insert(format!("k{i}"), n);
        }
        // The scanning reference is O(n) per call: fewer calls at large n.
        let calls = (2_000_000 / n).clamp(200, 100_000);
        let mut x = 0x9e37_79b9_u64;
        let mut pick = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x as usize) % n
        };
        let get_store = per_call(calls, |_| {
            black_box(store.get(&format!("k{}", pick()), &View::Server));
        });
        let get_scan = per_call(calls, |_| {
            black_box(scanning.get(&format!("k{}", pick())));
        });
        // Inserts beyond the budget: each evicts the least recently used.
        let ins_store = per_call(calls, |i| {
            store
                .insert(format!("new{i}"), entry(), owner.clone())
                .expect("fits");
        });
        let ins_scan = per_call(calls, |i| scanning.insert(format!("new{i}"), n));
        println!(
            "{n:>8} | {get_store:>12.0} {get_scan:>12.0} {:>6.1}x | {ins_store:>12.0} {ins_scan:>12.0} {:>6.1}x",
            get_scan / get_store,
            ins_scan / ins_store
        );
    }
}
