//! fex's feature library for the JVM: what the near-line job calls, over
//! JNI, on byte arrays (class `fex.jni.Native` of the flink/ module).
//!
//! - `open(yaml, baseDir)`: a model config compiled once into a plan, kept
//!   here under a handle (`close` drops it). Handles are looked up, never
//!   dereferenced: a closed or made-up handle is an exception, not a crash.
//! - `labelJoin(handle)`: the config's `label_join:` settings.
//! - `requestKeys(handle, logged)`: a logged request's join keys.
//! - `compute(handle, logged, actions)`: an emitted request's joined
//!   records and samples (`fex::nearline::compute`), once per request.
//! - `openTable`, `tableColumns`, `tableSummary` and `computeTable`: the
//!   same for a job that writes the samples to an Iceberg sample table: the
//!   table's columns, what its snapshots say of the model, and the samples
//!   as table rows identified by the emitted request (`rows`).
//!
//! Every error is a `fex.jni.FexException` carrying the library's message
//! (and, for a logged request's bytes, the offset where decoding stopped);
//! a panic is caught at the boundary and becomes one too, never unwinding
//! into the JVM. The classes returned and thrown are bound once
//! (`classes`).

mod classes;
pub mod rows;

/// The library's own allocations (a request's joined records, samples and
/// the scratch between) go through mimalloc, as the `fex` command's and
/// the Python package's do: glibc's malloc and free were a third of the
/// instructions of a 30-row `compute` (benches/README, "The library through
/// JNI"). Only Rust allocates here; what crosses to Java is copied into
/// Java arrays.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use fex::Plan;
use fex::nearline::{self, ComputeError, NearlineError};
use jni::errors::ErrorPolicy;
use jni::objects::{JByteArray, JClass, JIntArray, JObject, JObjectArray, JString, JThrowable};
use jni::sys::jlong;
use jni::{Env, EnvUnowned};

use classes::{Computed, FexException, LabelJoin, RequestKeys};

/// Why a call failed, as the Java side will see it.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    /// The byte of the logged request where decoding stopped, or -1.
    pub offset: i64,
}

impl Failure {
    fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), offset: -1 }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Self {
        Failure::new(format!("JNI: {e}"))
    }
}

impl From<NearlineError> for Failure {
    fn from(e: NearlineError) -> Self {
        let offset = e.offset().map_or(-1, |o| o as i64);
        Failure { message: e.to_string(), offset }
    }
}

impl From<ComputeError> for Failure {
    fn from(e: ComputeError) -> Self {
        match e {
            ComputeError::Join(e) => e.into(),
            other => Failure::new(other.to_string()),
        }
    }
}

/// Throws `fex.jni.FexException` for an error or a panic, and returns the
/// type's default (0 or null) to the JVM, which raises the exception.
struct ThrowFex;

fn throw(env: &mut Env<'_>, failure: &Failure) -> jni::errors::Result<()> {
    if env.exception_check() {
        return Ok(());
    }
    let message = env.new_string(&failure.message)?;
    let exception = FexException::new(env, &message, failure.offset)?;
    let exception = env.cast_local::<JThrowable>(exception)?;
    let _ = env.throw(exception);
    Ok(())
}

impl<T: Default> ErrorPolicy<T, Failure> for ThrowFex {
    type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

    fn on_error<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _cap: &mut (),
        err: Failure,
    ) -> jni::errors::Result<T> {
        throw(env, &err)?;
        Ok(T::default())
    }

    fn on_panic<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _cap: &mut (),
        payload: Box<dyn std::any::Any + Send + 'static>,
    ) -> jni::errors::Result<T> {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        throw(env, &Failure::new(format!("internal error in fex (please report it): {what}")))?;
        Ok(T::default())
    }
}

/// The open plans, by handle.
static PLANS: LazyLock<Mutex<HashMap<i64, Arc<Plan>>>> = LazyLock::new(Mutex::default);
static NEXT_HANDLE: AtomicI64 = AtomicI64::new(1);

fn plans() -> std::sync::MutexGuard<'static, HashMap<i64, Arc<Plan>>> {
    PLANS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Compiles a model config; `base_dir` resolves its relative file paths.
