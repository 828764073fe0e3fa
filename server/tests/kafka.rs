//! The request log to Kafka against a real broker (scripts/kafka_broker.py:
//! Apache Kafka 4.4 in KRaft mode on 127.0.0.1, from Maven Central's jars),
//! no mock: the fex-server binary logs to files and to a topic of several
//! partitions at once; the topic holds every file record once, byte for byte,
//! keyed by its user and partitioned as Kafka's Java client partitions keys.
//! A broker that cannot start fails the test with the script's message.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{client, wait_serving};
use fex::proto::fex_v1::extract_request::Payload;
use fex::proto::fex_v1::{ExtractRequest, LoggedRequest};
use fex::proto::monolith_pb::{self as pb, feature::Type};
use prost::Message as _;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message as _;
use rdkafka::{Offset, TopicPartitionList};

const BIN: &str = env!("CARGO_BIN_EXE_fex-server");
const TOPIC: &str = "fex-requests";
const PARTITIONS: i32 = 4;
/// The script's own bounds (Maven's fetch, the start) end before this.
const BROKER_START: Duration = Duration::from_secs(1200);

/// One broker for the tests of this file, stopped when the test process
/// ends (the script stops it when its standard input closes).
fn broker() -> &'static Broker {
    static BROKER: OnceLock<Broker> = OnceLock::new();
    BROKER.get_or_init(|| Broker::start(&[&format!("{TOPIC}:{PARTITIONS}")]))
}

struct Broker {
    bootstrap: String,
    /// The broker's JVM.
    pid: u32,
    _child: Mutex<(Child, ChildStdin)>,
}

impl Broker {
    fn start(topics: &[&str]) -> Broker {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/kafka_broker.py");
        let mut child = Command::new("python3")
            .arg(&script)
            .arg("--until-stdin-closes")
            .args(topics.iter().flat_map(|t| ["--topic", t]))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("python3 {}: {e}", script.display()));
        let stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let errors = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let line = rx.recv_timeout(BROKER_START).unwrap_or_default();
        let ready: serde_json::Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the Kafka broker did not start ({line:?}):\n{}", errors.join().unwrap_or_default());
            }
        };
        let bootstrap = ready["bootstrap"].as_str().expect("bootstrap address").to_string();
        let pid = ready["pid"].as_u64().expect("the broker's pid") as u32;
        let stdin = child.stdin.take().unwrap();
        Broker { bootstrap, pid, _child: Mutex::new((child, stdin)) }
    }

    /// SIGSTOP or SIGCONT to the broker's JVM.
    fn signal(&self, name: &str) {
        let status = Command::new("kill").args([&format!("-{name}"), &self.pid.to_string()]).status().unwrap();
        assert!(status.success(), "kill -{name} {}", self.pid);
    }
}

/// Resumes a stopped broker however the test ends, so its script can stop it.
struct Resume<'a>(&'a Broker);

impl Drop for Resume<'_> {
    fn drop(&mut self) {
        self.0.signal("CONT");
    }
}

/// A fex-server process: its addresses, and its log lines as they come.
struct Server {
    child: Child,
    addr: SocketAddr,
    metrics: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fex_server(args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(["--listen-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--log-format", "json"])
        .args(["--reload-interval", "0s", "--prefault-heap-bytes", "0"])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    command
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut child = fex_server(args).spawn().expect("fex-server starts");
        let lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let parsed: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
                if parsed["fields"]["message"] == "fex-server listening" {
                    let addr = |key: &str| parsed["fields"][key].as_str().unwrap_or_default().parse().ok();
                    let _ = tx.send(addr("addr").zip(addr("metrics")));
                }
                kept.lock().unwrap().push(line);
            }
        });
        let addrs = rx.recv_timeout(Duration::from_secs(60)).ok().flatten();
        let (addr, metrics) =
            addrs.unwrap_or_else(|| panic!("fex-server did not listen:\n{}", log.lock().unwrap().join("\n")));
        Server { child, addr, metrics, log }
    }

    /// A counter's value on /metrics.
    fn counter(&self, name: &str) -> u64 {
        let mut stream = std::net::TcpStream::connect(self.metrics).unwrap();
        std::io::Write::write_all(&mut stream, b"GET /metrics HTTP/1.1\r\nHost: fex\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut page = String::new();
        stream.read_to_string(&mut page).unwrap();
        let line =
            page.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name}: {page}"));
        line[name.len()..].trim().parse().unwrap()
    }

    /// SIGTERM, then the exit status (bounded).
    fn stop(&mut self) -> ExitStatus {
        let status = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
        wait_exit(&mut self.child, Duration::from_secs(60))
            .unwrap_or_else(|| panic!("fex-server did not exit:\n{}", self.log.lock().unwrap().join("\n")))
    }
}

