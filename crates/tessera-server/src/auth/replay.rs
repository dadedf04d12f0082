//! The replay store (D2.6): nonces (per key id) and signatures are single-use within the
//! clock window. In memory, sharded, bounded and expiring. Entries are 128 bits: for a
//! signature, the first half of its verified HMAC (uniform, and only the key's holder can make
//! one); for a nonce, two keyed SipHash-1-3 digests of the key id and the nonce under secret
//! keys drawn at start (a client cannot aim its nonces at one bucket or at another's entry).
//! The store holds no request material.
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

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
    shards: Vec<Mutex<Shard>>,
    /// Two independently keyed SipHash-1-3 states for the nonce entries (64 bits each).
    nonce_keys: (RandomState, RandomState),
    per_shard_capacity: usize,
    last_full_warning_ms: AtomicI64,
}

#[derive(Default)]
struct Shard {
    entries: HashMap<Entry, i64, DigestHash>,
    last_purge_ms: i64,
}

/// A 128-bit entry as two words, so that an entry and its expiry take 24 bytes in the table
/// (a `u128` is 16-aligned and made them 32): a quarter less memory to touch and to grow.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Entry {
    low: u64,
    high: u64,
}

impl Entry {
    fn shard(&self) -> usize {
        (self.low % SHARDS as u64) as usize
    }
}

impl std::hash::Hash for Entry {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // The shard index uses the low word; the table takes the high one.
        state.write_u64(self.high);
    }
}

/// Entries are already uniform (HMAC outputs and keyed digests, see the module's text), so the
/// map uses their own bits instead of hashing them again.
#[derive(Default, Clone, Copy)]
struct DigestHash;

impl std::hash::BuildHasher for DigestHash {
    type Hasher = DigestHasher;
    fn build_hasher(&self) -> DigestHasher {
        DigestHasher(0)
    }
}

struct DigestHasher(u64);

impl std::hash::Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not reached for entries (write_u64 below); fold anything else in.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// The entry of a verified signature: the first 128 bits of its MAC.
fn signature_entry(mac: &[u8; 32]) -> Entry {
    let word = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&mac[i..i + 8]);
        u64::from_le_bytes(b)
    };
    Entry { low: word(0), high: word(8) }
}

impl ReplayStore {
    pub fn new(capacity: usize) -> Self {
        ReplayStore {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            nonce_keys: (RandomState::new(), RandomState::new()),
            per_shard_capacity: capacity.div_ceil(SHARDS).max(16),
            last_full_warning_ms: AtomicI64::new(0),
        }
    }

    /// Records `entry` until `expires_at_ms` unless it is already live. Entries are spread over
    /// the shards by their digest, so one busy key can use the whole capacity.
    fn claim_one(&self, entry: Entry, now_ms: i64, expires_at_ms: i64) -> Result<(), ReplayError> {
        use std::collections::hash_map::Entry;
        let mut shard = self.shards[entry.shard()].lock().unwrap_or_else(|p| p.into_inner());
        let shard = &mut *shard;
        if shard.entries.len() >= self.per_shard_capacity {
            // Purging is a scan of the shard: at most once a second, so that a full store costs
            // refused requests little.
            if now_ms - shard.last_purge_ms >= 1000 {
                shard.entries.retain(|_, exp| *exp > now_ms);
                shard.last_purge_ms = now_ms;
            }
            if shard.entries.len() >= self.per_shard_capacity {
                // A live entry is still a replay; anything else cannot be recorded.
                return Err(if shard.entries.get(&entry).is_some_and(|exp| *exp > now_ms) {
                    ReplayError::Replayed
                } else {
                    ReplayError::Full
                });
            }
        }
        // One probe of the table for the check and the insert.
        match shard.entries.entry(entry) {
            Entry::Occupied(o) if *o.get() > now_ms => Err(ReplayError::Replayed),
            Entry::Occupied(mut o) => {
                o.insert(expires_at_ms);
                Ok(())
            }
            Entry::Vacant(v) => {
                v.insert(expires_at_ms);
                Ok(())
            }
        }
    }

