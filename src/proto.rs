//! Message types generated from proto/: the Monolith sample formats (used by
//! tests, benches and callers that build samples) and fex.v1, whose `Tensor` is
//! the library's output type. Modules mirror the proto packages so generated
//! cross-package paths resolve.

#![allow(clippy::all, missing_docs)]

pub mod idl {
    pub mod matrix {
        /// `idl.matrix.proto`: LineId and the legacy matrix Feature.
        pub mod proto {
            include!(concat!(env!("OUT_DIR"), "/idl.matrix.proto.rs"));
        }
    }
}

pub mod monolith {
    pub mod io {
        /// `monolith.io.proto`: Feature, Example, ExampleBatch.
        pub mod proto {
            include!(concat!(env!("OUT_DIR"), "/monolith.io.proto.rs"));
        }
    }
}

pub mod parser {
    /// `parser.proto`: the legacy Instance.
    pub mod proto {
        include!(concat!(env!("OUT_DIR"), "/parser.proto.rs"));
    }
}

pub mod fex {
    /// `fex.v1`: tensors and (with the `grpc` feature) the service stubs.
    pub mod v1 {
        include!(concat!(env!("OUT_DIR"), "/fex.v1.rs"));

        /// Encoded FileDescriptorSet of every proto, for gRPC reflection.
        pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/fex_descriptor.bin"));
    }
}

/// `inference`: the Open Inference Protocol (KServe v2) messages and (with
/// the `grpc` feature) its `GRPCInferenceService` stubs. `crate::oip` maps
/// fex's tensors onto them.
pub mod inference {
    include!(concat!(env!("OUT_DIR"), "/inference.rs"));
}

pub use fex::v1 as fex_v1;
pub use idl::matrix::proto as matrix;
pub use monolith::io::proto as monolith_pb;
pub use parser::proto as parser_pb;
