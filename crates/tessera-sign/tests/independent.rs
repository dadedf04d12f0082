//! Cross-checks the signing rule against implementations that share no code with this crate:
//! the `openssl` command line, and the integrator snippets in `docs/snippets/` (bash + openssl,
//! Python stdlib, Node `node:crypto`). Each is run against every published vector.
//!
//! `openssl` and `python3` are required; `node` is optional and its check is skipped, with a note
//! on stderr, when it is not on PATH.

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root (two levels above crates/tessera-sign) exists")
}

fn vectors_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test-vectors.json")
}

fn snippet(name: &str) -> PathBuf {
    let path = workspace_root().join("docs/snippets").join(name);
    assert!(path.is_file(), "missing snippet {}", path.display());
    path
}

struct Vector {
    name: String,
    secret: String,
    timestamp: String,
    method: String,
    path: String,
    body: String,
    canonical: String,
    signature: String,
}

fn vectors() -> Vec<Vector> {
    let text = std::fs::read_to_string(vectors_path()).expect("read test-vectors.json");
    let json: serde_json::Value = serde_json::from_str(&text).expect("test-vectors.json parses");
    let list = json["vectors"].as_array().expect("a `vectors` array");
    assert!(!list.is_empty(), "no vectors published");
    list.iter()
        .map(|v| {
            let s = |k: &str| v[k].as_str().unwrap_or_else(|| panic!("vector field {k} is a string")).to_string();
            Vector {
                name: s("name"),
                secret: s("secret"),
                timestamp: s("timestamp"),
                method: s("method"),
                path: s("path"),
                body: s("body"),
                canonical: s("canonical"),
                signature: s("signature"),
            }
        })
        .collect()
}

/// Runs a required tool; a missing tool is a failure, not a skip.
fn run_required(cmd: &mut Command, what: &str) -> Output {
    match cmd.output() {
        Ok(out) => out,
        Err(e) if e.kind() == ErrorKind::NotFound => panic!("{what} is required for this test but is not on PATH"),
        Err(e) => panic!("could not run {what}: {e}"),
    }
}

fn describe(out: &Output) -> String {
    format!(
        "status {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A checker run must have exited 0 *and* reported every vector as ok, so that a script that
/// exits 0 without checking anything (e.g. a broken "am I the main module" test) cannot pass.
fn assert_checked_every_vector(what: &str, out: &Output) {
    assert!(out.status.success(), "{what} rejected the vectors: {}", describe(out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for v in vectors() {
        assert!(
            stdout.lines().any(|l| l == format!("ok {}", v.name)),
            "{what} did not report vector {} as ok: {}",
            v.name,
            describe(out)
        );
    }
    assert!(!stdout.contains("MISMATCH"), "{what} reported a mismatch: {}", describe(out));
}

/// HMAC-SHA256 via `openssl dgst`, with the message written to stdin (no shell involved).
fn openssl_hmac(secret: &str, message: &[u8]) -> String {
    let mut child = match Command::new("openssl")
        .args(["dgst", "-sha256", "-hmac", secret])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == ErrorKind::NotFound => panic!("openssl is required for this test but is not on PATH"),
        Err(e) => panic!("could not run openssl: {e}"),
    };
    {
        let mut stdin = child.stdin.take().expect("openssl stdin is piped");
        stdin.write_all(message).expect("write canonical string to openssl");
    } // stdin dropped here: openssl sees EOF.
    let out = child.wait_with_output().expect("wait for openssl");
    assert!(out.status.success(), "openssl failed: {}", describe(&out));
    // Output looks like `SHA2-256(stdin)= <hex>` (the prefix varies by openssl version).
    let text = String::from_utf8(out.stdout).expect("openssl output is utf-8");
    text.trim().rsplit(' ').next().expect("openssl printed a digest").to_string()
}

#[test]
fn openssl_agrees_with_every_published_vector() {
    for v in vectors() {
        let ours_canonical = tessera_sign::canonical_string(&v.timestamp, &v.method, &v.path, v.body.as_bytes());
        assert_eq!(
            String::from_utf8(ours_canonical).expect("canonical is utf-8"),
            v.canonical,
            "{}: canonical string",
            v.name
        );

        let openssl = openssl_hmac(&v.secret, v.canonical.as_bytes());
        let ours = tessera_sign::sign(v.secret.as_bytes(), &v.timestamp, &v.method, &v.path, v.body.as_bytes());
        assert_eq!(openssl, v.signature, "{}: openssl vs published signature", v.name);
        assert_eq!(ours, openssl, "{}: tessera_sign::sign vs openssl", v.name);
    }
}

#[test]
fn the_shell_snippet_reproduces_every_published_signature() {
    let script = snippet("sign.sh");
    for v in vectors() {
        let mut forms: Vec<Vec<&str>> = vec![vec![&v.secret, &v.timestamp, &v.method, &v.path, &v.body]];
        if v.body.is_empty() {
            // An absent BODY argument must sign the same as an empty one.
            forms.push(vec![&v.secret, &v.timestamp, &v.method, &v.path]);
        }
        for args in forms {
            let out = run_required(Command::new("bash").arg(&script).args(&args), "bash");
            assert!(out.status.success(), "{}: sign.sh failed: {}", v.name, describe(&out));
            let got = String::from_utf8(out.stdout).expect("sign.sh output is utf-8");
            assert_eq!(got.trim_end(), v.signature, "{}: sign.sh with {} args", v.name, args.len());
        }
    }
}

#[test]
fn the_python_snippet_accepts_every_published_vector() {
    let out = run_required(
        Command::new("python3")
            .arg(snippet("sign.py"))
            .arg("vectors")
            .arg(vectors_path())
            .current_dir(workspace_root()),
        "python3",
    );
    assert_checked_every_vector("sign.py", &out);
}

#[test]
fn the_node_snippet_accepts_every_published_vector() {
    match Command::new("node").arg("--version").output() {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            eprintln!("SKIPPED: node is not on PATH, docs/snippets/sign.mjs was not checked");
            return;
        }
        Err(e) => panic!("could not run node: {e}"),
        Ok(_) => {}
    }
    let out = run_required(
        Command::new("node").arg(snippet("sign.mjs")).arg("vectors").arg(vectors_path()).current_dir(workspace_root()),
        "node",
    );
    assert_checked_every_vector("sign.mjs", &out);
}

#[test]
fn the_python_and_node_checkers_fail_on_a_tampered_vector() {
    // Guards against a checker that exits 0 without checking anything.
    let text = std::fs::read_to_string(vectors_path()).expect("read test-vectors.json");
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("test-vectors.json parses");
    json["vectors"][0]["signature"] = serde_json::Value::String("0".repeat(64));
    let tampered = std::env::temp_dir().join(format!("tessera-tampered-vectors-{}.json", std::process::id()));
    std::fs::write(&tampered, serde_json::to_string(&json).expect("serialize")).expect("write tampered vectors");

    let py = run_required(Command::new("python3").arg(snippet("sign.py")).arg("vectors").arg(&tampered), "python3");
    let node = Command::new("node").arg(snippet("sign.mjs")).arg("vectors").arg(&tampered).output();
    let _ = std::fs::remove_file(&tampered);

    assert!(!py.status.success(), "sign.py accepted a tampered vector: {}", describe(&py));
    assert!(String::from_utf8_lossy(&py.stdout).contains("MISMATCH"), "sign.py did not say what mismatched");
    match node {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            eprintln!("SKIPPED: node is not on PATH, docs/snippets/sign.mjs was not checked");
        }
        Err(e) => panic!("could not run node: {e}"),
        Ok(node) => {
            assert!(!node.status.success(), "sign.mjs accepted a tampered vector: {}", describe(&node));
            assert!(String::from_utf8_lossy(&node.stdout).contains("MISMATCH"), "sign.mjs did not say what mismatched");
        }
    }
}

/// The fenced block of `lang` in the README's "Signing by hand" section.
fn readme_block(lang: &str) -> String {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).expect("README.md");
    let section = readme.split("## Signing by hand").nth(1).expect("README has a 'Signing by hand' section");
    let fence = format!("```{lang}\n");
    let start = section.find(&fence).unwrap_or_else(|| panic!("no {lang} block in 'Signing by hand'")) + fence.len();
    let len = section[start..].find("```").expect("closed block");
    section[start..start + len].to_string()
}

