// Tessera request signing for Node 20+, no dependencies.
//
//   node sign.mjs vectors PATH_TO_VECTORS_JSON   # check every published vector
//
// Canonical string: <timestamp>.<METHOD>.<path>.<body>, where body is the exact bytes sent
// (or the two characters {} when empty). Signature: lower-case hex HMAC-SHA256(secret, canonical).
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const toBuffer = (v) => (v == null ? Buffer.alloc(0) : Buffer.isBuffer(v) || v instanceof Uint8Array ? Buffer.from(v) : Buffer.from(String(v), 'utf8'));

export function canonical(timestamp, method, path, body = '') {
  let b = toBuffer(body);
  if (b.length === 0) b = Buffer.from('{}');
  return Buffer.concat([Buffer.from(`${timestamp}.${method.toUpperCase()}.${path}.`, 'utf8'), b]);
}

/** Lower-case hex HMAC-SHA256 of the canonical string. Pass body as the exact bytes/string you send. */
export function sign(secret, timestamp, method, path, body = '') {
  return createHmac('sha256', toBuffer(secret)).update(canonical(timestamp, method, path, body)).digest('hex');
}

/** Headers for one request, with a fresh timestamp and nonce. Call again for every retry. */
export function signedHeaders(keyId, secret, method, path, body = '') {
  const timestamp = String(Date.now());
  return {
    'content-type': 'application/json',
    'x-white-label-key-id': keyId,
    'x-white-label-timestamp': timestamp,
    'x-white-label-nonce': randomBytes(16).toString('base64url'),
    'x-white-label-signature': sign(secret, timestamp, method, path, body),
  };
}

function checkVectors(file) {
  const { vectors = [] } = JSON.parse(readFileSync(file, 'utf8'));
  let failures = 0;
  for (const v of vectors) {
    const gotCanonical = canonical(v.timestamp, v.method, v.path, v.body).toString('utf8');
    const got = sign(v.secret, v.timestamp, v.method, v.path, v.body);
    let ok = true;
    if (gotCanonical !== v.canonical) {
      ok = false;
      console.log(`MISMATCH ${v.name}: canonical ${JSON.stringify(gotCanonical)} != expected ${JSON.stringify(v.canonical)}`);
    }
    if (got !== v.signature) {
      ok = false;
      console.log(`MISMATCH ${v.name}: signature ${got} != expected ${v.signature}`);
    }
    if (ok) console.log(`ok ${v.name}`);
    else failures += 1;
  }
  if (vectors.length === 0) {
    console.log('no vectors found');
    return 1;
  }
  console.log(`${vectors.length} vectors, ${failures} mismatches`);
  return failures ? 1 : 0;
}

// Run as a script (not imported)? Compare real paths: Node resolves symlinks in import.meta.url
// but not in process.argv[1].
const isMain = (() => {
  try {
    return !!process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
})();

if (isMain) {
  if (process.argv.length === 4 && process.argv[2] === 'vectors') {
    process.exitCode = checkVectors(process.argv[3]);
  } else {
    console.error('usage: node sign.mjs vectors PATH_TO_VECTORS_JSON');
    process.exitCode = 2;
  }
}
