//! The progress bar (only when stderr is a terminal): bytes read against the
//! input's size with the ETA when the size is known, records and MB per
//! second; and the bad records, one line each, as they are found.

use std::io::IsTerminal;
use std::time::Instant;

use fex::offline::{BadRecord, Observer, Summary};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
}

impl Progress {
    pub fn new(total_bytes: Option<u64>, quiet: bool) -> Self {
        let started = Instant::now();
        if quiet || !std::io::stderr().is_terminal() {
            return Self { bar: None, started };
        }
        let bar = match total_bytes {
            Some(total) => {
                let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
                bar.set_style(
                    ProgressStyle::with_template(
                        "{bar:30} {decimal_bytes}/{decimal_total_bytes} {decimal_bytes_per_sec} ETA {eta} {msg}",
                    )
                    .expect("a valid template"),
                );
                bar
            }
            None => {
                let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {decimal_bytes} {decimal_bytes_per_sec} {msg}")
                        .expect("a valid template"),
                );
                bar
            }
        };
        Self { bar: Some(bar), started }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    pub fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

impl Observer for Progress {
    fn progress(&self, s: &Summary) {
        if let Some(bar) = &self.bar {
            bar.set_position(s.input_bytes);
            let rate = s.records as f64 / self.elapsed().max(1e-9);
            bar.set_message(format!("{} records ({rate:.0}/s), {} rows", s.records, s.rows_written));
        }
    }

    fn bad_record(&self, bad: &BadRecord) {
        let line = format!("bad record: {bad}");
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }
}
