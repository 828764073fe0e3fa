//! The `expr` operator against muParser itself, the engine behind FG's
//! expr_feature (FG's table of functions, operators and constants is
//! muParser's: TorchEasyRec docs/source/feature/feature.md, "ExprFeature").
//! scripts/muparser.sh builds tests/reference/muparser_driver.cpp over
//! Debian's libmuparser; random expressions over three inputs, and a list of
//! edge cases, must give the same 64 bits in both (any NaN for a NaN), and
//! the same verdict where one of them refuses the text.
//!
//! Left out on purpose, and held by src/ops/expr.rs's own tests and the
//! golden corpus instead: FG's additions, which muParser lacks (`floor`,
//! `ceil`, `trunc`, `round`, `roundp`, `sigmoid`, `|`, `&`, the vector
//! functions).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use fex::ops::Expr;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const INPUTS: [(&str, usize); 3] = [("a", 1), ("b", 1), ("c", 1)];

/// muParser's own functions (what FG's table has and muParser defines).
const FUNCTIONS: [(&str, usize); 24] = [
    ("sin", 1),
    ("cos", 1),
    ("tan", 1),
    ("asin", 1),
    ("acos", 1),
    ("atan", 1),
    ("sinh", 1),
    ("cosh", 1),
    ("tanh", 1),
    ("asinh", 1),
    ("acosh", 1),
    ("atanh", 1),
    ("log2", 1),
    ("log10", 1),
    ("log", 1),
    ("ln", 1),
    ("exp", 1),
    ("sqrt", 1),
    ("sign", 1),
    ("rint", 1),
    ("abs", 1),
    ("min", 0),
    ("max", 0),
    ("sum", 0),
];

const BINARY: [&str; 12] = ["||", "&&", "<=", ">=", "!=", "==", ">", "<", "+", "-", "*", "/"];

/// Values worth meeting: zeros of both signs, halves (rint), NaN, the
/// infinities, the domains' edges, and large and tiny magnitudes.
const VALUES: [&str; 16] =
    ["0", "-0", "1", "-1", "2", "0.5", "-2.5", "2.5", "3", "nan", "inf", "-inf", "1e300", "-1e-300", "0.75", "10"];

struct Gen(ChaCha8Rng);

impl Gen {
    fn value(&mut self) -> String {
        if self.0.random_bool(0.5) {
            VALUES[self.0.random_range(0..VALUES.len())].to_string()
        } else {
            format!("{}", self.0.random_range(-8.0..8.0f64))
        }
    }

    fn number(&mut self) -> String {
        ["2", "3", "4", "0.5", "1e-3", ".25", "10", "1", "0", "2.", "1e2"][self.0.random_range(0..11)].to_string()
    }

    fn atom(&mut self, depth: u32) -> String {
        let pick = if depth == 0 { self.0.random_range(0..2) } else { self.0.random_range(0..5) };
        match pick {
            0 => self.number(),
            1 => ["a", "b", "c"][self.0.random_range(0..3)].to_string(),
            2 | 3 => {
                let (name, arity) = FUNCTIONS[self.0.random_range(0..FUNCTIONS.len())];
                let n = if arity == 0 { self.0.random_range(1..4) } else { arity };
                let args: Vec<String> = (0..n).map(|_| self.expr(depth - 1)).collect();
                format!("{name}({})", args.join(", "))
            }
            _ => format!("({})", self.expr(depth - 1)),
        }
    }

    /// A term: an optional sign, an atom, maybe a power (itself maybe
    /// signed); the sign of a term may also follow a binary operator.
    fn term(&mut self, depth: u32) -> String {
        let sign = ["", "", "", "-", "+"][self.0.random_range(0..5)];
        let mut t = format!("{sign}{}", self.atom(depth));
        if self.0.random_bool(0.2) {
            let esign = ["", "", "-"][self.0.random_range(0..3)];
            t = format!("{t}^{esign}{}", self.atom(depth.saturating_sub(1)));
        }
        t
    }

    fn expr(&mut self, depth: u32) -> String {
        let mut s = self.term(depth);
        for _ in 0..self.0.random_range(0..4) {
            let op = BINARY[self.0.random_range(0..BINARY.len())];
            s = format!("{s} {op} {}", self.term(depth));
        }
        if depth > 0 && self.0.random_bool(0.15) {
            s = format!("{s} ? {} : {}", self.expr(depth - 1), self.expr(depth - 1));
        }
        s
    }
}

