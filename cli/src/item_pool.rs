//! `fex extract --item-pool-restore / --item-pool-save`: negative_gen's
//! item pool carried from one run to the next, as Monolith's
//! ItemPoolRestore / ItemPoolSave carry it across sessions. The library
//! reads and writes the bytes (`Transforms::restore_item_pool`,
//! `save_item_pool`); this reads and writes the file.

use std::path::Path;

use fex::samples::Transforms;

use crate::exit;

/// Before the run: refuses --item-pool-save for a model without
/// negative_gen (exit 64), and restores the pool from `restore`, if given;
/// a file that cannot be read or restored is exit 66 (missing) or 65 (bad).
pub fn prepare(transforms: &Transforms, restore: Option<&Path>, save: Option<&Path>) -> Result<(), u8> {
    if save.is_some() && transforms.save_item_pool().is_none() {
        eprintln!("error: --item-pool-save: the model has no negative_gen transform, so no item pool");
        return Err(exit::CONFIG);
    }
    let Some(file) = restore else { return Ok(()) };
    let bytes = std::fs::read(file).map_err(|e| {
        eprintln!("error: cannot read item pool {}: {e}", file.display());
        if e.kind() == std::io::ErrorKind::NotFound { exit::NO_INPUT } else { exit::FAILURE }
    })?;
    transforms.restore_item_pool(&bytes).map_err(|e| {
        eprintln!("error: {}: {e}", file.display());
        exit::DATA
    })
}

/// Saves the pool to `file`, if given: written beside it, then renamed
/// over it, so a failed save leaves the last good file (as ItemPoolSave
/// writes `_tmp` and renames). Returns the exit code.
pub fn save(transforms: &Transforms, file: Option<&Path>) -> u8 {
    let Some(file) = file else { return 0 };
    let Some(bytes) = transforms.save_item_pool() else { return exit::CONFIG };
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(".tmp");
    let written = std::fs::write(&tmp, &bytes).and_then(|()| std::fs::rename(&tmp, file));
    match written {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: cannot save item pool {}: {e}", file.display());
            exit::FAILURE
        }
    }
}
