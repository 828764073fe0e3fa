//! `expr`: an arithmetic expression over dense inputs, FG's `expr_feature`.
//!
//! The language is FG's, which is muParser's (FG's table of functions,
//! operators and constants is muParser's, word for word) with FG's
//! additions: `floor`, `ceil`, `trunc`, `round`, `roundp`, `sigmoid`, the
//! bitwise `|` and `&`, and functions of whole vectors (`dot`, `len`,
//! `reduce_sum`, ...). An expression is parsed and checked once, when the
//! config loads ([`Expr::parse`]), into a flat program; [`Expr::eval`]
//! runs each step of it over every element of the batch at once, so no
//! syntax tree is walked per row.
//!
//! Values are f64 throughout, as in muParser. Each value is a vector of a
//! fixed width per row: an input's width is its dense width, a number is
//! width 1, and an element-wise step on widths 1 and w gives w (the width-1
//! side stands for every element). Vector functions reduce a row's vector
//! to one value. With a float sequence among the inputs the same program
//! runs over positions instead of rows (`expr_seq`).

use std::fmt;

use super::ids::is_sequence;
use super::rows::row_of;
use super::{Budget, Inputs};
use crate::columns::{Column, Values};
use crate::error::{ErrorKind, ExtractError};

/// Deepest nesting of parentheses and operators; deeper is refused, not
/// recursed into.
const MAX_DEPTH: usize = 200;
/// `_pi` as muParser 2.3 built with GCC has it (muParserTemplateMagic.h:
/// "too precise a pi makes sin(pi*a) 10 times slower").
#[allow(clippy::approx_constant)]
const MUPARSER_PI: f64 = 3.141592653589;
/// Longest expression text accepted.
pub const MAX_LEN: usize = 16 * 1024;

/// A compiled expression: its text (what the model's identity hashes) and
/// its program.
#[derive(Clone)]
pub struct Expr {
    pub text: String,
    /// The width of each input, by position in the op's `inputs`.
    pub widths: Vec<usize>,
    /// The width of the result.
    pub width: usize,
    code: Vec<Step>,
}

impl PartialEq for Expr {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text && self.widths == other.widths
    }
}

impl fmt::Debug for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Expr").field("text", &self.text).field("widths", &self.widths).finish()
    }
}

/// Why an expression does not compile: a message and the 0-based byte
/// offset in the text it is about.
#[derive(Debug, Clone, PartialEq)]
pub struct ExprError {
    pub at: usize,
    pub message: String,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at offset {}: {}", self.at, self.message)
    }
}

