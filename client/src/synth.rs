//! Synthetic ExampleBatches for a model config: every feature the model reads,
//! with the declared types and shapes, zipf-distributed fids, user and context
//! features SHARED, and optional noise lists the model must skip.

use fex::Plan;
use fex::config::{Op, Source};
use fex::proto::fex_v1::DataType;
use fex::proto::matrix::LineId;
use fex::proto::monolith_pb::{self as pb, feature::Type};
use prost::Message;
use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, Zipf};

/// Shape of the generated requests.
#[derive(Debug, Clone)]
pub struct GenOptions {
    /// Candidates per request (ExampleBatch.batch_size).
    pub batch_size: usize,
    /// Fids per sparse feature, drawn uniformly from this range.
    pub list_len: (usize, usize),
    /// Zipf exponent of fid popularity, over `vocab` distinct values per slot.
    pub zipf_exponent: f64,
    pub vocab: u64,
    /// Extra lists the model does not read (snapshot-like requests carry many).
    pub noise_lists: usize,
    pub seed: u64,
    /// Every row of a request carries the request's LineId `req_id` and
    /// `req_time`, as a ranking request's rows do. Off: each row draws its
    /// own (the default, which earlier files were made with).
    pub per_request_identity: bool,
}

impl Default for GenOptions {
    fn default() -> Self {
        Self {
            batch_size: 256,
            list_len: (1, 8),
            zipf_exponent: 1.1,
            vocab: 1_000_000,
            noise_lists: 0,
            seed: 1,
            per_request_identity: false,
        }
    }
}

/// Whether a source is sent as a SHARED list: `shared: once` outputs and
/// sources named `user_*` or `ctx_*`.
fn is_shared(plan: &Plan, source: usize) -> bool {
    let name = &plan.source_names[source];
    name.starts_with("user_")
        || name.starts_with("ctx_")
        || plan.outputs.iter().any(|o| o.shared_once && o.source() == Source::Feature(source))
}

pub struct Generator {
    plan: Plan,
    options: GenOptions,
    rng: StdRng,
    zipf: Zipf<f64>,
    /// The request's (req_id, req_time), with `per_request_identity`.
    request: Option<(String, i64)>,
}

impl Generator {
    pub fn new(plan: Plan, options: GenOptions) -> anyhow::Result<Self> {
        let zipf = Zipf::new(options.vocab.max(1) as f64, options.zipf_exponent)
            .map_err(|e| anyhow::anyhow!("bad zipf parameters: {e}"))?;
        anyhow::ensure!(options.list_len.0 <= options.list_len.1, "list length range {:?} is empty", options.list_len);
        let rng = StdRng::seed_from_u64(options.seed);
        Ok(Self { plan, options, rng, zipf, request: None })
    }

    /// One request, serialized.
    pub fn next_bytes(&mut self) -> Vec<u8> {
        self.next_batch().encode_to_vec()
    }

