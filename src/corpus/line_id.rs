//! A readable LineId (`line_id: {uid: 7, actions: [1, 2]}`): the fields of
//! `idl.matrix.proto.LineId` by name, encoded with prost. Unset fields stay
//! absent on the wire, so proto2 defaults (sample_rate 1.0) apply.

use prost::Message;
use serde::Deserialize;

use crate::proto::matrix::LineId;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineIdFields {
    pub uid: Option<u64>,
    pub req_time: Option<i64>,
    pub item_id: Option<u64>,
    pub req_id: Option<String>,
    #[serde(default)]
    pub actions: Vec<i32>,
    pub chnid: Option<i64>,
    pub generate_time: Option<i64>,
    pub emit_type: Option<i32>,
    #[serde(default)]
    pub pre_actions: Vec<i32>,
    pub model_names: Option<String>,
    pub sample_rate: Option<f32>,
    #[serde(default)]
    pub special_strategies: Vec<i32>,
    pub device_type: Option<String>,
    pub cid: Option<String>,
    pub user_id: Option<String>,
    pub is_draw: Option<bool>,
    pub rank: Option<i32>,
    pub data_source_name: Option<String>,
}

impl LineIdFields {
    pub fn to_proto(&self) -> LineId {
        LineId {
            uid: self.uid,
            req_time: self.req_time,
            item_id: self.item_id,
            req_id: self.req_id.clone(),
            actions: self.actions.clone(),
            chnid: self.chnid,
            generate_time: self.generate_time,
            emit_type: self.emit_type,
            pre_actions: self.pre_actions.clone(),
            model_names: self.model_names.clone(),
            sample_rate: self.sample_rate,
            special_strategies: self.special_strategies.clone(),
            device_type: self.device_type.clone(),
            cid: self.cid.clone(),
            user_id: self.user_id.clone(),
            is_draw: self.is_draw,
            rank: self.rank,
            data_source_name: self.data_source_name.clone(),
        }
    }

    /// The serialized LineId, as `__LINE_ID__` carries it in bytes_list[0].
    pub fn encode(&self) -> Vec<u8> {
        self.to_proto().encode_to_vec()
    }
}
