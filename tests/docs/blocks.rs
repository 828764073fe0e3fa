//! Every command and config the documents show goes through the code it
//! documents: model configs through the config loader, other YAML through a
//! YAML parser, `fex`, `fex-server` and `fex-client` commands against the
//! subcommands and flags of the built binaries, Python through Python's
//! parser. Config fragments (an `offline:` or `upstream:` section alone) are
//! loaded in full by tests/sample_transforms.rs and tests/oip.rs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use fex::Plan;

use crate::markdown::{Block, documents, split};

/// Every fenced block of every document, with where it is.
fn all_blocks(mut keep: impl FnMut(&Block<'_>) -> bool) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for doc in documents() {
        let (blocks, _) = split(&doc.text);
        for b in blocks.iter().filter(|b| keep(b)) {
            out.push((format!("{}:{}", doc.path.display(), b.line), b.body.clone()));
        }
    }
    out
}

fn lang(b: &Block<'_>) -> String {
    b.info.split([',', ' ']).next().unwrap_or("").to_string()
}

#[test]
fn yaml_blocks_parse_and_model_configs_load() {
    let blocks = all_blocks(|b| lang(b) == "yaml");
    assert!(blocks.len() >= 8, "{} yaml blocks", blocks.len());
    let mut bad = Vec::new();
    let mut configs = 0;
    for (at, body) in &blocks {
        match serde_norway::from_str::<serde_norway::Value>(body) {
            Err(e) => bad.push(format!("{at}: not YAML: {e}")),
            Ok(v) if v.get("features").is_some() => {
                configs += 1;
                if let Err(e) = Plan::from_yaml(body) {
                    bad.push(format!("{at}: not a valid model config:\n{e}"));
                }
            }
            Ok(_) => {}
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(configs >= 1, "no model config among the yaml blocks");
}

#[test]
fn python_blocks_parse() {
    let blocks = all_blocks(|b| lang(b) == "python");
    assert!(blocks.len() >= 7, "{} python blocks", blocks.len());
    let mut bad = Vec::new();
    for (at, body) in &blocks {
        let mut child = Command::new("python3")
            .args(["-c", "import ast, sys; ast.parse(sys.stdin.read())"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), body.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        if !out.status.success() {
            bad.push(format!("{at}: {}", String::from_utf8_lossy(&out.stderr)));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// A shell block's commands, each split into words: continuation lines
/// joined, comments dropped, `&&`, `|`, `;` and `&` ending a command, and
/// variables set earlier in the block (`C=target/release/fex-client`)
/// substituted.
fn commands(block: &str) -> Vec<Vec<String>> {
    let joined = block.replace("\\\n", " ");
    let mut vars: HashMap<String, String> = HashMap::new();
    let mut out = Vec::new();
    for line in joined.lines() {
        let mut current: Vec<String> = Vec::new();
        for word in words(line) {
            if ["&&", "||", "|", ";", "&"].contains(&word.as_str()) {
                out.push(std::mem::take(&mut current));
            } else if let Some(name) = word.strip_prefix('$').filter(|n| vars.contains_key(*n)) {
                current.push(vars[name].clone());
            } else {
                current.push(word);
            }
        }
        if let [only] = current.as_slice()
            && let Some((name, value)) = only.split_once('=')
        {
            vars.insert(name.to_string(), value.to_string());
        }
        out.push(current);
    }
    out.retain(|c| !c.is_empty());
    out
}

/// Shell words, quotes removed, up to a comment.
fn words(line: &str) -> Vec<String> {
    let (mut out, mut word, mut quote, mut started) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => (quote, started) = (Some(c), true),
            (None, '#') if !started => break,
            (None, c) if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => (word, started) = (word + &c.to_string(), true),
        }
    }
    if started {
        out.push(word);
    }
    out
}

/// The fex binary a command runs and its arguments: `fex ...`,
/// `target/release/fex-client ...`, `cargo run -p fex-server -- ...`.
fn invocation(command: &[String]) -> Option<(&'static str, Vec<String>)> {
    // Past `VAR=value` assignments in front of the command.
    let start = command.iter().position(|w| !w.contains('=') || w.starts_with('-'))?;
    let command = &command[start..];
    let program = command[0].rsplit('/').next().unwrap();
    let bin = |name: &str| ["fex", "fex-server", "fex-client"].into_iter().find(|b| *b == name);
    if program == "cargo" && command.get(1).is_some_and(|w| w == "run") {
        if command.iter().any(|w| w == "--example") {
            return None;
        }
        let package = command.iter().position(|w| w == "-p" || w == "--package").map(|i| command[i + 1].as_str())?;
        let args = command.iter().position(|w| w == "--").map_or(vec![], |i| command[i + 1..].to_vec());
        return Some((bin(if package == "fex-cli" { "fex" } else { package })?, args));
    }
    Some((bin(program)?, command[1..].to_vec()))
}

/// A built binary of fex-server, fex-client or fex-cli. They are other
/// packages' binaries, which `cargo test -p fex` does not build, so the
/// first call builds them (`built_binaries`) and every call finds them
/// there, fresh.
fn binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(built_binaries).join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// Runs `cargo build` for the binaries into this test's own target
/// directory and profile (`target/debug`, beside `deps/` where this
/// executable is), so a binary that is missing or older than its sources is
/// built, and fresh ones cost a no-op build; returns that directory. It is
/// scripts/test.sh's build (`--workspace --all-targets`, whose features
/// `cargo test --workspace --all-targets` also uses), so under either it is
/// a no-op: building a package or two alone would unify other features,
/// compile the library again (two minutes of the suite) and replace the
/// binaries other tests are running. Cargo releases the target directory's
/// lock before it runs tests, so this nested build does not wait on the
/// outer one.
fn built_binaries() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>").to_path_buf();
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(other) => other,
        None => panic!("no profile directory above {}", exe.display()),
    };
    let target_dir = profile_dir.parent().unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(&cargo);
    // Without what cargo sets for this test's own process: a build script
    // that watches one of them (ring: CARGO_MANIFEST_DIR, OUT_DIR) would see
    // it changed and the nested build would compile again what the suite's
    // did.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        let of_this_test = ["CARGO_PKG_", "CARGO_BIN_", "CARGO_MANIFEST_", "CARGO_CRATE_", "CARGO_PRIMARY_"]
            .iter()
            .any(|p| key.starts_with(p))
            || ["CARGO_TARGET_TMPDIR", "CARGO_RUSTC_CURRENT_DIR", "OUT_DIR"].contains(&key.as_ref());
        if of_this_test {
            build.env_remove(key.as_ref());
        }
    }
    let out = build
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["build", "--quiet", "--workspace", "--all-targets", "--profile", profile, "--target-dir"])
        .arg(target_dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo to build the workspace: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "cargo build --workspace --all-targets failed:\n{stderr}");
    profile_dir
}

