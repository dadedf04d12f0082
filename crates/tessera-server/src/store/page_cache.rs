//! Rendered list pages kept while the database has not changed (SQLite files only).
//!
//! A list page is a function of the rows it reads. SQLite's `PRAGMA data_version`, asked on one
//! connection that never writes, changes whenever any other connection (this server's writer,
//! or an operator CLI in another process) commits. A page rendered after reading version `v`
//! reflects at least every commit before `v` was read; if the version is still `v` when the same
//! page is asked again, nothing was committed since, and the rendered bytes are exactly what a
//! fresh read would render. Any commit, to any table, makes every cached page miss: the cache
//! is exact, never stale, and only helps reads between writes (a storefront's steady state).
//! PostgreSQL has no such cheap, cross-process signal, so nothing is cached there.
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Entries kept at most; when full the cache starts over rather than grow.
const CAPACITY: usize = 4096;

/// A rendered page: the `data` JSON, and the page, limit and total of its pagination.
pub struct Rendered {
    pub data_json: Vec<u8>,
    pub page: u32,
    pub limit: u32,
    pub total: u64,
}

#[derive(Default)]
pub struct PageCache {
    pages: RwLock<HashMap<String, (i64, Arc<Rendered>)>>,
}

impl std::fmt::Debug for PageCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PageCache")
    }
}

impl PageCache {
    /// The page under `key` if it was rendered at database version `version`.
    pub fn get(&self, key: &str, version: i64) -> Option<Arc<Rendered>> {
        let pages = self.pages.read().unwrap_or_else(|p| p.into_inner());
        pages.get(key).filter(|(v, _)| *v == version).map(|(_, r)| r.clone())
    }

    /// Keeps a page rendered from a read that started at database version `version`.
    pub fn put(&self, key: String, version: i64, page: Arc<Rendered>) {
        let mut pages = self.pages.write().unwrap_or_else(|p| p.into_inner());
        if pages.len() >= CAPACITY && !pages.contains_key(&key) {
            pages.clear();
        }
        pages.insert(key, (version, page));
    }
}
