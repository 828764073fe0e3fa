//! README.md's library example is examples/library.rs, which CI builds: the
//! two must not drift apart.

#[test]
fn readme_library_example_is_the_compiled_one() {
    let example = include_str!("../examples/library.rs");
    let readme = include_str!("../README.md");
    let begin = example.find("// README: begin\n").expect("begin marker") + "// README: begin\n".len();
    let end = example.find("    // README: end").expect("end marker");
    let lines: Vec<&str> = example[begin..end].lines().map(|l| l.strip_prefix("    ").unwrap_or(l)).collect();
    let block = lines.join("\n");
    assert!(readme.contains(&block), "README.md must show examples/library.rs between its markers:\n{block}");
}
