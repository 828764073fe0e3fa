//! Criteo preprocessing from the command line, as the Python tests drive it
//! (tests/python/test_criteo.py) until the `fex` command and the Python
//! binding exist:
//!
//! ```text
//! criteo fit VOCAB_DIR THRESHOLD DAY...        vocabularies of the training days
//! criteo dump OUT_DIR VOCAB_DIR|- BATCH FILE [NUM_EMBEDDINGS MIN_TABLE_SIZE SIZE]
//! ```
//!
//! `dump` reads FILE's first batch of BATCH rows (ids through the
//! vocabularies, or raw with `-`) and writes each buffer as raw
//! little-endian numbers, `OUT_DIR/<column>.<buffer>.bin`, with
//! `OUT_DIR/manifest.txt` listing `name dtype count` per buffer; with
//! NUM_EMBEDDINGS (comma-separated, 26) it also writes the multi-hot
//! expansion as `multi_hot.*`.

use std::io::{BufReader, Write};
use std::path::Path;

use fex::Values;
use fex::columns::{Column, KeyedJagged};
use fex::text::criteo::{self, CriteoReader, Fit, FitOptions};
use fex::text::deepx::ReadOptions;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("fit") if args.len() >= 4 => fit(&args[1], args[2].parse()?, &args[3..]),
        Some("dump") if args.len() == 5 || args.len() == 8 => dump(&args[1..]),
        _ => Err("usage: criteo fit VOCAB_DIR THRESHOLD DAY... | criteo dump OUT_DIR VOCAB_DIR|- BATCH FILE \
                  [NUM_EMBEDDINGS MIN_TABLE_SIZE SIZE]"
            .into()),
    }
}

fn fit(dir: &str, threshold: u32, days: &[String]) -> Result<()> {
    let mut fit = Fit::new(FitOptions { threshold, ..FitOptions::default() });
    for day in days {
        fit.add_input(BufReader::new(std::fs::File::open(day)?), day, ReadOptions::default())?;
    }
    fit.write(Path::new(dir))?;
    eprintln!("fitted {} rows; {} bytes held", fit.rows(), fit.bytes());
    Ok(())
}

fn dump(args: &[String]) -> Result<()> {
    let out = Path::new(&args[0]);
    std::fs::create_dir_all(out)?;
    let vocabs = if args[1] == "-" { None } else { Some(criteo::load_vocabs(Path::new(&args[1]))?) };
    let file = &args[3];
    let input = BufReader::new(std::fs::File::open(file)?);
    let mut reader = CriteoReader::new(input, file, vocabs, args[2].parse()?, ReadOptions::default());
    let batch = reader.next_batch()?.ok_or("no rows")?;
    let mut manifest = std::fs::File::create(out.join("manifest.txt"))?;
    for c in &batch {
        match &c.column {
            Column::Dense(d) => write(out, &mut manifest, &format!("{}.values", c.name), &d.values)?,
            Column::KeyedJagged(k) => kjt(out, &mut manifest, &c.name, k)?,
            _ => return Err("unexpected column".into()),
        }
    }
    if args.len() == 7 {
        let Column::KeyedJagged(k) = &batch[2].column else { return Err("no sparse".into()) };
        let n: Vec<u64> = args[4].split(',').map(str::parse).collect::<std::result::Result<_, _>>()?;
        let m = criteo::multi_hot(k, &n, args[5].parse()?, args[6].parse()?)?;
        kjt(out, &mut manifest, "multi_hot", &m)?;
    }
    Ok(())
}

fn kjt(out: &Path, manifest: &mut std::fs::File, name: &str, k: &KeyedJagged) -> Result<()> {
    write(out, manifest, &format!("{name}.values"), &k.values)?;
    write(out, manifest, &format!("{name}.lengths"), &Values::I32(k.lengths.clone()))?;
    write(out, manifest, &format!("{name}.offsets"), &Values::I64(k.offsets.clone()))?;
    writeln!(manifest, "{name}.keys {}", k.keys.join(","))?;
    writeln!(manifest, "{name}.stride {}", k.rows)?;
    Ok(())
}

fn write(out: &Path, manifest: &mut std::fs::File, name: &str, v: &Values) -> Result<()> {
    std::fs::write(out.join(format!("{name}.bin")), v.as_bytes())?;
    let dtype = match v {
        Values::U64(_) => "u8",
        Values::I64(_) => "i8",
        Values::I32(_) => "i4",
        Values::F32(_) => "f4",
        Values::F64(_) => "f8",
    };
    writeln!(manifest, "{name} {dtype} {}", v.len())?;
    Ok(())
}
