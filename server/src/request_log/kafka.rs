//! `--request-log-kafka BROKERS`: the log's records as messages of one Kafka
//! topic, through librdkafka (the `rdkafka` crate). A message's value is the
//! `fex.v1.LoggedRequest` the files hold, byte for byte; its key is the
//! request's user id as the model's `label_join:` section reads it, so one
//! partition holds a user's requests in the order they were answered (the
//! producer is idempotent: retries neither reorder nor repeat them). A
//! record without a key (a model without `label_join:`, a request whose
//! keys do not read) goes to a partition at random.
//!
//! librdkafka keeps its own bounded queue (`queue.buffering.max.messages`,
//! the `--request-log-queue`, and at most 64 MiB): when it is full, or a
//! message is not acknowledged within 30 s, or is still queued after the
//! bounded flush at shutdown, the record is dropped and counted, like a
//! file write that fails. The writer thread never waits for the brokers.
//!
//! At start the brokers are asked for the topic's metadata, for at most
//! `PROBE_TIMEOUT`: no answer is `RequestLogError::Unreachable`, a topic the
//! brokers do not have is `RequestLogError::Kafka`.

use std::sync::Arc;
use std::time::Duration;

use rdkafka::ClientContext;
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, PurgeConfig, ThreadedProducer};
use rdkafka::types::RDKafkaErrorCode;

use super::RequestLogError;
use crate::metrics::Metrics;

/// How long the brokers have to answer the metadata probe at start.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the writer waits at `sync` (shutdown) for queued messages to be
/// acknowledged before it drops the rest.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a message may wait for its acknowledgement, retries included.
const MESSAGE_TIMEOUT: Duration = Duration::from_secs(30);
/// librdkafka's queue, in bytes: a bound whatever the message count.
const QUEUE_KBYTES: usize = 64 << 10;

/// Where the messages go.
#[derive(Debug, Clone)]
pub struct KafkaOptions {
    /// Comma-separated `host:port` bootstrap brokers.
    pub brokers: String,
    pub topic: String,
    /// Messages librdkafka holds before more are dropped.
    pub queue: usize,
    /// The largest message to send (the largest request, plus room for the
    /// record's other fields).
    pub max_message_bytes: usize,
}

/// The producer, and the topic its records go to.
pub struct Kafka {
    producer: ThreadedProducer<Counting>,
    topic: String,
    brokers: String,
    metrics: Arc<Metrics>,
}

impl Kafka {
    /// Makes the producer and asks the brokers for the topic (bounded by
    /// `PROBE_TIMEOUT`).
    pub fn connect(options: &KafkaOptions, metrics: Arc<Metrics>) -> Result<Self, RequestLogError> {
        let brokers = options.brokers.clone();
        let config_error = |message: String| RequestLogError::Kafka { brokers: brokers.clone(), message };
        let context = Counting { metrics: Arc::clone(&metrics) };
        let producer: ThreadedProducer<Counting> = client_config(options)
            .create_with_context(context)
            .map_err(|e| config_error(format!("cannot make a producer: {e}")))?;
        let metadata = producer.client().fetch_metadata(Some(&options.topic), PROBE_TIMEOUT).map_err(|e| {
            RequestLogError::Unreachable { brokers: brokers.clone(), waited: PROBE_TIMEOUT, why: e.to_string() }
        })?;
        let topic = metadata.topics().iter().find(|t| t.name() == options.topic);
        let missing = match topic {
            None => Some("no metadata".to_string()),
            Some(t) => match t.error() {
                Some(e) => Some(RDKafkaErrorCode::from(e).to_string()),
                None if t.partitions().is_empty() => Some("no partitions".to_string()),
                None => None,
            },
        };
        if let Some(why) = missing {
            return Err(config_error(format!(
                "the brokers have no topic {:?} ({why}): create it with the partitions you want \
                 (--request-log-kafka-topic names it)",
                options.topic
            )));
        }
        let partitions = topic.map_or(0, |t| t.partitions().len());
        tracing::info!(brokers = %brokers, topic = %options.topic, partitions, "request log to Kafka");
        Ok(Self { producer, topic: options.topic.clone(), brokers, metrics })
    }

    /// Queues one record without waiting; a full queue (or any refusal)
    /// drops it, counted.
    pub fn send(&self, payload: &[u8], key: Option<&str>) {
        let mut record = BaseRecord::<str, [u8]>::to(&self.topic).payload(payload);
        if let Some(key) = key {
            record = record.key(key);
        }
        if let Err((e, _)) = self.producer.send(record) {
            self.metrics.request_log_dropped.inc();
            if !matches!(e, KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull)) {
                tracing::warn!(error = %e, brokers = %self.brokers, topic = %self.topic, "request log message refused");
            }
        }
    }

    /// Waits up to `FLUSH_TIMEOUT` for every queued message to be
    /// acknowledged; what is left then is dropped (and counted as its
    /// delivery fails).
    pub fn flush(&self) {
        if self.producer.flush(FLUSH_TIMEOUT).is_err() {
            let left = self.producer.in_flight_count();
            tracing::warn!(
                left,
                brokers = %self.brokers,
                topic = %self.topic,
                "request log messages not acknowledged within {FLUSH_TIMEOUT:?}: dropped"
            );
            self.producer.purge(PurgeConfig::default().queue().inflight());
            // The purged messages' delivery reports count them as dropped.
            let _ = self.producer.flush(Duration::from_secs(1));
        }
    }
}

/// The producer's settings: bounded queue and delivery time, idempotent (in
/// order, once), keys partitioned as Kafka's Java client does.
fn client_config(options: &KafkaOptions) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &options.brokers)
        .set("client.id", "fex-server")
        .set("enable.idempotence", "true")
        // murmur2 of the key, as Kafka's Java producer: a user's requests land
        // in the partition a Java producer would choose for the same key.
        .set("partitioner", "murmur2_random")
        .set("compression.type", "lz4")
        .set("linger.ms", "5")
        .set("queue.buffering.max.messages", options.queue.max(1).to_string())
        .set("queue.buffering.max.kbytes", QUEUE_KBYTES.to_string())
        .set("message.timeout.ms", MESSAGE_TIMEOUT.as_millis().to_string())
        .set("message.max.bytes", options.max_message_bytes.clamp(1_000_000, 1_000_000_000).to_string())
        .set_log_level(RDKafkaLogLevel::Warning);
    config
}

/// Counts each message once its fate is known: acknowledged (written) or
/// failed (dropped); librdkafka's own log goes to tracing.
struct Counting {
    metrics: Arc<Metrics>,
}

impl ClientContext for Counting {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        match level {
            RDKafkaLogLevel::Emerg | RDKafkaLogLevel::Alert | RDKafkaLogLevel::Critical | RDKafkaLogLevel::Error => {
                tracing::error!(target: "librdkafka", facility, "{message}")
            }
            RDKafkaLogLevel::Warning => tracing::warn!(target: "librdkafka", facility, "{message}"),
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(target: "librdkafka", facility, "{message}")
            }
            RDKafkaLogLevel::Debug => tracing::debug!(target: "librdkafka", facility, "{message}"),
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        tracing::warn!(target: "librdkafka", error = %error, "{reason}");
    }
}

impl ProducerContext for Counting {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => drop(self.metrics.request_log_records.inc()),
            Err((e, _)) => {
                self.metrics.request_log_dropped.inc();
                tracing::debug!(target: "librdkafka", error = %e, "request log message dropped");
            }
        };
    }
}