/// One step of the program, on a stack of values.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Input(usize),
    Number(f64),
    /// `input * mul + add`: muParser's optimizer folds `a*2`, `a+1`,
    /// `2*a - 3`, `a+a` ... into this one step (cmVARMUL), whose `+ add`
    /// turns a -0 into +0 where plain arithmetic would keep it.
    Linear(usize, f64, f64),
    /// muParser's `v^2`, `v^3`, `v^4` of a plain input (and `v*v`):
    /// products, not pow (its bytecode's cmVARPOW2..4).
    InputPow(usize, u8),
    Unary(F1),
    Binary(F2),
    /// `c ? a : b` on the top three values.
    Select,
    /// min / max / sum / avg over the top `n` values.
    Many(Fold, usize),
    /// A function of the row's whole vector.
    Reduce(R1),
    Reduce2(R2),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum F1 {
    Neg,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    Log2,
    Log10,
    Ln,
    Exp,
    Sqrt,
    Sign,
    Rint,
    Abs,
    Floor,
    Ceil,
    Trunc,
    Round,
    Sigmoid,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum F2 {
    Or,
    And,
    BitOr,
    BitAnd,
    Le,
    Ge,
    Ne,
    Eq,
    Gt,
    Lt,
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    RoundP,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fold {
    Min,
    Max,
    Sum,
    Avg,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum R1 {
    Len,
    L2Norm,
    SquaredNorm,
    StdDev,
    PopStdDev,
    Variance,
    PopVariance,
    Min,
    Max,
    Sum,
    Mean,
    Prod,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum R2 {
    Dot,
    EuclidDist,
}

/// What a name in call position is.
enum Func {
    One(F1),
    Two(F2),
    Many(Fold),
    Reduce(R1),
    Reduce2(R2),
}

fn function(name: &str) -> Option<Func> {
    use F1::*;
    Some(match name {
        "sin" => Func::One(Sin),
        "cos" => Func::One(Cos),
        "tan" => Func::One(Tan),
        "asin" => Func::One(Asin),
        "acos" => Func::One(Acos),
        "atan" => Func::One(Atan),
        "sinh" => Func::One(Sinh),
        "cosh" => Func::One(Cosh),
        "tanh" => Func::One(Tanh),
        "asinh" => Func::One(Asinh),
        "acosh" => Func::One(Acosh),
        "atanh" => Func::One(Atanh),
        "log2" => Func::One(Log2),
        "log10" => Func::One(Log10),
        "log" | "ln" => Func::One(Ln),
        "exp" => Func::One(Exp),
        "sqrt" => Func::One(Sqrt),
        "sign" => Func::One(Sign),
        "rint" => Func::One(Rint),
        "abs" => Func::One(Abs),
        "floor" => Func::One(Floor),
        "ceil" => Func::One(Ceil),
        "trunc" => Func::One(Trunc),
        "round" => Func::One(Round),
        "sigmoid" => Func::One(Sigmoid),
        "roundp" => Func::Two(F2::RoundP),
        "min" => Func::Many(Fold::Min),
        "max" => Func::Many(Fold::Max),
        "sum" => Func::Many(Fold::Sum),
        "avg" => Func::Many(Fold::Avg),
        "len" => Func::Reduce(R1::Len),
        "l2_norm" => Func::Reduce(R1::L2Norm),
        "squared_norm" => Func::Reduce(R1::SquaredNorm),
        "std_dev" => Func::Reduce(R1::StdDev),
        "pop_std_dev" => Func::Reduce(R1::PopStdDev),
        "variance" => Func::Reduce(R1::Variance),
        "pop_variance" => Func::Reduce(R1::PopVariance),
        "reduce_min" => Func::Reduce(R1::Min),
        "reduce_max" => Func::Reduce(R1::Max),
        "reduce_sum" => Func::Reduce(R1::Sum),
        "reduce_mean" => Func::Reduce(R1::Mean),
        "reduce_prod" => Func::Reduce(R1::Prod),
        "dot" => Func::Reduce2(R2::Dot),
        "euclid_dist" => Func::Reduce2(R2::EuclidDist),
        _ => return None,
    })
}

/// FG functions fex refuses, and why.
fn refused(name: &str) -> Option<&'static str> {
    match name {
        "rnd" => Some("rnd is random: a feature must be the same online, offline and near-line"),
        "sphere_dist" | "haversine" => {
            Some("FG does not say in which unit it returns distances; fex does not guess (not supported)")
        }
        _ => None,
    }
}

/// Binary operators by muParser's precedence (FG's table): a higher level
/// binds tighter. `^` is right-associative, the others left.
fn binary(op: &str) -> Option<(u8, F2)> {
    use F2::*;
    Some(match op {
        "||" => (1, Or),
        "&&" => (2, And),
        "|" => (3, BitOr),
        "&" => (4, BitAnd),
        "<=" => (5, Le),
        ">=" => (5, Ge),
        "!=" => (5, Ne),
        "==" => (5, Eq),
        ">" => (5, Gt),
        "<" => (5, Lt),
        "+" => (6, Add),
        "-" => (6, Sub),
        "*" => (7, Mul),
        "/" => (7, Div),
        _ => return None,
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Name(String),
    Op(&'static str),
    Open,
    Close,
    Comma,
    Question,
    Colon,
    End,
}

fn lex(text: &str) -> Result<Vec<(usize, Tok)>, ExprError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |at, message: String| Err(ExprError { at, message });
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || c == b'.' {
            // muParser's numbers: digits, a point, digits, an exponent.
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i < b.len() && b[i] == b'.' {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                let mut j = i + 1;
                if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                    j += 1;
                }
                if j < b.len() && b[j].is_ascii_digit() {
                    while j < b.len() && b[j].is_ascii_digit() {
                        j += 1;
                    }
                    i = j;
                }
            }
            let s = &text[start..i];
            match s.parse::<f64>() {
                Ok(x) if x.is_finite() => out.push((start, Tok::Num(x))),
                _ => return err(start, format!("{s:?} is not a finite number")),
            }
            if i < b.len() && (b[i].is_ascii_alphabetic() || b[i] == b'_') {
                return err(i, format!("a name right after the number {s:?}"));
            }
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((start, Tok::Name(text[start..i].to_string())));
            continue;
        }
        let two = if i + 1 < b.len() { &text[i..i + 2] } else { "" };
        if let Some(op) = ["||", "&&", "<=", ">=", "!=", "=="].into_iter().find(|op| *op == two) {
            out.push((start, Tok::Op(op)));
            i += 2;
            continue;
        }
        let tok = match c {
            b'(' => Tok::Open,
            b')' => Tok::Close,
            b',' => Tok::Comma,
            b'?' => Tok::Question,
            b':' => Tok::Colon,
            b'|' => Tok::Op("|"),
            b'&' => Tok::Op("&"),
            b'<' => Tok::Op("<"),
            b'>' => Tok::Op(">"),
            b'+' => Tok::Op("+"),
            b'-' => Tok::Op("-"),
            b'*' => Tok::Op("*"),
            b'/' => Tok::Op("/"),
            b'^' => Tok::Op("^"),
            b'=' => return err(i, "assignment (=) is not an expression; compare with ==".into()),
            b'!' => return err(i, "! is not an operator here; compare with == 0".into()),
            _ => {
                let ch = text[i..].chars().next().unwrap_or('?');
                return err(i, format!("unexpected character {ch:?}"));
            }
        };
        out.push((start, tok));
        i += 1;
    }
    out.push((text.len(), Tok::End));
    Ok(out)
}

/// The parser: precedence climbing over the tokens, emitting steps and
/// tracking each value's width.
struct Parser<'a> {
    toks: Vec<(usize, Tok)>,
    at: usize,
    inputs: &'a [(&'a str, usize)],
    used: Vec<bool>,
    code: Vec<Step>,
    /// The width of each value on the stack as the program runs.
    widths: Vec<usize>,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.at].1
    }

    fn offset(&self) -> usize {
        self.toks[self.at].0
    }

    fn fail<T>(&self, at: usize, message: impl Into<String>) -> Result<T, ExprError> {
        Err(ExprError { at, message: message.into() })
    }

    fn enter(&mut self) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.fail(self.offset(), format!("nested deeper than {MAX_DEPTH} levels"));
        }
        Ok(())
    }

    fn push(&mut self, step: Step, width: usize) {
        self.code.push(step);
        self.widths.push(width);
    }

    /// A function of one value; of a number, folded into a number (muParser
    /// folds its fixed-arity functions of constants when it compiles).
    fn emit_unary(&mut self, f: F1, width: usize) {
        if let Some(&Step::Number(x)) = self.code.last() {
            self.code.pop();
            self.push(Step::Number(unary(f, x)), width);
        } else {
            self.push(Step::Unary(f), width);
        }
    }

    /// A binary operator (or two-argument function) as muParser's bytecode
    /// optimizer emits it: two numbers folded, and its rewrites of an input
    /// and numbers (ParserByteCode::AddOp in muParser 2.3) into one step.
    fn emit_binary(&mut self, f: F2, width: usize) {
        let n = self.code.len();
        let step = match self.code[n - 2..] {
            [Step::Number(x), Step::Number(y)] => Step::Number(fold(f, x, y)),
            [x, y] => match optimized(f, x, y) {
                Some(step) => step,
                None => {
                    self.push(Step::Binary(f), width);
                    return;
                }
            },
            _ => unreachable!("two values"),
        };
        self.code.truncate(n - 2);
        self.push(step, width);
    }

    /// Pops `n` widths and gives the element-wise width of their
    /// combination: equal widths, or 1 beside w.
    fn combine(&mut self, n: usize, at: usize, what: &str) -> Result<usize, ExprError> {
        let args = self.widths.split_off(self.widths.len() - n);
        let w = args.iter().copied().max().unwrap_or(1);
        if args.iter().any(|&x| x != 1 && x != w) {
            return self.fail(at, format!("{what} on vectors of different widths {args:?}"));
        }
        Ok(w)
    }

    /// expression := or ('?' expression ':' expression)?
    fn expression(&mut self) -> Result<(), ExprError> {
        self.enter()?;
        self.binary(1)?;
        if *self.peek() == Tok::Question {
            let at = self.offset();
            self.at += 1;
            self.expression()?;
            if *self.peek() != Tok::Colon {
                return self.fail(self.offset(), "the ? here has no : (if-then-else needs an else)");
            }
            self.at += 1;
            self.expression()?;
            let w = self.combine(3, at, "?:")?;
            self.push(Step::Select, w);
        }
        self.depth -= 1;
        Ok(())
    }

    /// Left-associative binary operators of `level` and tighter.
    fn binary(&mut self, level: u8) -> Result<(), ExprError> {
        if level > 7 {
            return self.unary();
        }
        self.binary(level + 1)?;
        while let Tok::Op(op) = *self.peek() {
            let Some((l, f)) = binary(op) else { break };
            if l != level {
                break;
            }
            let at = self.offset();
            self.at += 1;
            self.enter()?;
            self.binary(level + 1)?;
            self.depth -= 1;
            let w = self.combine(2, at, op)?;
            self.emit_binary(f, w);
        }
        Ok(())
    }

    /// unary := ('-' | '+') power | power. muParser's sign binds looser than
    /// `^` (`-2^2` is -4) and takes no second sign (`--a` is an error).
    fn unary(&mut self) -> Result<(), ExprError> {
        match *self.peek() {
            Tok::Op(sign @ ("-" | "+")) => {
                self.at += 1;
                if let Tok::Op("-" | "+") = self.peek() {
                    return self.fail(self.offset(), "two signs in a row; write -(-a)");
                }
                self.enter()?;
                self.power()?;
                self.depth -= 1;
                // A unary plus is no step at all (muParser drops it).
                if sign == "-" {
                    let w = self.combine(1, 0, "-")?;
                    self.emit_unary(F1::Neg, w);
                }
                Ok(())
            }
            _ => self.power(),
        }
    }

    /// power := atom ('^' unary)?, right-associative.
    fn power(&mut self) -> Result<(), ExprError> {
        self.atom()?;
        if *self.peek() == Tok::Op("^") {
            let at = self.offset();
            self.at += 1;
            self.enter()?;
            self.unary()?;
            self.depth -= 1;
            let w = self.combine(2, at, "^")?;
            self.emit_binary(F2::Pow, w);
        }
        Ok(())
    }

    fn atom(&mut self) -> Result<(), ExprError> {
        let at = self.offset();
        match self.peek().clone() {
            Tok::Num(x) => {
                self.at += 1;
                self.push(Step::Number(x), 1);
            }
            Tok::Open => {
                self.at += 1;
                self.expression()?;
                if *self.peek() != Tok::Close {
                    return self.fail(self.offset(), format!("the ( at offset {at} is not closed"));
                }
                self.at += 1;
            }
            Tok::Name(name) => {
                self.at += 1;
                if *self.peek() == Tok::Open {
                    return self.call(&name, at);
                }
                match name.as_str() {
                    // muParser 2.3 built with GCC (as FG is, on Linux) has
                    // _pi = 3.141592653589 (muParserTemplateMagic.h,
                    // CONST_PI); FG's table prints muParser's documented
                    // 3.141592653589793238462643. fex follows the engine.
                    "_pi" => self.push(Step::Number(MUPARSER_PI), 1),
                    "_e" => self.push(Step::Number(std::f64::consts::E), 1),
                    _ => {
                        let Some(i) = self.inputs.iter().position(|(n, _)| *n == name) else {
                            if function(&name).is_some() || refused(&name).is_some() {
                                return self.fail(at, format!("{name} is a function; call it as {name}(...)"));
                            }
                            let names: Vec<&str> = self.inputs.iter().map(|(n, _)| *n).collect();
                            return self.fail(at, format!("unknown name {name:?}; the inputs are {names:?}"));
                        };
                        self.used[i] = true;
                        self.push(Step::Input(i), self.inputs[i].1);
                    }
                }
            }
            Tok::End => return self.fail(at, "the expression ends where a value was expected"),
            other => return self.fail(at, format!("expected a value, found {}", describe(&other))),
        }
        Ok(())
    }

    fn call(&mut self, name: &str, at: usize) -> Result<(), ExprError> {
        if let Some(why) = refused(name) {
            return self.fail(at, why);
        }
        let Some(func) = function(name) else {
            return self.fail(at, format!("unknown function {name:?}"));
        };
        self.at += 1; // (
        let mut n = 0;
        if *self.peek() != Tok::Close {
            loop {
                self.expression()?;
                n += 1;
                match self.peek() {
                    Tok::Comma => self.at += 1,
                    Tok::Close => break,
                    Tok::End => {
                        return self.fail(self.offset(), format!("the call of {name} at offset {at} is not closed"));
                    }
                    other => {
                        let found = describe(other);
                        return self
                            .fail(self.offset(), format!("expected , or ) in the call of {name}, found {found}"));
                    }
                }
            }
        }
        self.at += 1; // )
        let (min, max) = match func {
            Func::One(_) | Func::Reduce(_) => (1, 1),
            Func::Two(_) | Func::Reduce2(_) => (2, 2),
            Func::Many(_) => (1, usize::MAX),
        };
        if n < min || n > max {
            let want = if max == usize::MAX { format!("at least {min}") } else { format!("{min}") };
            return self.fail(at, format!("{name} takes {want} argument(s), found {n}"));
        }
        match func {
            Func::One(f) => {
                let w = self.combine(1, at, name)?;
                self.emit_unary(f, w);
            }
            Func::Two(f) => {
                let w = self.combine(2, at, name)?;
                self.emit_binary(f, w);
            }
            Func::Many(f) => {
                let w = self.combine(n, at, name)?;
                self.push(Step::Many(f, n), w);
            }
            Func::Reduce(f) => {
                self.widths.pop();
                self.push(Step::Reduce(f), 1);
            }
            Func::Reduce2(f) => {
                let args = self.widths.split_off(self.widths.len() - 2);
                if args[0] != args[1] {
                    return self.fail(at, format!("{name} of vectors of different widths {args:?}"));
                }
                self.push(Step::Reduce2(f), 1);
            }
        }
        Ok(())
    }
}