pub fn open(yaml: &str, base_dir: &str) -> Result<i64, Failure> {
    let plan = Plan::from_yaml_in(yaml, std::path::Path::new(base_dir)).map_err(|e| Failure::new(e.to_string()))?;
    let handle = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
    plans().insert(handle, Arc::new(plan));
    Ok(handle)
}

/// The plan under `handle`.
pub fn plan(handle: i64) -> Result<Arc<Plan>, Failure> {
    plans().get(&handle).cloned().ok_or_else(|| Failure::new(format!("no open plan has handle {handle} (closed?)")))
}

/// The open table plans (`openTable`), by handle; handles are shared with [`PLANS`].
static TABLES: LazyLock<Mutex<HashMap<i64, Arc<rows::TablePlan>>>> = LazyLock::new(Mutex::default);

fn tables() -> std::sync::MutexGuard<'static, HashMap<i64, Arc<rows::TablePlan>>> {
    TABLES.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Compiles a model config for sample-table rows.
pub fn open_table(yaml: &str, base_dir: &str) -> Result<i64, Failure> {
    let plan = rows::TablePlan::open(yaml, base_dir)?;
    let handle = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
    tables().insert(handle, Arc::new(plan));
    Ok(handle)
}

/// The table plan under `handle`.
pub fn table(handle: i64) -> Result<Arc<rows::TablePlan>, Failure> {
    tables()
        .get(&handle)
        .cloned()
        .ok_or_else(|| Failure::new(format!("no open table plan has handle {handle} (closed?)")))
}

/// Drops the plan under `handle`; true when there was one.
pub fn close(handle: i64) -> bool {
    plans().remove(&handle).is_some() || tables().remove(&handle).is_some()
}

fn bytes(env: &Env<'_>, array: &JByteArray<'_>, what: &str) -> Result<Vec<u8>, Failure> {
    if array.is_null() {
        return Err(Failure::new(format!("{what} is null")));
    }
    Ok(env.convert_byte_array(array)?)
}

fn string(env: &Env<'_>, s: &JString<'_>, what: &str) -> Result<String, Failure> {
    if s.is_null() {
        return Err(Failure::new(format!("{what} is null")));
    }
    Ok(s.try_to_string(env)?)
}

/// A `String[]` of `items`.
fn string_array<'l, S: AsRef<str>>(
    env: &mut Env<'l>,
    items: impl ExactSizeIterator<Item = S>,
) -> Result<JObjectArray<'l, JString<'l>>, Failure> {
    let empty = env.new_string("")?;
    let out = JObjectArray::<JString>::new(env, items.len(), &empty)?;
    for (i, item) in items.enumerate() {
        let item = env.new_string(item.as_ref())?;
        out.set_element(env, i, &item)?;
    }
    Ok(out)
}

/// A model config's text and the directory its paths resolve against (".").
fn config(env: &Env<'_>, yaml: &JString<'_>, base_dir: &JString<'_>) -> Result<(String, String), Failure> {
    let yaml = string(env, yaml, "the model config")?;
    let base_dir = if base_dir.is_null() { ".".into() } else { string(env, base_dir, "baseDir")? };
    Ok((yaml, base_dir))
}

/// A `fex.jni.Computed` of a request's payload, joined records, samples and rows.
fn computed<'l>(
    env: &mut Env<'l>,
    payload: nearline::Payload,
    joined: &[u8],
    samples: &[u8],
    rows_written: u64,
) -> Result<JObject<'l>, Failure> {
    let payload = env.new_string(payload.as_str())?;
    let joined = env.byte_array_from_slice(joined)?;
    let samples = env.byte_array_from_slice(samples)?;
    let rows_written = rows_written.min(i64::MAX as u64) as i64;
    Ok(Computed::new(env, &payload, &joined, &samples, rows_written)?.into())
}