    /// Claims the signature (by its verified MAC) and the nonce (per key id) until
    /// `expires_at_ms`. A request is accepted only if it claims both; each claim is atomic, so of
    /// any requests sharing a signature or a nonce exactly one gets through. A request refused on
    /// its nonce keeps its signature claimed, which is harmless: the same signature is the same
    /// request.
    pub fn claim(
        &self,
        key_id: &str,
        nonce: &str,
        mac: &[u8; 32],
        now_ms: i64,
        expires_at_ms: i64,
    ) -> Result<(), ReplayError> {
        self.claim_one(signature_entry(mac), now_ms, expires_at_ms)?;
        self.claim_one(self.nonce_entry(key_id, nonce), now_ms, expires_at_ms)
    }

    fn nonce_entry(&self, key_id: &str, nonce: &str) -> Entry {
        // `str` hashes its bytes and a terminator, so (key id, nonce) pairs cannot run together.
        let low = self.nonce_keys.0.hash_one((key_id, nonce));
        let high = self.nonce_keys.1.hash_one((key_id, nonce));
        Entry { low, high }
    }

    /// Whether to log that the store is full (at most once every 10 s).
    pub fn should_warn_full(&self, now_ms: i64) -> bool {
        let last = self.last_full_warning_ms.load(Ordering::Relaxed);
        now_ms - last >= 10_000
            && self.last_full_warning_ms.compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }

    /// Drops expired entries (run periodically; claims also purge a full shard).
    pub fn purge(&self, now_ms: i64) {
        for shard in &self.shards {
            let mut shard = shard.lock().unwrap_or_else(|p| p.into_inner());
            shard.entries.retain(|_, exp| *exp > now_ms);
            shard.last_purge_ms = now_ms;
        }
    }

    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).entries.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
fn mac_of(sig: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(sig.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_or_a_signature_is_accepted_once_within_its_life() {
        let r = ReplayStore::new(1000);
        assert_eq!(r.claim("k", "nonce-1", &mac_of("sig-1"), 0, 100), Ok(()));
        assert_eq!(r.claim("k", "nonce-1", &mac_of("sig-2"), 1, 100), Err(ReplayError::Replayed));
        assert_eq!(r.claim("k", "nonce-2", &mac_of("sig-1"), 1, 100), Err(ReplayError::Replayed));
        // The same nonce under another key id is a different nonce.
        assert_eq!(r.claim("other", "nonce-1", &mac_of("sig-3"), 1, 100), Ok(()));
        // A request refused on its nonce leaves its signature claimed: the same signature is
        // the same request.
        assert_eq!(r.claim("k", "nonce-3", &mac_of("sig-2"), 1, 100), Err(ReplayError::Replayed));
        assert_eq!(r.claim("k", "nonce-3", &mac_of("sig-4"), 1, 100), Ok(()));
        // After expiry the entry is gone.
        assert_eq!(r.claim("k", "nonce-1", &mac_of("sig-9"), 100, 200), Ok(()));
    }

    #[test]
    fn a_full_store_refuses_rather_than_forgets() {
        let r = ReplayStore::new(16 * SHARDS);
        let mut full = false;
        for i in 0..100_000 {
            if r.claim("k", &format!("n{i}"), &mac_of(&format!("s{i}")), 0, 1_000) == Err(ReplayError::Full) {
                full = true;
                break;
            }
        }
        assert!(full);
        r.purge(2_000);
        assert!(r.is_empty());
        assert_eq!(r.claim("k", "n0", &mac_of("s0"), 2_000, 3_000), Ok(()));
    }
}

#[cfg(test)]
mod capacity {
    use super::*;

    #[test]
    fn one_key_can_use_the_whole_capacity() {
        let r = ReplayStore::new(100_000);
        for i in 0..40_000 {
            assert_eq!(
                r.claim("busy-key", &format!("nonce-{i:08}"), &mac_of(&format!("sig-{i}")), 0, 1_000),
                Ok(()),
                "claim {i}"
            );
        }
        assert_eq!(r.len(), 80_000);
    }
}

#[cfg(test)]
mod layout {
    #[test]
    fn an_entry_and_its_expiry_take_24_bytes() {
        assert_eq!(std::mem::size_of::<(super::Entry, i64)>(), 24);
    }
}
