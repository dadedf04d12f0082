//! Authentication building blocks, free of HTTP: the master key and secret handling, key
//! material, the replay store, failure blocking and rate limits (in memory, or shared by several
//! instances through Redis: `shared`).
pub mod crypto;
pub mod directory;
pub mod guard;
pub mod keys;
pub mod replay;
pub mod sessions;
pub mod shared;
