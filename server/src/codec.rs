//! The request codec of `fex.v1`: prost encoding and decoding, except that a
//! request message that does not decode is the caller's mistake,
//! INVALID_ARGUMENT naming what was wrong, where tonic's prost codec answers
//! INTERNAL (which this server keeps for its own bugs).

use std::marker::PhantomData;

use prost::Message;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder};
use tonic_prost::ProstEncoder;

use crate::status::ServeError;

/// Encodes responses `T` as prost does; decodes requests `U` strictly.
#[derive(Debug, Clone)]
pub struct RequestCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for RequestCodec<T, U> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T, U> Codec for RequestCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = RequestDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::default()
    }

    fn decoder(&mut self) -> Self::Decoder {
        RequestDecoder(PhantomData)
    }
}

/// Decodes one request message; a prost error becomes INVALID_ARGUMENT.
#[derive(Debug)]
pub struct RequestDecoder<U>(PhantomData<U>);

impl<U: Message + Default> Decoder for RequestDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        U::decode(buf).map(Some).map_err(|e| {
            let error = ServeError::malformed_request(&e);
            tracing::debug!(error = %error, "request message refused");
            error.into()
        })
    }
}