    pub fn next_batch(&mut self) -> pb::ExampleBatch {
        let rows = self.options.batch_size;
        if self.options.per_request_identity {
            let time = 1_700_000_000 + self.rng.random_range(0..86_400);
            self.request = Some((format!("req-{:016x}", self.rng.random::<u64>()), time));
        }
        let mut lists = Vec::new();
        let mut done = vec![false; self.plan.source_names.len()];
        for output in self.plan.outputs.clone() {
            let Some(source) = self.source_index(output.source()) else { continue };
            if std::mem::replace(&mut done[source], true) {
                continue;
            }
            let shared = matches!(output.source(), Source::Feature(_)) && is_shared(&self.plan, source);
            let count = if shared { 1 } else { rows };
            let features = (0..count).map(|_| self.feature(&output.op, source)).collect();
            let name = self.plan.source_names[source].clone();
            lists.push(pb::NamedFeatureList { name, feature: features, r#type: i32::from(shared), id: 0 });
        }
        for i in 0..self.options.noise_lists {
            let features = (0..rows).map(|_| self.fids(0x7000 + i as u64 % 0xfff)).collect();
            lists.push(pb::NamedFeatureList { name: format!("noise_{i}"), feature: features, r#type: 0, id: 0 });
        }
        pb::ExampleBatch { named_feature_list: lists, batch_size: rows as i32, ..Default::default() }
    }

    fn source_index(&self, source: Source) -> Option<usize> {
        let name = match source {
            Source::Feature(i) => return Some(i),
            Source::LineId => "__LINE_ID__",
            Source::Label => "__LABEL__",
            Source::Weight => "instance_weight",
            Source::Derived => return None,
        };
        self.plan.source_names.iter().position(|n| n == name)
    }

    fn feature(&mut self, op: &Op, source: usize) -> pb::Feature {
        let kind = match op {
            Op::Sparse { .. } => return self.fids(source as u64 + 1),
            Op::Dense { dtype, dim, .. } => self.dense(*dtype, *dim),
            Op::String { .. } => Type::BytesList(pb::BytesList {
                value: vec![format!("item-{}", self.rng.random::<u32>()).into_bytes()],
            }),
            Op::Sequence { dtype, max_len, width, .. } => self.sequence(*dtype, *max_len, *width),
            Op::List { dtype, .. } => {
                let n = self.rng.random_range(self.options.list_len.0..=self.options.list_len.1);
                self.dense(*dtype, n)
            }
            Op::LineId { .. } | Op::ActionLabel { .. } => {
                Type::BytesList(pb::BytesList { value: vec![self.line_id().encode_to_vec()] })
            }
            Op::Label { dim, .. } => Type::FloatList(pb::FloatList {
                value: (0..*dim).map(|_| f32::from(self.rng.random_bool(0.1))).collect(),
            }),
            Op::Weight => Type::FloatList(pb::FloatList { value: vec![1.0] }),
            Op::Derived(_) => return pb::Feature::default(),
        };
        pb::Feature { r#type: Some(kind) }
    }

    fn fid(&mut self, slot: u64) -> u64 {
        ((slot & 0x7fff) << 48) | (self.zipf.sample(&mut self.rng) as u64)
    }

    fn fids(&mut self, slot: u64) -> pb::Feature {
        let n = self.rng.random_range(self.options.list_len.0..=self.options.list_len.1);
        let value = (0..n).map(|_| self.fid(slot)).collect();
        pb::Feature { r#type: Some(Type::FidV2List(pb::FidList { value })) }
    }

    fn dense(&mut self, dtype: DataType, dim: usize) -> Type {
        match dtype {
            DataType::I64 => {
                Type::Int64List(pb::Int64List { value: (0..dim).map(|_| self.rng.random_range(0..1000)).collect() })
            }
            DataType::F64 => Type::DoubleList(pb::DoubleList { value: (0..dim).map(|_| self.rng.random()).collect() }),
            _ => Type::FloatList(pb::FloatList { value: (0..dim).map(|_| self.rng.random()).collect() }),
        }
    }

    fn sequence(&mut self, dtype: DataType, max_len: usize, width: usize) -> Type {
        let positions = self.rng.random_range(0..=max_len);
        match dtype {
            DataType::F32 | DataType::F64 => Type::FloatLists(pb::FloatLists {
                list: (0..positions)
                    .map(|_| pb::FloatList { value: (0..width).map(|_| self.rng.random()).collect() })
                    .collect(),
            }),
            _ => Type::FidV2Lists(pb::FidLists {
                list: (0..positions)
                    .map(|_| pb::FidList { value: (0..width).map(|_| self.fid(0x100)).collect() })
                    .collect(),
            }),
        }
    }

    fn line_id(&mut self) -> LineId {
        let uid = self.rng.random();
        let req_time = match &self.request {
            Some((_, time)) => *time,
            None => 1_700_000_000 + self.rng.random_range(0..86_400),
        };
        let item_id = self.rng.random();
        let req_id = match &self.request {
            Some((id, _)) => id.clone(),
            None => format!("req-{:016x}", self.rng.random::<u64>()),
        };
        LineId {
            uid: Some(uid),
            req_time: Some(req_time),
            item_id: Some(item_id),
            req_id: Some(req_id),
            actions: (0..self.rng.random_range(0..3)).map(|_| self.rng.random_range(1..10)).collect(),
            sample_rate: Some(1.0),
            ..Default::default()
        }
    }
}