/// What `--help` says at one level of a binary: its subcommands and flags.
struct Help {
    commands: Vec<String>,
    flags: Vec<String>,
}

fn help<'a>(path: &[String], cache: &'a mut HashMap<Vec<String>, Help>) -> &'a Help {
    cache.entry(path.to_vec()).or_insert_with(|| {
        let out = Command::new(binary(&path[0])).args(&path[1..]).arg("--help").output().unwrap();
        assert!(out.status.success(), "{path:?} --help failed");
        let text = String::from_utf8(out.stdout).unwrap();
        let commands = text
            .split("Commands:\n")
            .nth(1)
            .map(|rest| rest.lines().take_while(|l| !l.trim().is_empty()).map(first_word).collect())
            .unwrap_or_default();
        let flags = text
            .split_whitespace()
            .filter(|w| w.starts_with('-'))
            .map(|w| w.trim_end_matches([',', '.', ')', ']']).split(['=', '[']).next().unwrap().to_string())
            .collect();
        Help { commands, flags }
    })
}

fn first_word(line: &str) -> String {
    line.split_whitespace().next().unwrap_or("").to_string()
}

/// Checks one invocation: each subcommand exists, and each flag is one its
/// level takes (a flag before a subcommand belongs to the level above).
fn check_invocation(bin: &str, args: &[String], cache: &mut HashMap<Vec<String>, Help>) -> Result<(), String> {
    let mut path = vec![bin.to_string()];
    for word in args {
        let word = word.trim_start_matches('[').trim_end_matches([']', ',']);
        let level = help(&path, cache);
        if word.starts_with('-') && word.len() > 1 && !word.starts_with("-0") {
            let flag = word.split('=').next().unwrap();
            if !level.flags.iter().any(|f| f == flag) {
                return Err(format!("`{}` takes no {flag}", path.join(" ")));
            }
        } else if level.commands.iter().any(|c| c == word) {
            path.push(word.to_string());
        }
    }
    let level = help(&path, cache);
    if !level.commands.is_empty() {
        return Err(format!("`{}` needs one of the subcommands {:?}", path.join(" "), level.commands));
    }
    Ok(())
}

