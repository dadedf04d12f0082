//! Rendered QR images by notification id, kept across retries and bounded (64 MiB; the oldest
//! entry goes first). Lost on restart: the next attempt then renders once again.
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use crate::domain::notifications::Inline;

const MAX_BYTES: usize = 64 * 1024 * 1024;

#[derive(Default)]
struct Cache {
    entries: HashMap<String, Arc<Vec<Inline>>>,
    order: VecDeque<String>,
    bytes: usize,
}

fn size(v: &[Inline]) -> usize {
    v.iter().map(|i| i.png.len() + i.content_id.len()).sum()
}

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

pub fn get(id: &str) -> Option<Arc<Vec<Inline>>> {
    cache().lock().ok()?.entries.get(id).cloned()
}

pub fn put(id: &str, v: Arc<Vec<Inline>>) {
    let Ok(mut c) = cache().lock() else { return };
    let add = size(&v);
    if add > MAX_BYTES {
        return;
    }
    if let Some(old) = c.entries.remove(id) {
        c.bytes -= size(&old);
        c.order.retain(|k| k != id);
    }
    while c.bytes + add > MAX_BYTES {
        let Some(k) = c.order.pop_front() else { break };
        if let Some(old) = c.entries.remove(&k) {
            c.bytes -= size(&old);
        }
    }
    c.bytes += add;
    c.order.push_back(id.to_string());
    c.entries.insert(id.to_string(), v);
}

pub fn remove(id: &str) {
    let Ok(mut c) = cache().lock() else { return };
    if let Some(old) = c.entries.remove(id) {
        c.bytes -= size(&old);
        c.order.retain(|k| k != id);
    }
}