/// Runs fex-server with `args` until it exits by itself (bounded): its exit
/// status and everything it logged.
fn run_to_exit(args: &[&str]) -> (ExitStatus, String) {
    let mut child = fex_server(args).spawn().expect("fex-server starts");
    let mut stderr = child.stderr.take().unwrap();
    let read = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let status = wait_exit(&mut child, Duration::from_secs(60));
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let log = read.join().unwrap_or_default();
    (status.unwrap_or_else(|| panic!("fex-server did not exit:\n{log}")), log)
}

fn wait_exit(child: &mut Child, bound: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + bound;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

const JOINED: &str = "name: joined
version: \"1\"
features:
  - {name: user_id, kind: sparse, shared: once}
  - {name: item_id, kind: sparse}
label_join:
  user_id: {feature: user_id}
  item_id: {feature: item_id}
  emit: {after: 10m}
";

const PLAIN: &str = "name: plain
version: \"1\"
features:
  - {name: user_id, kind: sparse, shared: once}
  - {name: item_id, kind: sparse}
";

fn models() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("joined.yaml"), JOINED).unwrap();
    std::fs::write(dir.path().join("plain.yaml"), PLAIN).unwrap();
    dir
}

/// A request of `user` (none: no user list) with three items.
fn request(model: &str, user: Option<u64>) -> ExtractRequest {
    let fids = |v: u64| pb::Feature { r#type: Some(Type::FidV2List(pb::FidList { value: vec![v] })) };
    let list =
        |name: &str, kind: i32, feature| pb::NamedFeatureList { name: name.into(), feature, r#type: kind, id: 0 };
    let mut lists = vec![list("item_id", 0, (0..3).map(|i| fids(100 + i)).collect())];
    lists.extend(user.map(|u| list("user_id", 1, vec![fids(u)])));
    let batch = pb::ExampleBatch { batch_size: 3, named_feature_list: lists, ..Default::default() };
    ExtractRequest {
        model: model.into(),
        payload: Some(Payload::ExampleBatch(Bytes::from(batch.encode_to_vec()))),
        outputs: vec![],
    }
}

/// The calls: two users' requests interleaved, then requests without a key
/// (a model without `label_join:`, a request without its user). Returns each
/// request id with the key its message must carry.
async fn send_requests(addr: SocketAddr) -> BTreeMap<String, Option<String>> {
    let mut calls = Vec::new();
    for i in 0..6 {
        calls.push((format!("a-{i}"), "joined", Some(7001)));
        calls.push((format!("b-{i}"), "joined", Some(7002)));
    }
    calls.push(("p-0".into(), "plain", Some(7001)));
    calls.push(("n-0".into(), "joined", None));
    let mut c = client(addr).await;
    let mut want = BTreeMap::new();
    for (id, model, user) in calls {
        let mut call = tonic::Request::new(request(model, user));
        call.metadata_mut().insert("x-request-id", id.parse().unwrap());
        c.extract(call).await.unwrap_or_else(|e| panic!("{id}: {e}"));
        let key = if model == "joined" { user.map(|u| u.to_string()) } else { None };
        want.insert(id, key);
    }
    want
}

/// The records of every closed log file, in the order they were written.
fn file_records(dir: &Path) -> Vec<Vec<u8>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    let (mut out, mut buf) = (Vec::new(), Vec::new());
    for path in paths {
        assert!(!path.file_name().unwrap().to_string_lossy().starts_with('.'), "a file left open: {path:?}");
        let mut reader = fex::records::RecordReader::open(&path, Default::default(), None).unwrap();
        while reader.next_into(&mut buf).unwrap().is_some() {
            out.push(buf.clone());
        }
    }
    out
}

/// One message as the topic holds it.
struct Consumed {
    partition: i32,
    offset: i64,
    key: Option<String>,
    value: Vec<u8>,
}

/// Every message of the topic, read from the start of each partition until
/// `count` arrived (bounded); then the partitions' end offsets must add up to
/// `count` (nothing more is there).
fn consume(bootstrap: &str, topic: &str, count: usize) -> Vec<Consumed> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "fex-kafka-test")
        .set("enable.auto.commit", "false")
        .create()
        .expect("a consumer");
    let mut assignment = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        assignment.add_partition_offset(topic, p, Offset::Beginning).unwrap();
    }
    consumer.assign(&assignment).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut out = Vec::new();
    while out.len() < count {
        assert!(Instant::now() < deadline, "{} of {count} messages arrived", out.len());
        let Some(message) = consumer.poll(Duration::from_millis(200)) else { continue };
        let m = message.expect("a message");
        out.push(Consumed {
            partition: m.partition(),
            offset: m.offset(),
            key: m.key().map(|k| String::from_utf8(k.to_vec()).unwrap()),
            value: m.payload().unwrap_or_default().to_vec(),
        });
    }
    let ends: i64 = (0..PARTITIONS)
        .map(|p| consumer.fetch_watermarks(topic, p, Duration::from_secs(10)).unwrap())
        .map(|(low, high)| high - low)
        .sum();
    assert_eq!(ends, count as i64, "the topic holds exactly the messages read");
    out
}

