//! The output-size budget shared by every output of one extraction. It lives
//! beside the error it raises so that both the writers (`extract`) and the
//! operators (`ops`) charge it without importing each other.

use super::{ErrorKind, ExtractError};

/// Fails when `bytes` more output would pass the call's limit (the plan's, or the caller's policy).
pub(crate) fn charge(budget: &mut usize, bytes: usize, limit: usize) -> Result<(), ExtractError> {
    let total = budget.saturating_add(bytes);
    if total > limit {
        return Err(ErrorKind::TooLarge { found: total, limit }.into());
    }
    *budget = total;
    Ok(())
}
