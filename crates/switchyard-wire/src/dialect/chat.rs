//! The `chat` dialect. (Being written.)

use crate::codec::*;
use crate::{Dialect, Reply, Request};
use serde_json::{Map, Value};

/// The chat codec.
pub struct ChatCodec;

impl Codec for ChatCodec {
    fn dialect(&self) -> Dialect {
        Dialect::Chat
    }
    fn encode_request(
        &self,
        _request: &Request,
        _options: &EncodeOptions,
    ) -> Result<Map<String, Value>, EncodeError> {
        Err(EncodeError("not yet written".into()))
    }
    fn decode_reply(&self, _body: &[u8]) -> Result<Reply, DecodeError> {
        Err(DecodeError::Malformed("not yet written".into()))
    }
    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        unimplemented!("being written")
    }
    fn decode_request(&self, _body: &[u8]) -> Result<DecodedRequest, DecodeError> {
        Err(DecodeError::Malformed("not yet written".into()))
    }
    fn encode_reply(&self, _reply: &Reply, _context: &ServerContext) -> Vec<u8> {
        Vec::new()
    }
    fn stream_encoder(&self, _context: &ServerContext) -> Box<dyn StreamEncoder> {
        unimplemented!("being written")
    }
}