/// Kafka's Java client's partition for a key (`Utils.murmur2`,
/// `toPositive(hash) % partitions`, BuiltInPartitioner).
fn java_partition(key: &[u8], partitions: i32) -> i32 {
    const M: u32 = 0x5bd1_e995;
    let mut h: u32 = 0x9747_b28c ^ key.len() as u32;
    let mut chunks = key.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]).wrapping_mul(M);
        k ^= k >> 24;
        h = h.wrapping_mul(M) ^ k.wrapping_mul(M);
    }
    let rest = chunks.remainder();
    for (i, b) in rest.iter().enumerate().rev() {
        h ^= (*b as u32) << (8 * i);
    }
    if !rest.is_empty() {
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    ((h & 0x7fff_ffff) % partitions as u32) as i32
}

#[test]
fn java_partition_matches_kafkas_murmur2() {
    // Kafka's own UtilsTest.testMurmur2 cases.
    let cases: [(&[u8], i32); 5] = [
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    ];
    for (key, hash) in cases {
        assert_eq!(java_partition(key, i32::MAX), ((hash as u32) & 0x7fff_ffff) as i32 % i32::MAX, "{key:?}");
    }
}

/// Issue 34: every sampled request reaches the topic once, as the same bytes
/// the file log holds, keyed by its user; a user's requests sit in one
/// partition (the one Kafka's Java client picks for the key) in the order
/// they were answered; requests without a user id carry no key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_topic_holds_each_request_once_keyed_by_user_as_the_files_do() {
    let broker = broker();
    let (models, logs) = (models(), tempfile::tempdir().unwrap());
    let server = Server::start(&[
        "--models",
        models.path().to_str().unwrap(),
        "--request-log",
        logs.path().to_str().unwrap(),
        "--request-log-kafka",
        &broker.bootstrap,
        "--request-log-kafka-topic",
        TOPIC,
    ]);
    wait_serving(server.addr).await;
    let want = send_requests(server.addr).await;
    // Each record is counted once written to its file and once acknowledged
    // by the broker (the producer's delivery report), none dropped.
    let written = 2 * want.len() as u64;
    let server = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while server.counter("fex_request_log_records_total") < written && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    })
    .await
    .unwrap();
    assert_eq!(server.counter("fex_request_log_records_total"), written, "files and Kafka");
    assert_eq!(server.counter("fex_request_log_dropped_total"), 0);
    let mut server = server;
    let status = tokio::task::spawn_blocking(move || (server.stop(), server)).await.unwrap().0;
    assert_eq!(status.code(), Some(0), "fex-server exits 0 after SIGTERM");

    let files = file_records(logs.path());
    assert_eq!(files.len(), want.len(), "the file log has every request");
    let bootstrap = broker.bootstrap.clone();
    let count = files.len();
    let consumed = tokio::task::spawn_blocking(move || consume(&bootstrap, TOPIC, count)).await.unwrap();

    let (mut from_kafka, mut from_files): (Vec<&[u8]>, Vec<&[u8]>) =
        (consumed.iter().map(|m| &m.value[..]).collect(), files.iter().map(Vec::as_slice).collect());
    from_kafka.sort();
    from_files.sort();
    assert!(from_kafka == from_files, "the topic holds the file log's records, each once, byte for byte");

    let mut by_user: BTreeMap<String, Vec<(i32, i64, String)>> = BTreeMap::new();
    for m in &consumed {
        let record = LoggedRequest::decode(&m.value[..]).expect("a LoggedRequest");
        let id = record.request_id;
        assert_eq!(m.key, want[&id], "{id}: the key is the user id the model's label_join reads");
        if let Some(key) = &m.key {
            assert_eq!(m.partition, java_partition(key.as_bytes(), PARTITIONS), "{id}: murmur2 as Java's client");
            by_user.entry(key.clone()).or_default().push((m.partition, m.offset, id));
        }
    }
    for (user, mut messages) in by_user {
        messages.sort_by_key(|(_, offset, _)| *offset);
        let partitions: Vec<i32> = messages.iter().map(|m| m.0).collect();
        assert!(partitions.windows(2).all(|w| w[0] == w[1]), "user {user}: one partition, {partitions:?}");
        let ids: Vec<&str> = messages.iter().map(|m| m.2.as_str()).collect();
        let mut sent = ids.clone();
        sent.sort_by_key(|id| id[2..].parse::<u32>().unwrap());
        assert_eq!(ids, sent, "user {user}: in the order they were answered");
        assert_eq!(ids.len(), 6, "user {user}");
    }
}

