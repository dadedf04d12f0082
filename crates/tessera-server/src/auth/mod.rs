//! Authentication building blocks, free of HTTP: the master key and secret handling, key
//! material, the replay store, failure blocking and rate limits.
pub mod crypto;
pub mod directory;
pub mod guard;
pub mod keys;
pub mod replay;
pub mod sessions;
