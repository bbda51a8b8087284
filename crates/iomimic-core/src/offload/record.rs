//! One record of a store's log: a 64-byte header and the data it describes, written together
//! in one write so that data and metadata can never disagree. The checksum (CRC-32 by the
//! `crc32fast` crate, already in the build through flate2) covers the header after itself and
//! the data, so a torn or corrupt record is seen as such and ends the scan of the log.
//!
//! ## Format
//! Little-endian: `magic u32 | kind u8 | 3 zero bytes | crc u32 | data_len u32 | lsn u64 |
//! version u64 | client u32 | blocks u32 | start_block u64 | 16 zero bytes`, then `data_len`
//! bytes, the whole padded with zeros to a multiple of [`ALIGN`].

/// "EVR1": an Everest record, layout 1.
pub const MAGIC: u32 = 0x3152_5645;
pub const HEADER: usize = 64;
/// Records start and end on this boundary.
pub const ALIGN: u64 = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Off-loaded data of `blocks` blocks from `start_block`.
    Data = 1,
    /// Releases every version ≤ `version` of the range on this store.
    Delete = 2,
    /// Nothing more fits before the end of the log area: the log goes on at its start.
    Wrap = 3,
}

impl Kind {
    fn from_code(c: u8) -> Option<Kind> {
        match c {
            1 => Some(Kind::Data),
            2 => Some(Kind::Delete),
            3 => Some(Kind::Wrap),
            _ => None,
        }
    }
}

/// A record's header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    /// Log sequence number: one more than the record before it in this store, so a record
    /// left from an earlier lap of the circle is never taken for a new one.
    pub lsn: u64,
    pub version: u64,
    pub client: u32,
    pub start_block: u64,
    pub blocks: u32,
    pub data_len: u32,
}

/// Bytes a record with `data_len` bytes of data takes in the log.
pub fn size(data_len: usize) -> u64 {
    (HEADER as u64 + data_len as u64).div_ceil(ALIGN) * ALIGN
}

/// The record as it is written: header, data, padding.
pub fn encode(h: &Header, data: &[u8]) -> Vec<u8> {
    debug_assert_eq!(h.data_len as usize, data.len());
    let mut out = vec![0u8; size(data.len()) as usize];
    out[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    out[4] = h.kind as u8;
    out[12..16].copy_from_slice(&h.data_len.to_le_bytes());
    out[16..24].copy_from_slice(&h.lsn.to_le_bytes());
    out[24..32].copy_from_slice(&h.version.to_le_bytes());
    out[32..36].copy_from_slice(&h.client.to_le_bytes());
    out[36..40].copy_from_slice(&h.blocks.to_le_bytes());
    out[40..48].copy_from_slice(&h.start_block.to_le_bytes());
    out[HEADER..HEADER + data.len()].copy_from_slice(data);
    let crc = checksum(&out[12..HEADER + data.len()]);
    out[8..12].copy_from_slice(&crc.to_le_bytes());
    out
}

fn checksum(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The header in `head` (at least [`HEADER`] bytes) when its magic and kind are right; the
/// checksum needs the data too ([`verify`]).
pub fn parse_header(head: &[u8]) -> Option<Header> {
    if head.len() < HEADER || u32_at(head, 0) != MAGIC {
        return None;
    }
    Some(Header {
        kind: Kind::from_code(head[4])?,
        data_len: u32_at(head, 12),
        lsn: u64_at(head, 16),
        version: u64_at(head, 24),
        client: u32_at(head, 32),
        blocks: u32_at(head, 36),
        start_block: u64_at(head, 40),
    })
}

/// Whether `record` (header and data, as read back) carries its own checksum.
pub fn verify(record: &[u8], h: &Header) -> bool {
    let end = HEADER + h.data_len as usize;
    record.len() >= end && checksum(&record[12..end]) == u32_at(record, 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            kind: Kind::Data,
            lsn: 7,
            version: 1 << 40,
            client: 3,
            start_block: 12,
            blocks: 2,
            data_len: 1000,
        }
    }

    #[test]
    fn a_record_round_trips_and_is_padded() {
        let data: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let bytes = encode(&header(), &data);
        assert_eq!(bytes.len(), 1536); // 64 + 1000 rounded up to 512
        let h = parse_header(&bytes).unwrap();
        assert_eq!(h, header());
        assert!(verify(&bytes, &h));
        assert_eq!(&bytes[HEADER..HEADER + 1000], &data[..]);
    }

    #[test]
    fn any_flipped_bit_is_detected() {
        let data = vec![0xa5u8; 1000];
        let bytes = encode(&header(), &data);
        for at in (8..HEADER + 1000).step_by(37) {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            let ok = parse_header(&bad).is_some_and(|h| verify(&bad, &h));
            assert!(!ok, "flip at {at} went unseen");
        }
    }

    #[test]
    fn crc32_of_the_standard_check_string() {
        // The catalogued check value of CRC-32/ISO-HDLC: the crate computes the CRC we document.
        assert_eq!(checksum(b"123456789"), 0xCBF4_3926);
    }
}