/// `int[][]`: one array of actions per row (a null row has none).
fn actions(env: &mut Env<'_>, rows: &JObjectArray<'_, JIntArray<'_>>) -> Result<Vec<Vec<i32>>, Failure> {
    if rows.is_null() {
        return Err(Failure::new("actions is null"));
    }
    let n = rows.len(env)?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let row = rows.get_element(env, i)?;
        if row.is_null() {
            out.push(Vec::new());
            continue;
        }
        let mut values = vec![0; row.len(env)?];
        row.get_region(env, 0, &mut values)?;
        out.push(values);
    }
    Ok(out)
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_fex_jni_Native_open<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    yaml: JString<'l>,
    base_dir: JString<'l>,
) -> jlong {
    unowned
        .with_env(|env| -> Result<jlong, Failure> {
            let (yaml, base_dir) = config(env, &yaml, &base_dir)?;
            open(&yaml, &base_dir)
        })
        .resolve::<ThrowFex>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_fex_jni_Native_close<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> jni::sys::jboolean {
    unowned.with_env(|_env| -> Result<bool, Failure> { Ok(close(handle)) }).resolve::<ThrowFex>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_fex_jni_Native_labelJoin<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> JObject<'l> {
    unowned
        .with_env(|env| -> Result<JObject<'l>, Failure> {
            let plan = plan(handle)?;
            let Some(join) = plan.label_join() else { return Ok(JObject::null()) };
            let millis = |d: std::time::Duration| d.as_millis().min(i64::MAX as u128) as i64;
            let late = env.new_string(join.late_actions.as_str())?;
            let join = LabelJoin::new(
                env,
                join.requests_back.min(i32::MAX as u32) as i32,
                millis(join.after),
                millis(join.watermark_delay),
                millis(join.retention),
                join.refresh.is_some(),
                &late,
            )?;
            Ok(join.into())
        })
        .resolve::<ThrowFex>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_fex_jni_Native_requestKeys<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    logged: JByteArray<'l>,
) -> JObject<'l> {
    unowned
        .with_env(|env| -> Result<JObject<'l>, Failure> {
            let plan = plan(handle)?;
            let logged = bytes(env, &logged, "the logged request")?;
            let keys = nearline::request_keys(&plan, &logged)?;
            let items = string_array(env, keys.item_ids.iter())?;
            let (request_id, user_id) = (env.new_string(&keys.request_id)?, env.new_string(&keys.user_id)?);
            let (payload, model) = (env.new_string(keys.payload.as_str())?, env.new_string(&keys.model)?);
            let keys = RequestKeys::new(
                env,
                &request_id,
                &user_id,
                keys.time_ms,
                keys.refresh,
                &items,
                &payload,
                keys.rows.min(i32::MAX as usize) as i32,
                &model,
            )?;
            Ok(keys.into())
        })
        .resolve::<ThrowFex>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_fex_jni_Native_compute<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    logged: JByteArray<'l>,
    rows: JObjectArray<'l, JIntArray<'l>>,
) -> JObject<'l> {
    unowned
        .with_env(|env| -> Result<JObject<'l>, Failure> {
            let plan = plan(handle)?;
            let logged = bytes(env, &logged, "the logged request")?;
            let actions = actions(env, &rows)?;
            let c = nearline::compute(&plan, &logged, &actions)?;
            computed(env, c.payload, &c.joined, &c.samples, c.rows_written)
        })
        .resolve::<ThrowFex>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_fex_jni_Native_openTable<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    yaml: JString<'l>,
    base_dir: JString<'l>,
) -> jlong {
    unowned
        .with_env(|env| -> Result<jlong, Failure> {
            let (yaml, base_dir) = config(env, &yaml, &base_dir)?;
            open_table(&yaml, &base_dir)
        })
        .resolve::<ThrowFex>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_fex_jni_Native_tableColumns<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> JObject<'l> {
    unowned
        .with_env(|env| -> Result<JObject<'l>, Failure> {
            let columns = table(handle)?.columns();
            Ok(string_array(env, columns.iter())?.into())
        })
        .resolve::<ThrowFex>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_fex_jni_Native_tableSummary<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> JObject<'l> {
    unowned
        .with_env(|env| -> Result<JObject<'l>, Failure> {
            let table = table(handle)?;
            let pairs: Vec<&str> = table.summary.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()]).collect();
            Ok(string_array(env, pairs.into_iter())?.into())
        })
        .resolve::<ThrowFex>()
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_fex_jni_Native_computeTable<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    logged: JByteArray<'l>,
    rows: JObjectArray<'l, JIntArray<'l>>,
    request_id: JString<'l>,
    time_ms: jlong,
) -> JObject<'l> {
    unowned
        .with_env(|env| -> Result<JObject<'l>, Failure> {
            let table = table(handle)?;
            let logged = bytes(env, &logged, "the logged request")?;
            let actions = actions(env, &rows)?;
            let request_id = string(env, &request_id, "the request id")?;
            let t = table.compute(&logged, &actions, &request_id, time_ms)?;
            computed(env, t.payload, &t.joined, &t.rows, t.rows_written)
        })
        .resolve::<ThrowFex>()
}

