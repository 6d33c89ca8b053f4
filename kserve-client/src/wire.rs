//! An inference request's bytes as they go on the wire, for load generators
//! that drive their own connections (a flood of many connections, each with
//! one request at a time or many streams) instead of the [`Client`](crate::Client)'s pool.

use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;

use crate::InferRequest;

/// The HTTP path of the request's `infer` call.
pub fn http_path(request: &InferRequest) -> String {
    crate::http::infer_path(request)
}

/// The HTTP body with Triton's binary tensor data extension, and the length of
/// its JSON head (the `Inference-Header-Content-Length` header's value).
pub fn http_body(request: &InferRequest) -> (usize, Bytes) {
    crate::http::encode_infer(request)
}

/// The gRPC path of ModelInfer.
pub const GRPC_INFER_PATH: &str = "/inference.GRPCInferenceService/ModelInfer";

/// The request as one gRPC message frame: an uncompressed flag, the length
/// (4 bytes, big-endian), then the encoded ModelInferRequest.
pub fn grpc_frame(request: &InferRequest) -> Bytes {
    let message = crate::grpc::encode_infer(request);
    let length = message.encoded_len();
    let mut frame = BytesMut::with_capacity(5 + length);
    frame.put_u8(0);
    frame.put_u32(length as u32);
    message.encode(&mut frame).expect("the buffer was sized to the message");
    frame.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{pb, Tensor};

    #[test]
    fn grpc_frame_holds_one_length_prefixed_message() {
        let request = InferRequest::new("mlp", vec![Tensor::from_f32("input", vec![1, 2], &[1.0, 2.0])]);
        let frame = grpc_frame(&request);
        assert_eq!(frame[0], 0, "uncompressed");
        let length = u32::from_be_bytes(frame[1..5].try_into().unwrap()) as usize;
        assert_eq!(length, frame.len() - 5);
        let decoded = pb::ModelInferRequest::decode(&frame[5..]).unwrap();
        assert_eq!(decoded.model_name, "mlp");
        assert_eq!(decoded.raw_input_contents, vec![Bytes::from_static(&[0, 0, 128, 63, 0, 0, 0, 64])]);
    }

    #[test]
    fn http_body_starts_with_its_json_head() {
        let request = InferRequest::new("a b", vec![Tensor::from_f32("input", vec![1, 1], &[1.0])]);
        let (head, body) = http_body(&request);
        let json: serde_json::Value = serde_json::from_slice(&body[..head]).unwrap();
        assert_eq!(json["inputs"][0]["name"], "input");
        assert_eq!(&body[head..], &1.0f32.to_le_bytes());
        assert_eq!(http_path(&request), "/v2/models/a%20b/infer");
    }
}
