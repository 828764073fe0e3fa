//! The library's default build carries no async runtime, gRPC or HTTP code
//! (ARCHITECTURE.md invariant 1), nor the Python binding's pyo3 (python/)
//! or the JVM binding's jni (jni/): bindings depend on the library, never
//! the reverse. `cargo tree -e normal` must not list them.

use std::process::Command;

const FORBIDDEN: &[&str] =
    &["tokio", "tonic", "hyper", "h2", "tower", "axum", "mio", "pyo3", "pyo3-ffi", "jni", "jni-sys"];

#[test]
fn default_build_has_no_server_dependencies() {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "-p", "fex", "-e", "normal", "--prefix", "none", "--format", "{p}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8(out.stdout).unwrap();
    let crates: Vec<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(crates.contains(&"prost"), "sanity: the tree lists prost\n{tree}");
    for name in FORBIDDEN {
        assert!(!crates.contains(name), "the library depends on {name}:\n{tree}");
    }
}

#[test]
fn grpc_feature_is_what_brings_tonic_in() {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "-p", "fex", "-e", "normal", "--features", "grpc", "--prefix", "none", "--format", "{p}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    let tree = String::from_utf8(out.stdout).unwrap();
    assert!(tree.lines().any(|l| l.starts_with("tonic ")), "{tree}");
}