/// Panics, for the test that a panic becomes an exception (`Native.panicForTest`).
#[unsafe(no_mangle)]
pub extern "system" fn Java_fex_jni_Native_panicForTest<'l>(mut unowned: EnvUnowned<'l>, _class: JClass<'l>) -> jlong {
    unowned
        .with_env(|_env| -> Result<jlong, Failure> { panic!("deliberate panic, to test the JNI boundary") })
        .resolve::<ThrowFex>()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: &str = "name: m\nfeatures:\n  - {name: acts, kind: line_id, field: actions, shape: [2]}\n\
                         label_join:\n  user_id: {line_id: uid}\n  item_id: {line_id: item_id}\n  emit: {after: 30m}\n";

    #[test]
    fn handles_are_looked_up_never_trusted() {
        let h = open(MODEL, ".").unwrap();
        assert!(plan(h).is_ok());
        assert!(close(h));
        assert!(!close(h), "a second close finds nothing");
        let e = plan(h).unwrap_err();
        assert_eq!(e.message, format!("no open plan has handle {h} (closed?)"));
        assert!(plan(-5).is_err());
    }

    #[test]
    fn a_bad_config_says_where() {
        let e = open("name: m\nfeatures:\n  - {name: x, kind: sparce}\n", ".").unwrap_err();
        assert!(e.message.contains("features.x.kind: unknown feature kind \"sparce\""), "{}", e.message);
    }

    #[test]
    fn a_bad_logged_request_carries_its_offset() {
        let plan = plan(open(MODEL, ".").unwrap()).unwrap();
        let e: Failure = nearline::request_keys(&plan, &[0x0a, 0x05, 1]).unwrap_err().into();
        assert!(e.offset >= 0, "{e:?}");
        assert!(e.message.starts_with("logged request: "), "{}", e.message);
    }
}

/// The library's thread-local block, which the dynamic loader must place in
/// the static TLS space of a JVM that `dlopen`s it (the library has
/// initial-exec accesses, so its block is static). That space is small and
/// shared: RocksDB's JNI library takes its part in the same TaskManager,
/// and a block that grew by a few hundred bytes (operator scratch held in
/// thread-locals by value) made loading fail with "cannot allocate memory
/// in static TLS block". Operators' scratch is boxed, in one thread-local
/// for all of them (`ops::rows`), and SentencePiece's C++ adds its own; this
/// holds the block under a budget.
#[cfg(test)]
mod tls {
    /// Bytes of thread-local storage the loaded library may ask for.
    const BUDGET: u64 = 512;

    /// The memory size of the ELF's PT_TLS segment (0 without one).
    fn tls_size(elf: &[u8]) -> u64 {
        let u16_at = |at: usize| u16::from_le_bytes([elf[at], elf[at + 1]]) as usize;
        let u64_at = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().expect("8 bytes"));
        assert_eq!(&elf[..5], b"\x7fELF\x02", "a 64-bit ELF");
        let (phoff, phentsize, phnum) = (u64_at(0x20) as usize, u16_at(0x36), u16_at(0x38));
        (0..phnum)
            .map(|i| phoff + i * phentsize)
            .find(|&ph| u32::from_le_bytes(elf[ph..ph + 4].try_into().expect("4 bytes")) == 7)
            .map_or(0, |ph| u64_at(ph + 0x28))
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_thread_local_block_stays_small() {
        // target/<profile>/deps/<this test> → target/<profile>/libfex_jni.so
        let exe = std::env::current_exe().expect("the test's path");
        let lib = exe.parent().and_then(|d| d.parent()).expect("target/<profile>").join("libfex_jni.so");
        let elf = std::fs::read(&lib)
            .unwrap_or_else(|e| panic!("{}: {e} (build it first: cargo build -p fex-jni)", lib.display()));
        let size = tls_size(&elf);
        assert!(size <= BUDGET, "{} asks for {size} bytes of static TLS, over {BUDGET}", lib.display());
    }
}
