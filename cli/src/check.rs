//! `fex check`: every model config judged by the library's catalog, as
//! `fex-server --check-config` judges them: valid models on stdout
//! (`NAME: ok (...)`), every error on stderr, exit 64 if any.

use crate::args::CheckArgs;
use crate::exit;

pub fn run(a: CheckArgs) -> u8 {
    let mut failed = false;
    for path in &a.paths {
        let (loaded, errors) = fex::catalog::load(path);
        for model in &loaded {
            println!("{}", fex::catalog::ok_line(&model.plan, Some(&model.path)));
        }
        for e in &errors {
            eprintln!("{e}");
        }
        failed |= !errors.is_empty();
    }
    if failed { exit::CONFIG } else { 0 }
}
