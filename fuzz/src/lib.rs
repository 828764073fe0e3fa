//! Shared code of the fex fuzz targets: the plans they extract with, walks over
//! every view, and the invariants an `Ok` extraction must satisfy. Each target
//! asserts only that nothing panics and that these cheap invariants hold.

pub mod invariants;
pub mod plans;
pub mod split;
pub mod views;

use std::cell::{Cell, RefCell};

use fex::view::ExampleBatchView;
use fex::{ExtractError, Extracted, Extractor};

/// Input bytes as one `ExampleBatch`: every view, then every plan.
pub fn decode_batch(data: &[u8]) {
    views::walk_batch(data);
    for (i, plan) in plans::all().iter().enumerate() {
        let fresh = fex::extract_batch(plan, data);
        if let Ok(out) = &fresh {
            let batch = ExampleBatchView::parse(data).expect("an extracted batch parses");
            let rows = usize::try_from(batch.batch_size()).expect("an extracted batch has batch_size >= 0");
            invariants::check(plan, out, rows);
        }
        reused(i, data.len(), &fresh, |ex, out| ex.extract_batch(plan, data, out));
    }
}

/// Input bytes split into several `Example`s (see [`split::split_examples`]):
/// every view of each piece, then every plan over all of them.
pub fn decode_examples(data: &[u8]) {
    let examples = split::split_examples(data);
    for example in &examples {
        views::walk_example(example);
        views::walk_instance(example);
    }
    for (i, plan) in plans::all().iter().enumerate() {
        let fresh = fex::extract_examples(plan, &examples);
        if let Ok(out) = &fresh {
            invariants::check(plan, out, examples.len());
        }
        reused(i, data.len(), &fresh, |ex, out| {
            ex.extract(plan, fex::Input::Examples(&examples), fex::Policy::default(), out)
        });
    }
}

thread_local! {
    /// Scratch per plan, kept across inputs as a server thread keeps it.
    static SCRATCH: RefCell<Vec<(Extractor, Extracted)>> = const { RefCell::new(Vec::new()) };
    /// The longest input seen: old buffers keep the capacity it needed.
    static LONGEST_INPUT: Cell<usize> = const { Cell::new(0) };
}

/// Runs the same extraction on long-lived scratch: it must give exactly what a
/// fresh extraction gave, whatever the previous inputs left behind, and it
/// must not have grown a buffer past what the plan's output limit allows.
fn reused(
    plan_index: usize,
    input_len: usize,
    fresh: &Result<Extracted, ExtractError>,
    run: impl FnOnce(&mut Extractor, &mut Extracted) -> Result<(), ExtractError>,
) {
    let longest = LONGEST_INPUT.with(|l| l.replace(l.get().max(input_len)).max(input_len));
    SCRATCH.with_borrow_mut(|scratch| {
        scratch.resize_with(plans::all().len(), || (Extractor::new(), Extracted::default()));
        let (ex, out) = &mut scratch[plan_index];
        match (fresh, run(ex, out)) {
            // Compared as wire tensors, byte for byte: a NaN equals itself.
            (Ok(a), Ok(())) => {
                assert_eq!((a.batch_size, a.stats), (out.batch_size, out.stats), "reused scratch changed the result");
                assert_eq!(a.tensors(), out.tensors(), "reused scratch changed the result");
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "reused scratch changed the error"),
            (a, b) => panic!("fresh and reused extraction disagree: {:?} vs {:?}", a.as_ref().err(), b.err()),
        }
        let limit = plans::all()[plan_index].limits.max_output_bytes;
        invariants::check_capacity(out, limit, longest);
    });
}
