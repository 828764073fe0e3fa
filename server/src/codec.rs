//! The codec of `fex.v1`: prost encoding and decoding, except that
//! - a request message that does not decode is the caller's mistake,
//!   INVALID_ARGUMENT naming what was wrong, where tonic's prost codec answers
//!   INTERNAL (which this server keeps for its own bugs);
//! - an Extract request keeps the bytes it arrived as (`ExtractCall`: tonic's
//!   buffer, shared, not copied), so the request log writes what the client
//!   sent, fields this server does not know included;
//! - a response is encoded into a buffer reserved for its whole length first,
//!   so its tensor bytes are copied exactly once. tonic's prost encoder
//!   writes into an 8 KiB buffer that grows by doubling as prost appends,
//!   which for a 120 KB response copies another 120 KB in reallocations.

use std::marker::PhantomData;

use bytes::{Buf, Bytes, BytesMut};
use fex::proto::fex_v1::{DescribeModelRequest, ExtractRequest, ListModelsRequest};
use fex::proto::inference;
use prost::Message;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

use crate::status::ServeError;

/// Encodes responses `T` once; decodes requests `U` strictly.
#[derive(Debug, Clone)]
pub struct RequestCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for RequestCodec<T, U> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

/// A request message the service takes, decoded from the message's bytes.
pub trait RequestMessage: Sized + Send + 'static {
    fn decode_request(bytes: Bytes) -> Result<Self, prost::DecodeError>;
}

/// An Extract request and the bytes it was decoded from (the generated
/// service takes this type for `fex.v1.ExtractRequest`: server/build.rs).
#[derive(Debug, Clone, Default)]
pub struct ExtractCall {
    pub request: ExtractRequest,
    /// The message exactly as received; the payload's `Bytes` share it.
    pub bytes: Bytes,
}

impl RequestMessage for ExtractCall {
    fn decode_request(bytes: Bytes) -> Result<Self, prost::DecodeError> {
        Ok(Self { request: ExtractRequest::decode(bytes.clone())?, bytes })
    }
}

impl RequestMessage for ListModelsRequest {
    fn decode_request(bytes: Bytes) -> Result<Self, prost::DecodeError> {
        Self::decode(bytes)
    }
}

/// Request messages decoded as they are.
macro_rules! plain_requests {
    ($($t:ty),* $(,)?) => {$(
        impl RequestMessage for $t {
            fn decode_request(bytes: Bytes) -> Result<Self, prost::DecodeError> {
                Self::decode(bytes)
            }
        }
    )*};
}

plain_requests!(
    DescribeModelRequest,
    inference::ServerLiveRequest,
    inference::ServerReadyRequest,
    inference::ModelReadyRequest,
    inference::ServerMetadataRequest,
    inference::ModelMetadataRequest,
    inference::ModelInferRequest,
    // The answers of an upstream model server, decoded the same way (its
    // raw output contents are slices of the received buffer).
    inference::ModelInferResponse,
    inference::ModelReadyResponse,
    inference::ModelMetadataResponse,
);

impl<T, U> Codec for RequestCodec<T, U>
where
    T: Message + Send + 'static,
    U: RequestMessage,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ResponseEncoder<T>;
    type Decoder = RequestDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ResponseEncoder(PhantomData)
    }

    fn decoder(&mut self) -> Self::Decoder {
        RequestDecoder(PhantomData)
    }
}

/// Decodes one request message; a prost error becomes INVALID_ARGUMENT.
#[derive(Debug)]
pub struct RequestDecoder<U>(PhantomData<U>);

impl<U: RequestMessage> Decoder for RequestDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        // The message's bytes split off tonic's buffer (no copy); the
        // decoded payload's `Bytes` are slices of them.
        let bytes = buf.copy_to_bytes(buf.remaining());
        U::decode_request(bytes).map(Some).map_err(|e| {
            let error = ServeError::malformed_request(&e);
            tracing::debug!(error = %error, "request message refused");
            error.into()
        })
    }
}

/// Encodes one response message into a buffer reserved for all of it
/// (also the requests fex sends an upstream model server).
#[derive(Debug)]
pub struct ResponseEncoder<T>(PhantomData<T>);

impl<T> Default for ResponseEncoder<T> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T: Message> Encoder for ResponseEncoder<T> {
    type Item = T;
    type Error = Status;

    fn encode(&mut self, item: T, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        encode_once(&item, buf);
        Ok(())
    }
}

/// A buffer that can be grown to a known size before it is written.
pub trait Reserve: bytes::BufMut {
    fn reserve_exact_len(&mut self, additional: usize);
}

impl Reserve for EncodeBuf<'_> {
    fn reserve_exact_len(&mut self, additional: usize) {
        self.reserve(additional);
    }
}

impl Reserve for BytesMut {
    fn reserve_exact_len(&mut self, additional: usize) {
        self.reserve(additional);
    }
}

/// Reserves the message's encoded length (prost sums the field lengths
/// without touching the tensor bytes), then writes it: one copy of every
/// byte, no reallocation.
pub fn encode_once<T: Message, B: Reserve>(item: &T, buf: &mut B) {
    buf.reserve_exact_len(item.encoded_len());
    item.encode_raw(buf);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;
    use bytes::buf::UninitSlice;
    use fex::proto::fex_v1::ExtractResponse;

    /// A BytesMut that counts the writes that found it full (each one grows
    /// it: a reallocation and a copy of everything written so far).
    struct Watched {
        buf: BytesMut,
        grew: usize,
    }

    unsafe impl BufMut for Watched {
        fn remaining_mut(&self) -> usize {
            self.buf.remaining_mut()
        }

        unsafe fn advance_mut(&mut self, n: usize) {
            // SAFETY: the caller's promise is passed on unchanged.
            unsafe { self.buf.advance_mut(n) }
        }

        fn chunk_mut(&mut self) -> &mut UninitSlice {
            if self.buf.len() == self.buf.capacity() {
                self.grew += 1;
            }
            self.buf.chunk_mut()
        }
    }

    impl Reserve for Watched {
        fn reserve_exact_len(&mut self, additional: usize) {
            self.buf.reserve(additional);
        }
    }

    /// The server's real response to a B = 256 request of the default model
    /// (benches/data/default_b256.pb), written after tonic's 5-byte prefix
    /// into tonic's 8 KiB starting buffer: it never grows, so each byte is
    /// copied once. Written the way tonic's prost encoder writes it, the
    /// buffer grows several times.
    #[test]
    fn a_response_is_encoded_without_regrowing_its_buffer() {
        let request = include_bytes!("../../benches/data/default_b256.pb");
        let out = fex::extract_batch(&fex::Plan::default_model(), request).unwrap();
        let response = ExtractResponse { model: "default".into(), tensors: out.into_tensors(), ..Default::default() };
        let len = response.encoded_len();
        assert!(len > 100_000, "{len}");
        let tonic_buffer = || {
            let mut buf = BytesMut::with_capacity(8 * 1024);
            buf.put_slice(&[0; 5]);
            Watched { buf, grew: 0 }
        };
        let mut once = tonic_buffer();
        encode_once(&response, &mut once);
        assert_eq!(once.grew, 0);
        assert_eq!(once.buf.len(), 5 + len);
        assert_eq!(ExtractResponse::decode(&once.buf[5..]).unwrap(), response);
        let mut plain = tonic_buffer();
        response.encode_raw(&mut plain);
        assert!(plain.grew >= 3, "{} growths", plain.grew);
    }
}
