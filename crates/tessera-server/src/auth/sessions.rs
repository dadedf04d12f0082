//! Passcodes and opaque session tokens, shared by my-tickets (D8) and the reseller portal
//! (D10.1, D15.4, D16.16): 6-digit codes and 256-bit tokens from the OS RNG, stored only as
//! keyed hashes (the keyring's HMAC) and compared in constant time. The rules for sending and
//! trying them are `flows::customer_access`'s. Nothing here is logged.
use rand::Rng;

use super::crypto::Keyring;

/// A fresh 6-digit passcode.
pub fn new_code() -> String {
    format!("{:06}", rand::rngs::OsRng.gen_range(0..1_000_000u32))
}

/// A fresh opaque token (`prefix` + 64 hex digits).
pub fn new_token(prefix: &str) -> String {
    let bytes: [u8; 32] = rand::rngs::OsRng.gen();
    format!("{prefix}{}", hex::encode(bytes))
}

/// What a challenge stores of its code: bound to the challenge, so a code hash is useless
/// for any other challenge.
pub fn code_hash(keyring: &Keyring, challenge_id: &str, code: &str) -> String {
    keyring.hash_secret(&format!("otp:{challenge_id}:{code}"))
}

/// Constant-time check of a presented code.
pub fn code_matches(keyring: &Keyring, challenge_id: &str, code: &str, stored: &str) -> bool {
    keyring.secret_matches(&format!("otp:{challenge_id}:{code}"), stored)
}