#[test]
fn shell_blocks_use_only_subcommands_and_flags_that_exist() {
    let blocks = all_blocks(|b| ["sh", "bash", "console"].contains(&lang(b).as_str()));
    let mut cache = HashMap::new();
    let (mut bad, mut checked) = (Vec::new(), 0);
    for (at, body) in &blocks {
        for command in commands(body) {
            let Some((bin, args)) = invocation(&command) else { continue };
            checked += 1;
            if let Err(why) = check_invocation(bin, &args, &mut cache) {
                bad.push(format!("{at}: {}\n  {why}", command.join(" ")));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(checked >= 30, "only {checked} fex commands found in shell blocks");
}

#[test]
fn shell_words_and_commands() {
    assert_eq!(words(r#"a 'b c' "d" # e"#), ["a", "b c", "d"]);
    assert_eq!(
        words("grpcurl -d '{\"model\": \"default\"}' x#y"),
        ["grpcurl", "-d", "{\"model\": \"default\"}", "x#y"]
    );
    let got = commands("C=target/release/fex-client\n$C health   # SERVING\nx \\\n  --y && z &\n");
    assert_eq!(
        got,
        [vec!["C=target/release/fex-client"], vec!["target/release/fex-client", "health"], vec!["x", "--y"], vec!["z"]]
    );
    let run: Vec<String> = "cargo run --release -p fex-cli -- check m.yaml".split(' ').map(String::from).collect();
    assert_eq!(invocation(&run), Some(("fex", vec!["check".to_string(), "m.yaml".to_string()])));
}

/// A mistake of each kind the check exists for is caught.
#[test]
fn wrong_commands_are_caught() {
    let mut cache = HashMap::new();
    let args = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    assert!(check_invocation("fex-client", &args("health --tls-ca ca.pem"), &mut cache).is_ok());
    let err = check_invocation("fex-client", &args("--tls-ca ca.pem health"), &mut cache).unwrap_err();
    assert_eq!(err, "`fex-client` takes no --tls-ca");
    let err = check_invocation("fex", &args("extract --frmat arrow x"), &mut cache).unwrap_err();
    assert_eq!(err, "`fex extract` takes no --frmat");
    assert!(check_invocation("fex", &args("fit"), &mut cache).unwrap_err().contains("needs one of the subcommands"));
    assert!(check_invocation("fex", &args("fit criteo --vocab-dir v/ [--threshold 3] d0"), &mut cache).is_ok());
}

/// The library example on "The Rust library" page is examples/library.rs,
/// which CI builds: the two must not drift apart.
#[test]
fn the_library_page_shows_the_compiled_example() {
    let example = include_str!("../../examples/library.rs");
    let page = include_str!("../../docs/src/calling/library.md");
    let begin = example.find("// book: begin\n").expect("begin marker") + "// book: begin\n".len();
    let end = example.find("    // book: end").expect("end marker");
    let lines: Vec<&str> = example[begin..end].lines().map(|l| l.strip_prefix("    ").unwrap_or(l)).collect();
    let block = lines.join("\n");
    assert!(
        page.contains(&block),
        "docs/src/calling/library.md must show examples/library.rs between its markers:\n{block}"
    );
}

/// The "Server flags" page's table has a row for every flag and variable
/// `fex-server --help` lists.
#[test]
fn the_flags_page_lists_every_server_flag() {
    let out = Command::new(binary("fex-server")).arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let page = include_str!("../../docs/src/serving/flags.md");
    let rows: Vec<&str> = page.lines().filter(|l| l.starts_with("| `")).collect();
    let flags = help.split_whitespace().filter(|w| w.starts_with("--") && !["--help", "--version"].contains(w));
    let flags = flags.map(|w| w.trim_end_matches([',', '.']).to_string());
    let vars = help.split("[env: ").skip(1).map(|r| r.split(['=', ']']).next().unwrap().to_string());
    let named: Vec<String> = flags.chain(vars).collect();
    let missing: Vec<&String> = named.iter().filter(|n| !rows.iter().any(|r| r.contains(&format!("`{n}`")))).collect();
    assert!(named.len() > 40, "{named:?}");
    assert!(missing.is_empty(), "docs/src/serving/flags.md has no row for {missing:?}");
}

/// The "Metrics" page has a row for every metric fex-server registers
/// (server/src/metrics.rs names each in a `registry.register("name", ...)`
/// call; counters are exposed with `_total`).
#[test]
fn the_metrics_page_lists_every_metric() {
    let source = include_str!("../../server/src/metrics.rs");
    let page = include_str!("../../docs/src/serving/metrics.md");
    let names: Vec<&str> =
        source.split("registry.register(").skip(1).filter_map(|call| call.split('"').nth(1)).collect();
    assert!(names.len() >= 20, "{names:?}");
    let rows: Vec<&str> = page.lines().filter(|l| l.starts_with("| `fex_")).collect();
    let missing: Vec<&&str> = names
        .iter()
        .filter(|n| {
            !rows.iter().any(|r| {
                r.starts_with(&format!("| `fex_{n}`"))
                    || r.starts_with(&format!("| `fex_{n}_total"))
                    || r.starts_with(&format!("| `fex_{n}{{"))
            })
        })
        .collect();
    assert!(missing.is_empty(), "docs/src/serving/metrics.md has no row for {missing:?}");
}
