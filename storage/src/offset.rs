//! Physical offsets: the shard id lives in bits 48..62, the shard-local CommitLog byte offset in bits 0..47.
//!
//! ConsumeQueue entries, index entries, the PHYSICALOFFSET field of stored records and offsetMsgIds all
//! carry the full physical offset, so a record can be located from its offset alone (VIEW_MESSAGE_BY_ID,
//! HA). Segment file names and the checkpoint use the shard-local offset.

/// Bits of a physical offset that hold the shard-local byte offset (256 TiB per shard).
pub const LOCAL_OFFSET_BITS: u32 = 48;
/// Mask of the shard-local part.
pub const LOCAL_OFFSET_MASK: i64 = (1 << LOCAL_OFFSET_BITS) - 1;
/// Largest shard id (15 bits; bit 63 stays clear so offsets are positive).
pub const MAX_SHARD_ID: u16 = 0x7FFF;

/// The shard that owns a physical offset.
pub fn shard_of(phys: i64) -> u16 {
    ((phys >> LOCAL_OFFSET_BITS) & i64::from(MAX_SHARD_ID)) as u16
}

/// The shard-local byte offset of a physical offset.
pub fn local_of(phys: i64) -> u64 {
    (phys & LOCAL_OFFSET_MASK) as u64
}

/// The physical offset of a shard-local byte offset.
pub fn physical(shard_id: u16, local: u64) -> i64 {
    (i64::from(shard_id & MAX_SHARD_ID) << LOCAL_OFFSET_BITS) | (local as i64 & LOCAL_OFFSET_MASK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_bits_round_trip() {
        for shard in [0u16, 1, 7, MAX_SHARD_ID] {
            for local in [0u64, 1, 4096, (1 << 48) - 1] {
                let p = physical(shard, local);
                assert!(p >= 0);
                assert_eq!(shard_of(p), shard);
                assert_eq!(local_of(p), local);
            }
        }
        assert_eq!(physical(1, 5), (1 << 48) + 5);
    }
}
