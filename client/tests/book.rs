//! The book's fex-client page explains every flag of `fex-client extract`
//! (issue 11: `--first` appeared only in an example command, unexplained).

/// Flags in `--help` output: words that start with `--`, without `--help`.
fn flags(help: &str) -> Vec<String> {
    let mut out: Vec<String> = help
        .split_whitespace()
        .filter(|w| w.starts_with("--") && *w != "--help")
        .map(|w| w.trim_end_matches([',', '.', ')']).split('=').next().unwrap().to_string())
        .collect();
    out.dedup();
    out
}

/// Whether `text` names `flag` in backticks (prose), not only inside a shell example.
fn explains(text: &str, flag: &str) -> bool {
    let quoted = format!("`{flag}");
    text.match_indices(&quoted).any(|(i, _)| matches!(text.as_bytes().get(i + quoted.len()), Some(b'`' | b' ')))
}

#[test]
fn the_book_explains_every_extract_flag() {
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_fex-client")).args(["extract", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    // Connection flags are shared by every command and documented once.
    let own: Vec<String> = flags(&help).into_iter().filter(|f| f != "--addr" && !f.starts_with("--tls-")).collect();
    assert!(own.contains(&"--first".to_string()), "{help}");
    let page = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/src/calling/client.md");
    let page = std::fs::read_to_string(page).unwrap();
    let missing: Vec<&String> = own.iter().filter(|f| !explains(&page, f)).collect();
    assert!(missing.is_empty(), "docs/src/calling/client.md does not explain {missing:?} of `fex-client extract`");
}
