//! Batch body encode/decode (being written by the protocol helper).