/// muParser's answer to each (text, values): Ok(bits) or Err(message).
fn reference(cases: &[(String, [String; 3])]) -> Vec<Result<u64, String>> {
    let root = env!("CARGO_MANIFEST_DIR");
    let built = Command::new("bash").arg(format!("{root}/scripts/muparser.sh")).output().expect("bash runs");
    assert!(
        built.status.success(),
        "scripts/muparser.sh could not build the reference (a Debian-family machine with g++ and apt-get):\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let driver = format!("{root}/{}", String::from_utf8_lossy(&built.stdout).trim());
    let mut child =
        Command::new(&driver).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("the driver starts");
    let mut input = String::new();
    for (text, v) in cases {
        input.push_str(&format!("{text}\ta={};b={};c={}\n", v[0], v[1], v[2]));
    }
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let version = lines.next().expect("a version line").expect("text");
    assert!(version.starts_with("muParser 2."), "{version}");
    let answers: Vec<Result<u64, String>> = lines
        .map(|l| {
            let l = l.expect("text");
            match l.strip_prefix("ok ") {
                Some(hex) => Ok(u64::from_str_radix(hex, 16).expect("hex bits")),
                None => Err(l),
            }
        })
        .collect();
    writer.join().expect("writer").expect("the driver read every case");
    assert!(child.wait().expect("exits").success());
    assert_eq!(answers.len(), cases.len(), "one answer per case");
    answers
}

fn parse_value(v: &str) -> f64 {
    match v {
        "nan" => f64::NAN,
        "inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        _ => v.parse().expect("a number"),
    }
}

/// fex's answer: the inputs not named in the text are left out (fex refuses
/// an unused input; muParser ignores one).
fn fex(text: &str, values: &[String; 3]) -> Result<u64, String> {
    let used: Vec<usize> = (0..3)
        .filter(|&i| {
            let name = INPUTS[i].0;
            text.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').any(|w| w == name)
        })
        .collect();
    let inputs: Vec<(&str, usize)> = used.iter().map(|&i| INPUTS[i]).collect();
    let e = Expr::parse(text, &inputs).map_err(|e| e.to_string())?;
    let columns: Vec<[f64; 1]> = used.iter().map(|&i| [parse_value(&values[i])]).collect();
    let columns: Vec<&[f64]> = columns.iter().map(|c| c.as_slice()).collect();
    Ok(e.eval(&columns, 1)[0].to_bits())
}

fn same(a: &Result<u64, String>, b: &Result<u64, String>) -> bool {
    match (a, b) {
        (Ok(x), Ok(y)) => x == y || (f64::from_bits(*x).is_nan() && f64::from_bits(*y).is_nan()),
        (Err(_), Err(_)) => true,
        _ => false,
    }
}

fn compare(cases: Vec<(String, [String; 3])>) {
    let want = reference(&cases);
    let mut wrong = Vec::new();
    for ((text, values), want) in cases.iter().zip(&want) {
        let got = fex(text, values);
        if !same(&got, want) {
            let show = |r: &Result<u64, String>| match r {
                Ok(bits) => format!("{:e} ({bits:016x})", f64::from_bits(*bits)),
                Err(e) => format!("error: {e}"),
            };
            wrong.push(format!("{text:?} with {values:?}: fex {}, muParser {}", show(&got), show(want)));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        cases.len(),
        wrong[..wrong.len().min(20)].join("\n")
    );
}

#[test]
fn random_expressions_match_muparser() {
    let mut g = Gen(ChaCha8Rng::seed_from_u64(36));
    let cases: Vec<(String, [String; 3])> =
        (0..6000).map(|i| (g.expr(1 + i % 4), [g.value(), g.value(), g.value()])).collect();
    compare(cases);
}

#[test]
fn edge_cases_match_muparser() {
    let texts = [
        "-a^2",
        "a^b^c",
        "a^-b",
        "-a^-b",
        "2^-a^2",
        "a*-b",
        "a - -b",
        "- -a",
        "--a",
        "+a",
        "a ? b : c",
        "a ? b : c ? a : b",
        "a + b ? 1 : 0",
        "(a) ? 2 : 3",
        "a < b < c",
        "a == b == c",
        "a || b && c",
        "a && b || c",
        "a^2",
        "a^3",
        "a^4",
        "a^5",
        "a^2.5",
        "(a+0)^3",
        "a*2",
        "2*a",
        "a*2+3",
        "a/2",
        "a+0",
        "0+a",
        "a-0",
        "-a+0",
        "rint(a)",
        "sign(a)",
        "abs(a)",
        "min(a, b, c)",
        "max(a, b, c)",
        "min(a)",
        "sum(a, b, c)",
        "avg(a, b, c)",
        "log(a)",
        "ln(a)",
        "log2(a)",
        "log10(a)",
        "sqrt(a)",
        "exp(a)",
        "asinh(a)",
        "acosh(a)",
        "atanh(a)",
        "sinh(a)",
        "cosh(a)",
        "tanh(a)",
        "asin(a)",
        "acos(a)",
        "atan(a)",
        "sin(a)",
        "cos(a)",
        "tan(a)",
        "_e * a",
        "_pi * a",
        "sin(_pi) + a",
        "1e-400 + a",
        "a / 0",
        "-a / 0",
        "0 / 0 + a",
        "a ? 1",
        "a +",
        "(a",
        "a)",
        "max()",
        "sin(a, b)",
        "a b",
        "2a",
        "a(b)",
        "1.5.5 + a",
        ".5 + a",
        "5. + a",
        "1e+2 * a",
        "1E2 * a",
    ];
    let mut cases = Vec::new();
    for text in texts {
        for values in [["2", "3", "4"], ["-0", "0", "nan"], ["2.5", "-2.5", "0.5"], ["inf", "-inf", "1e300"]] {
            cases.push((text.to_string(), values.map(String::from)));
        }
    }
    compare(cases);
}