#[test]
fn the_readme_openssl_line_reproduces_every_published_signature() {
    let line = readme_block("sh");
    let vectors: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(vectors_path()).expect("vectors")).expect("json");
    for v in vectors["vectors"].as_array().expect("list") {
        let s = |k: &str| v[k].as_str().expect(k).to_string();
        let body = if s("body").is_empty() { "{}".to_string() } else { s("body") };
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(&line)
            .env("ts", s("timestamp"))
            .env("method", s("method"))
            .env("path", s("path"))
            .env("body", body)
            .env("secret", s("secret"))
            .output()
            .expect("bash runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), s("signature"), "{}", s("name"));
    }
}

#[test]
fn the_readme_python_snippet_reproduces_every_published_signature() {
    let harness = "\nimport json, sys\nfor v in json.load(open(sys.argv[1], encoding='utf-8'))['vectors']:\n    got = sign(v['secret'], v['timestamp'], v['method'], v['path'], v['body'].encode())\n    assert got == v['signature'], v['name']\nprint('ok')\n";
    let dir = std::env::temp_dir().join(format!("tessera-readme-py-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let file = dir.join("readme_sign.py");
    std::fs::write(&file, readme_block("python") + harness).expect("write");
    let out =
        std::process::Command::new("python3").arg(&file).arg(vectors_path()).output().expect("python3 is required");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
}

#[test]
fn the_readme_node_snippet_reproduces_every_published_signature() {
    if std::process::Command::new("node").arg("--version").output().is_err() {
        eprintln!("node not on PATH; README Node snippet check skipped");
        return;
    }
    let harness = "\nimport { readFileSync } from 'node:fs';\nfor (const v of JSON.parse(readFileSync(process.argv[2], 'utf8')).vectors) {\n  if (sign(v.secret, v.timestamp, v.method, v.path, v.body) !== v.signature) { console.error('MISMATCH ' + v.name); process.exit(1); }\n}\nconsole.log('ok');\n";
    let dir = std::env::temp_dir().join(format!("tessera-readme-js-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let file = dir.join("readme_sign.mjs");
    std::fs::write(&file, readme_block("js") + harness).expect("write");
    let out = std::process::Command::new("node").arg(&file).arg(vectors_path()).output().expect("node runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
}
