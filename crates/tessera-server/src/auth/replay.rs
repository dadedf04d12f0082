//! The replay store (D2.6): nonces (per key id) and signatures are single-use within the
//! clock window. In memory, sharded, bounded and expiring. Entries are 128-bit digests, so the
//! store holds no request material.
use std::collections::HashMap;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

const SHARDS: usize = 32;

/// Why a request was refused by the replay store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayError {
    /// The nonce or the signature was seen before.
    Replayed,
    /// The store is full of live entries; refusing is safer than forgetting.
    Full,
}

pub struct ReplayStore {
    shards: Vec<Mutex<HashMap<u128, i64>>>,
    per_shard_capacity: usize,
}

fn digest(parts: &[&[u8]]) -> u128 {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u32).to_le_bytes());
        h.update(p);
    }
    let out = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&out[..16]);
    u128::from_le_bytes(b)
}

impl ReplayStore {
    pub fn new(capacity: usize) -> Self {
        ReplayStore {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            per_shard_capacity: capacity.div_ceil(SHARDS).max(16),
        }
    }

    /// Claims the nonce and the signature until `expires_at_ms`. Both must be new; a refused
    /// request claims nothing. A signature is made with one key's secret, so keeping both
    /// entries in the key id's shard is as strict as a global signature set, with one lock.
    pub fn claim(
        &self,
        key_id: &str,
        nonce: &str,
        signature: &str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> Result<(), ReplayError> {
        let n = digest(&[b"n", key_id.as_bytes(), nonce.as_bytes()]);
        let s = digest(&[b"s", signature.as_bytes()]);
        let shard = (digest(&[key_id.as_bytes()]) % SHARDS as u128) as usize;
        let mut map = self.shards[shard].lock().unwrap_or_else(|p| p.into_inner());
        let live = |k: &u128| map.get(k).is_some_and(|exp| *exp > now_ms);
        if live(&n) || live(&s) {
            return Err(ReplayError::Replayed);
        }
        if map.len() + 2 > self.per_shard_capacity {
            map.retain(|_, exp| *exp > now_ms);
            if map.len() + 2 > self.per_shard_capacity {
                return Err(ReplayError::Full);
            }
        }
        map.insert(n, expires_at_ms);
        map.insert(s, expires_at_ms);
        Ok(())
    }

    /// Drops expired entries (run periodically; claims also purge a full shard).
    pub fn purge(&self, now_ms: i64) {
        for shard in &self.shards {
            shard.lock().unwrap_or_else(|p| p.into_inner()).retain(|_, exp| *exp > now_ms);
        }
    }

    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_or_a_signature_is_accepted_once_within_its_life() {
        let r = ReplayStore::new(1000);
        assert_eq!(r.claim("k", "nonce-1", "sig-1", 0, 100), Ok(()));
        assert_eq!(r.claim("k", "nonce-1", "sig-2", 1, 100), Err(ReplayError::Replayed));
        assert_eq!(r.claim("k", "nonce-2", "sig-1", 1, 100), Err(ReplayError::Replayed));
        // The same nonce under another key id is a different nonce.
        assert_eq!(r.claim("other", "nonce-1", "sig-3", 1, 100), Ok(()));
        // A refused claim recorded nothing.
        assert_eq!(r.claim("k", "nonce-3", "sig-2", 1, 100), Ok(()));
        // After expiry the entry is gone.
        assert_eq!(r.claim("k", "nonce-1", "sig-9", 100, 200), Ok(()));
    }

    #[test]
    fn a_full_store_refuses_rather_than_forgets() {
        let r = ReplayStore::new(16 * SHARDS);
        let mut full = false;
        for i in 0..10_000 {
            if r.claim("k", &format!("n{i}"), &format!("s{i}"), 0, 1_000) == Err(ReplayError::Full) {
                full = true;
                break;
            }
        }
        assert!(full);
        r.purge(2_000);
        assert!(r.is_empty());
        assert_eq!(r.claim("k", "n0", "s0", 2_000, 3_000), Ok(()));
    }
}
