//! Validates model config files and prints every error: `cargo run --example
//! check_config -- models/*.yaml`. The server's `--check-config` does the same.

fn main() {
    let mut failed = false;
    for path in std::env::args().skip(1) {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{path}: {e}");
                failed = true;
                continue;
            }
        };
        match fex::Plan::from_yaml(&text) {
            Ok(plan) => println!("{path}: ok ({} outputs, compat {})", plan.outputs.len(), plan.compat.as_str()),
            Err(e) => {
                eprintln!("{path}: {e}");
                failed = true;
            }
        }
    }
    std::process::exit(if failed { 1 } else { 0 });
}
