//! Key material (D2.1): ids that show their kind, 256-bit url-safe secrets.
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rand::RngCore;

use crate::domain::scopes::KeyKind;

const ID_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// A new key id such as `wl_prv_k3j9…` (20 random characters, about 103 bits).
pub fn new_key_id(kind: KeyKind) -> String {
    let mut rng = rand::rngs::OsRng;
    let mut id = String::from(kind.prefix());
    for _ in 0..20 {
        id.push(ID_ALPHABET[(rng.next_u32() % ID_ALPHABET.len() as u32) as usize] as char);
    }
    id
}

/// A new secret: 32 random bytes, url-safe base64 without padding (43 characters).
pub fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Whether a string could be a key id at all (checked before any store lookup).
pub fn plausible_key_id(s: &str) -> bool {
    KeyKind::of_key_id(s).is_some() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ids_show_their_kind_and_secrets_are_long() {
        let id = new_key_id(KeyKind::Private);
        assert!(id.starts_with("wl_prv_") && plausible_key_id(&id));
        assert_eq!(new_secret().len(), 43);
        assert_ne!(new_secret(), new_secret());
        assert!(!plausible_key_id("nope"));
    }
}