/// A topic the brokers do not have is a bad configuration (exit 64) named
/// with the brokers and the topic, before anything listens.
#[test]
fn a_missing_topic_exits_64_naming_it() {
    let broker = broker();
    let args = ["--request-log-kafka", &broker.bootstrap, "--request-log-kafka-topic", "no-such-topic"];
    let (status, stderr) = run_to_exit(&args);
    assert_eq!(status.code(), Some(64), "{stderr}");
    let want = format!("--request-log-kafka {}: the brokers have no topic \"no-such-topic\"", broker.bootstrap);
    assert!(stderr.contains(&want), "{stderr}");
    assert!(!stderr.contains("fex-server listening"), "{stderr}");
}

/// Brokers that do not answer: after the bounded probe, exit 69 with a
/// message naming them; nothing listens.
#[test]
fn unreachable_brokers_exit_69_naming_them() {
    // A loopback port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let brokers = format!("127.0.0.1:{port}");
    let (status, stderr) = run_to_exit(&["--request-log-kafka", &brokers]);
    assert_eq!(status.code(), Some(69), "{stderr}");
    assert!(stderr.contains(&format!("--request-log-kafka {brokers}: no broker answered within 10s")), "{stderr}");
    assert!(!stderr.contains("fex-server listening"), "{stderr}");
}

/// A broker that stops answering (its JVM stopped) costs drops, never calls:
/// with room for 2 messages in the producer's queue (`--request-log-queue`),
/// every call is answered and the rest of the records are dropped and
/// counted; once the broker
/// resumes, each record is either acknowledged or dropped, exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_broker_costs_drops_not_calls() {
    let (broker, models) = (Broker::start(&["stalled:1"]), models());
    let server = Server::start(&[
        "--models",
        models.path().to_str().unwrap(),
        "--request-log-kafka",
        &broker.bootstrap,
        "--request-log-kafka-topic",
        "stalled",
        "--request-log-queue",
        "2",
    ]);
    wait_serving(server.addr).await;
    let resume = Resume(&broker);
    broker.signal("STOP");
    let mut c = client(server.addr).await;
    const CALLS: u64 = 20;
    for i in 0..CALLS {
        let call = c.extract(request("joined", Some(7001)));
        let answer = tokio::time::timeout(Duration::from_secs(30), call).await;
        assert!(matches!(answer, Ok(Ok(_))), "call {i} while the broker is stopped: {answer:?}");
    }
    let server = tokio::task::spawn_blocking(move || {
        let dropped = server.counter("fex_request_log_dropped_total");
        // Room for 2 in the producer, and up to 2 still in the writer's queue.
        assert!(dropped >= CALLS - 4, "{dropped} of {CALLS} dropped with room for 2 in the queue");
        server
    })
    .await
    .unwrap();
    drop(resume);
    let settled = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        let total =
            || server.counter("fex_request_log_records_total") + server.counter("fex_request_log_dropped_total");
        while total() < CALLS && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        total()
    })
    .await
    .unwrap();
    assert_eq!(settled, CALLS, "every record is acknowledged or dropped, once");
}
