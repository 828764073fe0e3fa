//! Test batches encoded list by list, so a list can carry a second name
//! field after its Features (protobuf's last-wins rule), which prost never
//! writes.

use prost::Message;

use crate::proto::monolith_pb as pb;

/// A serialized ExampleBatch of `lists`, each renamed when it has a second name.
pub(super) fn encode(batch_size: i32, lists: Vec<(pb::NamedFeatureList, Option<&str>)>) -> Vec<u8> {
    let mut buf = pb::ExampleBatch { batch_size, ..Default::default() }.encode_to_vec();
    for (list, renamed) in lists {
        let mut body = list.encode_to_vec();
        if let Some(last) = renamed {
            body.extend([0x0a, last.len() as u8]);
            body.extend(last.as_bytes());
        }
        buf.push(0x0a);
        prost::encoding::encode_varint(body.len() as u64, &mut buf);
        buf.extend(body);
    }
    buf
}
