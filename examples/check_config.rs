//! Validates model config files and prints every error: `cargo run --example
//! check_config -- models/*.yaml`. The server's `--check-config` does the same.

fn main() {
    let mut failed = false;
    for path in std::env::args().skip(1) {
        match fex::Plan::from_file(std::path::Path::new(&path)) {
            Ok(plan) => println!("{path}: ok ({} outputs, compat {})", plan.visible().count(), plan.compat.as_str()),
            Err(e) => {
                eprintln!("{path}: {e}");
                failed = true;
            }
        }
    }
    std::process::exit(if failed { 1 } else { 0 });
}
