//! The master key (D2.2) and what it protects: private key secrets are encrypted with
//! XChaCha20-Poly1305 (they are needed to check HMACs); public and campaign secrets are kept only
//! as keyed hashes. The master key comes from `TESSERA_MASTER_KEY` or from `<data-dir>/master.key`,
//! generated on first run with mode 0600. It is never logged.
use std::path::Path;

use anyhow::Context as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use rand::RngCore;
use secrecy::{ExposeSecret, SecretBox, SecretString};
use sha2::Sha256;
use subtle::ConstantTimeEq;

type HmacSha256 = Hmac<Sha256>;

/// Keys derived from the master key, one per purpose.
pub struct Keyring {
    aead: XChaCha20Poly1305,
    hash_key: SecretBox<[u8; 32]>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keyring([redacted])")
    }
}

fn derive(master: &[u8; 32], purpose: &str) -> [u8; 32] {
    let mut mac = <HmacSha256 as Mac>::new_from_slice(master).unwrap_or_else(|_| unreachable!());
    mac.update(purpose.as_bytes());
    mac.finalize().into_bytes().into()
}

fn decode_master(text: &str) -> anyhow::Result<[u8; 32]> {
    let t = text.trim();
    let bytes = if t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        hex::decode(t)?
    } else {
        URL_SAFE_NO_PAD.decode(t.trim_end_matches('=')).or_else(|_| STANDARD.decode(t))?
    };
    bytes.try_into().map_err(|_| anyhow::anyhow!("the master key must be 32 bytes (64 hex characters or base64)"))
}

impl Keyring {
    pub fn from_master(master: &[u8; 32]) -> Self {
        let enc = derive(master, "tessera/v1/secret-encryption");
        Keyring {
            aead: XChaCha20Poly1305::new(&enc.into()),
            hash_key: SecretBox::new(Box::new(derive(master, "tessera/v1/secret-hash"))),
        }
    }

    /// Loads the master key from the override, else from the data directory, creating it
    /// there on first run.
    pub fn load_or_create(data_dir: &Path, override_key: Option<&SecretString>) -> anyhow::Result<Self> {
        if let Some(k) = override_key {
            return Ok(Self::from_master(&decode_master(k.expose_secret()).context("TESSERA_MASTER_KEY")?));
        }
        let path = data_dir.join("master.key");
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                Ok(Self::from_master(&decode_master(&text).with_context(|| format!("reading {}", path.display()))?))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
                let mut key = [0u8; 32];
                rand::rngs::OsRng.fill_bytes(&mut key);
                write_private_file(&path, &hex::encode(key))?;
                // Another process may have won the race to create it; read back what is there.
                let text = std::fs::read_to_string(&path)?;
                Ok(Self::from_master(&decode_master(&text)?))
            }
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// Encrypts a private key secret, bound to its key id (associated data).
    pub fn encrypt(&self, key_id: &str, secret: &str) -> String {
        let mut nonce = [0u8; 24];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let ct = self
            .aead
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: secret.as_bytes(), aad: key_id.as_bytes() })
            .unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ct);
        URL_SAFE_NO_PAD.encode(out)
    }

    /// Decrypts what [`Keyring::encrypt`] made; `None` if it was tampered with or the master key
    /// differs.
    pub fn decrypt(&self, key_id: &str, sealed: &str) -> Option<SecretBox<Vec<u8>>> {
        let raw = URL_SAFE_NO_PAD.decode(sealed).ok()?;
        if raw.len() < 24 + 16 {
            return None;
        }
        let (nonce, ct) = raw.split_at(24);
        let pt = self.aead.decrypt(XNonce::from_slice(nonce), Payload { msg: ct, aad: key_id.as_bytes() }).ok()?;
        Some(SecretBox::new(Box::new(pt)))
    }

    /// Keyed hash of a browser-key secret, hex.
    pub fn hash_secret(&self, secret: &str) -> String {
        let mut mac =
            <HmacSha256 as Mac>::new_from_slice(self.hash_key.expose_secret()).unwrap_or_else(|_| unreachable!());
        mac.update(secret.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    /// Constant-time check of a presented secret against a stored hash.
    pub fn secret_matches(&self, secret: &str, stored_hash: &str) -> bool {
        let computed = self.hash_secret(secret);
        computed.len() == stored_hash.len() && bool::from(computed.as_bytes().ct_eq(stored_hash.as_bytes()))
    }
}

/// Writes a file readable only by its owner (0600 on Unix), failing if it exists.
pub fn write_private_file(path: &Path, contents: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    match opts.open(path) {
        Ok(mut f) => {
            f.write_all(contents.as_bytes())?;
            f.sync_all()?;
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).with_context(|| format!("writing {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_encrypt_bound_to_their_key_id() {
        let k = Keyring::from_master(&[7u8; 32]);
        let sealed = k.encrypt("wl_prv_a", "the-secret");
        assert!(!sealed.contains("the-secret"));
        assert_eq!(k.decrypt("wl_prv_a", &sealed).map(|s| s.expose_secret().clone()), Some(b"the-secret".to_vec()));
        assert!(k.decrypt("wl_prv_b", &sealed).is_none());
        assert!(Keyring::from_master(&[8u8; 32]).decrypt("wl_prv_a", &sealed).is_none());
    }

    #[test]
    fn hashed_secrets_match_only_themselves() {
        let k = Keyring::from_master(&[1u8; 32]);
        let h = k.hash_secret("abc");
        assert!(k.secret_matches("abc", &h));
        assert!(!k.secret_matches("abd", &h));
    }
}