/// A step as muParser's (variable, multiplier, offset) triple: an input
/// is (i, 1, 0), a number (none, 0, c), a linear step itself.
fn linear(s: Step) -> Option<(Option<usize>, f64, f64)> {
    match s {
        Step::Input(i) => Some((Some(i), 1.0, 0.0)),
        Step::Number(c) => Some((None, 0.0, c)),
        Step::Linear(i, m, a) => Some((Some(i), m, a)),
        _ => None,
    }
}

/// muParser's rewrites of `x f y` (the last two steps) into one step, or
/// None where it leaves the operator as it is.
fn optimized(f: F2, x: Step, y: Step) -> Option<Step> {
    use Step::{Input, InputPow, Linear, Number};
    let same = |p: Option<usize>, q: Option<usize>| p.is_some() && p == q;
    let ((px, mx, ax), (py, my, ay)) = (linear(x)?, linear(y)?);
    let var = px.or(py)?;
    match f {
        F2::Add | F2::Sub => {
            let with_number = matches!((x, y), (Number(_), Input(_) | Linear(..)) | (Input(_) | Linear(..), Number(_)));
            if !with_number && !same(px, py) {
                return None;
            }
            let sign = if f == F2::Sub { -1.0 } else { 1.0 };
            Some(Linear(var, mx + sign * my, ax + sign * ay))
        }
        F2::Mul => match (x, y) {
            (Input(_), Number(_)) | (Number(_), Input(_)) => Some(Linear(var, ax + ay, 0.0)),
            (Linear(..), Number(c)) => Some(Linear(var, mx * c, ax * c)),
            (Number(c), Linear(..)) => Some(Linear(var, my * c, ay * c)),
            (Input(i), Input(j)) if i == j => Some(InputPow(i, 2)),
            _ => None,
        },
        F2::Div => match (x, y) {
            (Linear(..), Number(c)) if c != 0.0 => Some(Linear(var, mx / c, ax / c)),
            _ => None,
        },
        F2::Pow => match (x, y) {
            (Input(i), Number(c)) => match c {
                0.0 => Some(Number(1.0)),
                1.0 => Some(Input(i)),
                2.0 => Some(InputPow(i, 2)),
                3.0 => Some(InputPow(i, 3)),
                4.0 => Some(InputPow(i, 4)),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// `x f y` of two numbers, folded when the expression compiles. As in
/// muParser's folding (ParserByteCode::ConstantFolding), `&&` and `||`
/// here take their operands as integers, so `0.5 && 1` folds to 0 where
/// `a && 1` with a = 0.5 runs to 1.
fn fold(f: F2, x: f64, y: f64) -> f64 {
    match f {
        F2::And => flag(truth_as_int(x) && truth_as_int(y)),
        F2::Or => flag(truth_as_int(x) || truth_as_int(y)),
        _ => binary_eval(f, x, y),
    }
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Num(x) => format!("the number {x}"),
        Tok::Name(n) => format!("the name {n:?}"),
        Tok::Op(op) => format!("the operator {op}"),
        Tok::Open => "(".into(),
        Tok::Close => ")".into(),
        Tok::Comma => "a comma".into(),
        Tok::Question => "?".into(),
        Tok::Colon => ":".into(),
        Tok::End => "the end".into(),
    }
}

impl Expr {
    /// Parses `text` over inputs given as (name, width); every input must
    /// be used.
    pub fn parse(text: &str, inputs: &[(&str, usize)]) -> Result<Expr, ExprError> {
        if text.len() > MAX_LEN {
            return Err(ExprError { at: MAX_LEN, message: format!("longer than {MAX_LEN} bytes") });
        }
        if text.trim().is_empty() {
            return Err(ExprError { at: 0, message: "the expression is empty".into() });
        }
        let mut p = Parser {
            toks: lex(text)?,
            at: 0,
            inputs,
            used: vec![false; inputs.len()],
            code: Vec::new(),
            widths: Vec::new(),
            depth: 0,
        };
        p.expression()?;
        if *p.peek() != Tok::End {
            let found = describe(p.peek());
            let hint = if *p.peek() == Tok::Comma { " (one expression only)" } else { "" };
            return p.fail(p.offset(), format!("unexpected {found} after a complete expression{hint}"));
        }
        if let Some(i) = p.used.iter().position(|u| !u) {
            return p.fail(0, format!("input {:?} is not used by the expression", inputs[i].0));
        }
        let width = p.widths.pop().unwrap_or(1);
        Ok(Expr { text: text.to_string(), widths: inputs.iter().map(|i| i.1).collect(), width, code: p.code })
    }

    /// Evaluates over `rows` rows; `inputs[i]` holds `rows * widths[i]`
    /// values, row-major. Returns `rows * width` values.
    pub fn eval(&self, inputs: &[&[f64]], rows: usize) -> Vec<f64> {
        self.run(&mut Scratch::default(), inputs, rows)
    }

    /// [`Expr::eval`] on buffers from `scratch`; the result is one of them
    /// (give it back with [`Scratch::give`]).
    fn run(&self, scratch: &mut Scratch, inputs: &[&[f64]], rows: usize) -> Vec<f64> {
        let mut stack = std::mem::take(&mut scratch.stack);
        for step in &self.code {
            let v = match *step {
                Step::Input(i) => {
                    let mut b = scratch.take();
                    b.extend_from_slice(inputs[i]);
                    (self.widths[i], b)
                }
                Step::Number(x) => {
                    let mut b = scratch.take();
                    b.resize(rows, x);
                    (1, b)
                }
                Step::Linear(i, m, a) => {
                    let mut b = scratch.take();
                    b.extend(inputs[i].iter().map(|x| x * m + a));
                    (self.widths[i], b)
                }
                Step::InputPow(i, n) => {
                    let mut b = scratch.take();
                    let x = inputs[i];
                    match n {
                        2 => b.extend(x.iter().map(|v| v * v)),
                        3 => b.extend(x.iter().map(|v| v * v * v)),
                        _ => b.extend(x.iter().map(|v| v * v * v * v)),
                    }
                    (self.widths[i], b)
                }
                Step::Unary(f) => {
                    let (w, mut b) = stack.pop().expect("compiled with one value");
                    map1(f, &mut b);
                    (w, b)
                }
                Step::Binary(f) => {
                    let b = stack.pop().expect("compiled with two values");
                    let a = stack.pop().expect("compiled with two values");
                    let (kept, spare) = map2(f, rows, a, b);
                    scratch.give(spare);
                    kept
                }
                Step::Select => {
                    let mut out = scratch.take();
                    let args = stack.split_off(stack.len() - 3);
                    let w = gather(rows, &args, &mut out, |v| if v[0] != 0.0 { v[1] } else { v[2] });
                    args.into_iter().for_each(|(_, b)| scratch.give(b));
                    (w, out)
                }
                Step::Many(f, n) => {
                    let mut out = scratch.take();
                    let args = stack.split_off(stack.len() - n);
                    let w = gather(rows, &args, &mut out, |v| fold_many(f, v));
                    args.into_iter().for_each(|(_, b)| scratch.give(b));
                    (w, out)
                }
                Step::Reduce(f) => {
                    let (w, b) = stack.pop().expect("compiled with one value");
                    let mut out = scratch.take();
                    out.extend(b.chunks_exact(w.max(1)).map(|row| reduce(f, row)));
                    scratch.give(b);
                    (1, out)
                }
                Step::Reduce2(f) => {
                    let (w, b) = stack.pop().expect("compiled with two values");
                    let (_, a) = stack.pop().expect("compiled with two values");
                    let mut out = scratch.take();
                    let w = w.max(1);
                    out.extend(a.chunks_exact(w).zip(b.chunks_exact(w)).map(|(x, y)| reduce2(f, x, y)));
                    scratch.give(a);
                    scratch.give(b);
                    (1, out)
                }
            };
            stack.push(v);
        }
        let (w, data) = stack.pop().expect("an expression leaves one value");
        scratch.stack = stack;
        if w == self.width {
            return data;
        }
        let mut wide = scratch.take();
        wide.extend((0..rows * self.width).map(|i| data[i / self.width]));
        scratch.give(data);
        wide
    }
}

/// Buffers an evaluation reuses: each thread keeps its own, so steady-state
/// extraction allocates nothing here either.
#[derive(Default)]
pub(super) struct Scratch {
    free: Vec<Vec<f64>>,
    stack: Vec<(usize, Vec<f64>)>,
    inputs: Vec<Vec<f64>>,
}

impl Scratch {
    fn take(&mut self) -> Vec<f64> {
        let mut b = self.free.pop().unwrap_or_default();
        b.clear();
        b
    }

    fn give(&mut self, b: Vec<f64>) {
        self.free.push(b);
    }
}

/// Runs `e` over the inputs' rows into `out` (reset by the caller): dense,
/// or, when an input is a sequence, per position (`expr_seq`).
pub(super) fn apply(
    e: &Expr,
    inputs: Inputs<'_>,
    name: &str,
    out: &mut Column,
    rows: usize,
    budget: Budget<'_>,
) -> Result<(), ExtractError> {
    super::rows::with_scratch(|scratch: &mut Scratch| {
        if inputs.iter().any(|i| is_sequence(&i.column)) {
            super::expr_seq::apply(scratch, e, inputs, (name, rows), out, budget)
        } else {
            apply_with(scratch, e, inputs, out, rows)
        }
    })
}

fn apply_with(
    scratch: &mut Scratch,
    e: &Expr,
    inputs: Inputs<'_>,
    out: &mut Column,
    rows: usize,
) -> Result<(), ExtractError> {
    let columns = gather_inputs(scratch, e, inputs, |c, w, v| {
        let Some(values) = c.values() else { return };
        if c.rows() == rows {
            values.extend_f64(v, 0..rows * w);
        } else {
            for r in 0..rows {
                let base = row_of(c, r) * w;
                values.extend_f64(v, base..base + w);
            }
        }
    })?;
    run_into(scratch, e, columns, rows, &mut out.dense_mut().values);
    Ok(())
}

/// Each input's values as the program reads them, from `fill` (the
/// column, its width, the buffer); an input whose width is not the one
/// the expression was compiled for is an error.
pub(super) fn gather_inputs(
    scratch: &mut Scratch,
    e: &Expr,
    inputs: Inputs<'_>,
    mut fill: impl FnMut(&Column, usize, &mut Vec<f64>),
) -> Result<Vec<Vec<f64>>, ExtractError> {
    let mut columns = std::mem::take(&mut scratch.inputs);
    for (named, &w) in inputs.iter().zip(&e.widths) {
        let c = &named.column;
        let found = match c {
            Column::Ragged(r) => r.width.unwrap_or(1),
            _ => c.row_width(),
        };
        if found != w {
            let message = format!("has {found} values per row where the expression was compiled for {w}");
            columns.into_iter().for_each(|b| scratch.give(b));
            return Err(ErrorKind::Operator { name: named.name.clone(), message }.into());
        }
        let mut v = scratch.take();
        fill(c, w, &mut v);
        columns.push(v);
    }
    Ok(columns)
}

/// Runs `e` over `rows` rows of gathered inputs, appends the result to
/// `out` and gives every buffer back to `scratch`.
pub(super) fn run_into(scratch: &mut Scratch, e: &Expr, mut columns: Vec<Vec<f64>>, rows: usize, out: &mut Values) {
    // The config allows at most MAX_INPUTS inputs: their views fit on the stack.
    let mut views: [&[f64]; super::MAX_INPUTS] = [&[]; super::MAX_INPUTS];
    for (view, column) in views.iter_mut().zip(&columns) {
        *view = column;
    }
    let result = e.run(scratch, &views[..columns.len()], rows);
    match out {
        Values::F32(v) => v.extend(result.iter().map(|&x| x as f32)),
        Values::F64(v) => v.extend_from_slice(&result),
        other => result.iter().for_each(|&x| other.push_f64(x)),
    }
    scratch.give(result);
    columns.drain(..).for_each(|b| scratch.give(b));
    scratch.inputs = columns;
}

/// `f` on every element, in place, the function chosen once per step.
fn map1(f: F1, b: &mut [f64]) {
    macro_rules! each {
        ($($v:ident),*) => {
            match f {
                $(F1::$v => b.iter_mut().for_each(|x| *x = unary(F1::$v, *x)),)*
            }
        };
    }
    each!(
        Neg, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Tanh, Asinh, Acosh, Atanh, Log2, Log10, Ln, Exp, Sqrt, Sign,
        Rint, Abs, Floor, Ceil, Trunc, Round, Sigmoid
    )
}

/// `a f b` element-wise, a width-1 side standing for every element of its
/// row; returns the result (in one of the two buffers) and the other.
fn map2(f: F2, rows: usize, a: (usize, Vec<f64>), b: (usize, Vec<f64>)) -> ((usize, Vec<f64>), Vec<f64>) {
    fn go(
        rows: usize,
        a: (usize, Vec<f64>),
        b: (usize, Vec<f64>),
        op: impl Fn(f64, f64) -> f64,
    ) -> ((usize, Vec<f64>), Vec<f64>) {
        let ((wa, mut x), (wb, mut y)) = (a, b);
        if wa == wb {
            x.iter_mut().zip(&y).for_each(|(p, q)| *p = op(*p, *q));
            ((wa, x), y)
        } else if wa == 1 {
            for r in 0..rows {
                let s = x[r];
                y[r * wb..(r + 1) * wb].iter_mut().for_each(|q| *q = op(s, *q));
            }
            ((wb, y), x)
        } else {
            for r in 0..rows {
                let s = y[r];
                x[r * wa..(r + 1) * wa].iter_mut().for_each(|p| *p = op(*p, s));
            }
            ((wa, x), y)
        }
    }
    macro_rules! each {
        ($($v:ident),*) => {
            match f {
                $(F2::$v => go(rows, a, b, |p, q| binary_eval(F2::$v, p, q)),)*
            }
        };
    }
    each!(Or, And, BitOr, BitAnd, Le, Ge, Ne, Eq, Gt, Lt, Add, Sub, Mul, Div, Pow, RoundP)
}

/// Each element of the result from the same element of every argument (a
/// width-1 argument standing for every element of its row), into `out`;
/// returns the result's width.
fn gather(rows: usize, args: &[(usize, Vec<f64>)], out: &mut Vec<f64>, f: impl Fn(&[f64]) -> f64) -> usize {
    let w = args.iter().map(|a| a.0).max().unwrap_or(1);
    let mut v = [0.0; 64];
    let mut many = Vec::new();
    let slots: &mut [f64] = if args.len() <= v.len() {
        &mut v[..args.len()]
    } else {
        many.resize(args.len(), 0.0);
        &mut many
    };
    for r in 0..rows {
        for j in 0..w {
            for (slot, a) in slots.iter_mut().zip(args) {
                *slot = if a.0 == 1 { a.1[r] } else { a.1[r * w + j] };
            }
            out.push(f(slots));
        }
    }
    w
}

fn flag(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

/// `x` to i64, toward zero, saturating (NaN is 0), for `|` and `&`.
fn int(x: f64) -> i64 {
    x as i64
}

/// The truth of a constant operand of `&&` and `||` as muParser folds
/// them: converted to an integer first (x86's conversion: NaN and values
/// out of range become INT_MIN), so 0.5 is false and NaN true.
fn truth_as_int(x: f64) -> bool {
    x.is_nan() || x.abs() >= 1.0
}

fn unary(f: F1, x: f64) -> f64 {
    use F1::*;
    match f {
        Neg => -x,
        Sin => x.sin(),
        Cos => x.cos(),
        Tan => x.tan(),
        Asin => x.asin(),
        Acos => x.acos(),
        Atan => x.atan(),
        Sinh => x.sinh(),
        Cosh => x.cosh(),
        Tanh => x.tanh(),
        // muParser's own formulas (muParserTemplateMagic.h, MathImpl), not
        // the C library's asinh, acosh and atanh: they differ in the last bit.
        Asinh => (x + (x * x + 1.0).sqrt()).ln(),
        Acosh => (x + (x * x - 1.0).sqrt()).ln(),
        Atanh => 0.5 * ((1.0 + x) / (1.0 - x)).ln(),
        Log2 => x.ln() / 2f64.ln(),
        Log10 => x.log10(),
        Ln => x.ln(),
        Exp => x.exp(),
        Sqrt => x.sqrt(),
        // muParser: (x < 0) ? -1 : (x > 0) ? 1 : 0, so NaN gives 0.
        Sign => {
            if x < 0.0 {
                -1.0
            } else if x > 0.0 {
                1.0
            } else {
                0.0
            }
        }
        // muParser's rint is floor(x + 0.5): 2.5 -> 3, -2.5 -> -2.
        Rint => (x + 0.5).floor(),
        // (v >= 0) ? v : -v, so abs(-0) is -0.
        Abs => {
            if x >= 0.0 {
                x
            } else {
                -x
            }
        }
        Floor => x.floor(),
        Ceil => x.ceil(),
        Trunc => x.trunc(),
        // FG: half away from zero.
        Round => x.round(),
        Sigmoid => 1.0 / (1.0 + (-x).exp()),
    }
}

fn binary_eval(f: F2, a: f64, b: f64) -> f64 {
    use F2::*;
    match f {
        // At run time muParser tests doubles: 0.5 is true, and so is NaN.
        Or => flag(a != 0.0 || b != 0.0),
        And => flag(a != 0.0 && b != 0.0),
        BitOr => (int(a) | int(b)) as f64,
        BitAnd => (int(a) & int(b)) as f64,
        Le => flag(a <= b),
        Ge => flag(a >= b),
        Ne => flag(a != b),
        Eq => flag(a == b),
        Gt => flag(a > b),
        Lt => flag(a < b),
        Add => a + b,
        Sub => a - b,
        Mul => a * b,
        Div => a / b,
        Pow => a.powf(b),
        // FG: roundp(3.14159, 2) = 3.14; b is taken toward zero as digits.
        RoundP => {
            let scale = 10f64.powi(int(b).clamp(-308, 308) as i32);
            (a * scale).round() / scale
        }
    }
}

fn fold_many(f: Fold, v: &[f64]) -> f64 {
    match f {
        // muParser folds left with std::min / std::max: a NaN argument
        // survives only where it is the first.
        Fold::Min => v[1..].iter().fold(v[0], |m, &x| if x < m { x } else { m }),
        Fold::Max => v[1..].iter().fold(v[0], |m, &x| if x > m { x } else { m }),
        // From +0, as muParser's loop starts.
        Fold::Sum => v.iter().fold(0.0, |s, x| s + x),
        Fold::Avg => v.iter().fold(0.0, |s, x| s + x) / v.len() as f64,
    }
}

fn reduce(f: R1, v: &[f64]) -> f64 {
    let n = v.len() as f64;
    let sum: f64 = v.iter().sum();
    let squares = || v.iter().map(|x| x * x).sum::<f64>();
    let deviations = || {
        let mean = sum / n;
        v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>()
    };
    match f {
        R1::Len => n,
        R1::L2Norm => squares().sqrt(),
        R1::SquaredNorm => squares(),
        // FG's table: std_dev and variance divide by n, the pop_ ones by n - 1.
        R1::StdDev => (deviations() / n).sqrt(),
        R1::PopStdDev => (deviations() / (n - 1.0)).sqrt(),
        R1::Variance => deviations() / n,
        R1::PopVariance => deviations() / (n - 1.0),
        R1::Min => v.iter().copied().fold(f64::INFINITY, f64::min),
        R1::Max => v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        R1::Sum => sum,
        R1::Mean => sum / n,
        R1::Prod => v.iter().product(),
    }
}

fn reduce2(f: R2, a: &[f64], b: &[f64]) -> f64 {
    match f {
        R2::Dot => a.iter().zip(b).map(|(x, y)| x * y).sum(),
        R2::EuclidDist => a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(text: &str, a: f64, b: f64) -> f64 {
        let e = Expr::parse(text, &[("a", 1), ("b", 1)]).unwrap_or_else(|e| panic!("{text}: {e}"));
        e.eval(&[&[a], &[b]], 1)[0]
    }

    fn error(text: &str) -> String {
        Expr::parse(text, &[("a", 1), ("b", 1), ("v", 3), ("w", 2)]).expect_err(text).to_string()
    }

    #[test]
    fn precedence_and_associativity_are_muparsers() {
        // Measured with Debian's libmuparser 2.3.3 (tests/expr_reference.rs
        // runs the same against it).
        assert_eq!(eval("-a^2 + b*0", 2.0, 0.0), -4.0);
        assert_eq!(eval("a^b^a + 0*a", 2.0, 3.0), 512.0);
        assert_eq!(eval("a - b - 1", 3.0, 2.0), 0.0);
        assert_eq!(eval("a*-b", 2.0, 3.0), -6.0);
        assert_eq!(eval("a ^ -b", 2.0, 1.0), 0.5);
        assert_eq!(eval("a < b || b < a && 0", 2.0, 3.0), 1.0);
        assert_eq!(eval("a ? b : 0 ? 3 : 4", 1.0, 2.0), 2.0);
        assert_eq!(eval("a + b ? 1 : 0", 2.0, -2.0), 0.0);
        assert_eq!(eval("a == b == 0", 2.0, 3.0), 1.0);
        assert_eq!(eval("rint(a) + rint(b)", 2.5, -2.5), 1.0);
        assert_eq!(eval("sign(a) + sign(b)", 0.0, -3.0), -1.0);
        assert_eq!(eval("a | b", 5.0, 2.0), 7.0);
        assert_eq!(eval("a & b", 7.9, 2.0), 2.0);
        assert_eq!(eval("roundp(a, b)", 1.23456, 2.0), 1.23);
        assert_eq!(eval("round(a) + round(b)", 2.5, -2.5), 0.0);
        assert_eq!(eval("sigmoid(a - b)", 1.0, 1.0), 0.5);
        assert_eq!(eval("min(a, b, 1) + max(a, b) + sum(a) + avg(a, b)", 2.0, 3.0), 1.0 + 3.0 + 2.0 + 2.5);
    }

    #[test]
    fn vectors_broadcast_and_reduce() {
        let e = Expr::parse("v * a + dot(v, v) * 0 + len(v)", &[("v", 3), ("a", 1)]).unwrap();
        assert_eq!(e.width, 3);
        let v = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(e.eval(&[&v, &[10.0, 100.0]], 2), vec![13.0, 23.0, 33.0, 403.0, 503.0, 603.0]);
        let e = Expr::parse("dot(v, w) + euclid_dist(v, w) + reduce_max(v)", &[("v", 2), ("w", 2)]).unwrap();
        assert_eq!(e.width, 1);
        assert_eq!(e.eval(&[&[3.0, 4.0], &[0.0, 0.0]], 1), vec![0.0 + 5.0 + 4.0]);
        let e = Expr::parse("std_dev(v) + 10 * pop_variance(v)", &[("v", 4)]).unwrap();
        let got = e.eval(&[&[1.0, 2.0, 3.0, 4.0]], 1)[0];
        assert!((got - (1.25f64.sqrt() + 10.0 * 5.0 / 3.0)).abs() < 1e-12, "{got}");
        // A scalar result of a model whose inputs are vectors is still one per row.
        let e = Expr::parse("a + 1", &[("a", 1)]).unwrap();
        assert_eq!(e.eval(&[&[1.0, 2.0]], 2), vec![2.0, 3.0]);
    }

    #[test]
    fn bad_expressions_say_what_and_where() {
        let cases = [
            ("", "at offset 0: the expression is empty"),
            ("a +", "at offset 3: the expression ends where a value was expected"),
            ("(a + b", "at offset 6: the ( at offset 0 is not closed"),
            ("a + b)", "at offset 5: unexpected ) after a complete expression"),
            ("a, b", "at offset 1: unexpected a comma after a complete expression (one expression only)"),
            ("a ? b", "at offset 5: the ? here has no : (if-then-else needs an else)"),
            ("x + a", "at offset 0: unknown name \"x\"; the inputs are [\"a\", \"b\", \"v\", \"w\"]"),
            ("foo(a)", "at offset 0: unknown function \"foo\""),
            ("sin(a, b)", "at offset 0: sin takes 1 argument(s), found 2"),
            ("max()", "at offset 0: max takes at least 1 argument(s), found 0"),
            ("rnd() + a", "at offset 0: rnd is random: a feature must be the same online, offline and near-line"),
            ("a = b", "at offset 2: assignment (=) is not an expression; compare with =="),
            ("--a", "at offset 1: two signs in a row; write -(-a)"),
            ("2a", "at offset 1: a name right after the number \"2\""),
            ("1e400 + a", "at offset 0: \"1e400\" is not a finite number"),
            ("v + w + a + b", "at offset 2: + on vectors of different widths [3, 2]"),
            ("dot(v, w) + a + b", "at offset 0: dot of vectors of different widths [3, 2]"),
            ("a + b + v", "at offset 0: input \"w\" is not used by the expression"),
            ("a + sin", "at offset 4: sin is a function; call it as sin(...)"),
            ("a # b", "at offset 2: unexpected character '#'"),
        ];
        for (text, want) in cases {
            assert_eq!(error(text), want, "{text:?}");
        }
        let deep = format!("{}a{}", "(".repeat(5000), ")".repeat(5000));
        assert!(error(&deep).contains("nested deeper than 200 levels"));
        let deep = format!("{}a + b + v + w", "-(".repeat(5000));
        assert!(error(&deep).contains("nested deeper than 200 levels"));
    }
}
