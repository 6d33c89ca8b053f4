//! BYTES tensors: elements that are byte strings of any length.
//!
//! A [`DType::Bytes`] tensor keeps the usual dtype, shape and 64-byte aligned
//! buffer, whose elements are fixed-size *slots*, one per string: the
//! string's start and length (two native-endian `u64`s) in the tensor's
//! *heap*, one shared byte vector holding every string's bytes. So taking
//! rows ([`Tensor::rows`]) is a view of the slots sharing both the slot
//! buffer and the heap (splitting a batch per request copies nothing), and a
//! zeroed slot is the empty string (a tensor of zeros is one of empty strings).
//!
//! Building one ([`StringsBuilder`], [`Tensor::from_strings`]) is two
//! allocations, the slots and the heap, whatever the element count; stitching
//! a batch ([`super::stitch`]) is the same two plus one copy of each part's
//! strings. Strings are bytes: nothing requires UTF-8, and a NUL byte is an
//! ordinary byte.
//!
//! The protocol's wire form of a BYTES tensor (Triton's binary tensor data
//! and `raw_input_contents`) is every element as a 4-byte little-endian
//! length followed by its bytes: [`Tensor::from_length_prefixed`] reads it
//! (checking every prefix against the bytes that remain and the count against
//! the shape) and [`Tensor::write_length_prefixed`] writes it.

use std::sync::Arc;

use super::{checked_len, Buffer, DType, Shape, Tensor, TensorError};

/// Bytes of one element's slot: its start and its length in the heap.
pub const SLOT_BYTES: usize = 16;

/// Bytes of a length prefix in the wire form.
const PREFIX_BYTES: usize = 4;

/// Builds a BYTES tensor string by string into one heap and one slot table.
#[derive(Debug, Default)]
pub struct StringsBuilder {
    heap: Vec<u8>,
    slots: Vec<u8>,
}

impl StringsBuilder {
    /// A builder with room for `elements` strings of `bytes` bytes in all.
    pub fn with_capacity(elements: usize, bytes: usize) -> Self {
        StringsBuilder { heap: Vec::with_capacity(bytes), slots: Vec::with_capacity(elements * SLOT_BYTES) }
    }

    /// Appends one string.
    pub fn push(&mut self, bytes: &[u8]) {
        self.slots.extend_from_slice(&(self.heap.len() as u64).to_ne_bytes());
        self.slots.extend_from_slice(&(bytes.len() as u64).to_ne_bytes());
        self.heap.extend_from_slice(bytes);
    }

    /// Strings pushed so far.
    pub fn len(&self) -> usize {
        self.slots.len() / SLOT_BYTES
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The tensor of `shape` holding the strings pushed, which must be as many as the shape holds.
    pub fn finish(self, shape: impl Into<Shape>) -> Result<Tensor, TensorError> {
        let shape: Shape = shape.into();
        let expected = checked_len(&shape, DType::Bytes)?;
        if expected != self.len() {
            return Err(TensorError::ElementCount { shape: shape.to_vec(), expected, got: self.len() });
        }
        let buffer = Buffer::concat(self.slots.len(), std::iter::once(self.slots.as_slice()));
        Ok(Tensor { dtype: DType::Bytes, shape, buffer: Arc::new(buffer), offset: 0, heap: Some(Arc::new(self.heap)) })
    }
}

/// The strings of a BYTES tensor, in row-major order ([`Tensor::as_strings`]).
#[derive(Clone, Copy)]
pub struct Strings<'a> {
    slots: &'a [u8],
    heap: &'a [u8],
}

impl<'a> Strings<'a> {
    /// Number of strings.
    pub fn len(&self) -> usize {
        self.slots.len() / SLOT_BYTES
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// String `i` (panics past the end).
    pub fn get(&self, i: usize) -> &'a [u8] {
        let slot = &self.slots[i * SLOT_BYTES..(i + 1) * SLOT_BYTES];
        let word = |at: usize| u64::from_ne_bytes(slot[at..at + 8].try_into().expect("8 bytes")) as usize;
        let (start, len) = (word(0), word(8));
        &self.heap[start..start + len]
    }

    /// Every string, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        let this = *self;
        (0..self.len()).map(move |i| this.get(i))
    }

    /// Bytes of all the strings together.
    pub fn total_bytes(&self) -> usize {
        self.iter().map(<[u8]>::len).sum()
    }
}

impl Tensor {
    /// A BYTES tensor of `shape` holding `strings` in row-major order.
    pub fn from_strings<S: AsRef<[u8]>>(
        shape: Vec<usize>,
        strings: impl IntoIterator<Item = S>,
    ) -> Result<Tensor, TensorError> {
        let mut builder = StringsBuilder::default();
        for s in strings {
            builder.push(s.as_ref());
        }
        builder.finish(shape)
    }

    /// A BYTES tensor of `shape` over `heap`, whose string `i` starts at
    /// `starts[i]` and ends where the next starts (the last at the heap's end):
    /// the layout ONNX Runtime hands string tensors out in. The heap is kept, not copied.
    pub fn from_string_starts(shape: Vec<usize>, heap: Vec<u8>, starts: &[usize]) -> Result<Tensor, TensorError> {
        let expected = checked_len(&shape, DType::Bytes)?;
        if expected != starts.len() {
            return Err(TensorError::ElementCount { shape, expected, got: starts.len() });
        }
        let ends = starts.iter().skip(1).copied().chain([heap.len()]);
        let mut slots = Vec::with_capacity(starts.len() * SLOT_BYTES);
        for (index, (&start, end)) in starts.iter().zip(ends).enumerate() {
            if start > end || end > heap.len() {
                return Err(TensorError::BytesLength {
                    index,
                    offset: start,
                    len: end.wrapping_sub(start),
                    remaining: heap.len().saturating_sub(start),
                });
            }
            slots.extend_from_slice(&(start as u64).to_ne_bytes());
            slots.extend_from_slice(&((end - start) as u64).to_ne_bytes());
        }
        StringsBuilder { heap, slots }.finish(shape)
    }

    /// The strings of a BYTES tensor (an error for any other dtype).
    pub fn as_strings(&self) -> Result<Strings<'_>, TensorError> {
        if self.dtype != DType::Bytes {
            return Err(TensorError::DType { actual: self.dtype, asked: DType::Bytes });
        }
        let heap = self.heap.as_deref().map_or(&[][..], Vec::as_slice);
        Ok(Strings { slots: self.as_bytes(), heap })
    }

    /// A BYTES tensor of `shape` from its wire form: each element a 4-byte
    /// little-endian length and that many bytes, as many elements as the
    /// shape holds and nothing after them. Errors name the element and the
    /// byte offset where the data goes wrong.
    pub fn from_length_prefixed(shape: Vec<usize>, data: &[u8]) -> Result<Tensor, TensorError> {
        let expected = checked_len(&shape, DType::Bytes)?;
        // Every element takes at least its prefix: a shape the data cannot fill allocates nothing.
        if expected > data.len() / PREFIX_BYTES {
            return Err(TensorError::ElementCount { shape, expected, got: count_prefixed(data) });
        }
        let mut builder = StringsBuilder::with_capacity(expected, data.len() - expected * PREFIX_BYTES);
        let mut at = 0;
        for index in 0..expected {
            let rest = &data[at..];
            if rest.is_empty() {
                return Err(TensorError::ElementCount { shape, expected, got: index });
            }
            let Some(prefix) = rest.get(..PREFIX_BYTES) else {
                return Err(TensorError::BytesPrefix { index, offset: at, remaining: rest.len() });
            };
            let len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
            let Some(bytes) = rest[PREFIX_BYTES..].get(..len) else {
                let remaining = rest.len() - PREFIX_BYTES;
                return Err(TensorError::BytesLength { index, offset: at, len, remaining });
            };
            builder.push(bytes);
            at += PREFIX_BYTES + len;
        }
        if at < data.len() {
            return Err(TensorError::BytesTrailing { expected, extra: data.len() - at });
        }
        builder.finish(shape)
    }

    /// Appends this BYTES tensor's wire form (see [`Tensor::from_length_prefixed`]) to `out`.
    /// An error for another dtype, or for a string of 4 GiB or more (its length has no prefix).
    pub fn write_length_prefixed(&self, out: &mut Vec<u8>) -> Result<(), TensorError> {
        let strings = self.as_strings()?;
        out.reserve(strings.len() * PREFIX_BYTES + strings.total_bytes());
        for (index, s) in strings.iter().enumerate() {
            let len = u32::try_from(s.len()).map_err(|_| TensorError::BytesTooLong { index, len: s.len() })?;
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(s);
        }
        Ok(())
    }

    /// Bytes of this BYTES tensor's wire form, or of any other tensor's elements.
    pub fn wire_len(&self) -> usize {
        match self.as_strings() {
            Ok(strings) => strings.len() * PREFIX_BYTES + strings.total_bytes(),
            Err(_) => self.len() * self.dtype.size(),
        }
    }
}

/// Whole elements `data` holds in the wire form (for an error message).
fn count_prefixed(data: &[u8]) -> usize {
    let (mut at, mut n) = (0usize, 0);
    while let Some(prefix) = data.get(at..at + PREFIX_BYTES) {
        let len = u32::from_le_bytes(prefix.try_into().expect("4 bytes")) as usize;
        at = at.saturating_add(PREFIX_BYTES + len);
        if at > data.len() {
            break;
        }
        n += 1;
    }
    n
}

/// The strings of `parts` (BYTES tensors, checked to stitch) in one new tensor of `shape`.
pub(super) fn stitch_strings(parts: &[&Tensor], shape: Shape) -> Result<Tensor, TensorError> {
    let strings = parts.iter().map(|p| p.as_strings()).collect::<Result<Vec<_>, _>>()?;
    let elements = strings.iter().map(Strings::len).sum();
    let bytes = strings.iter().map(Strings::total_bytes).sum();
    let mut builder = StringsBuilder::with_capacity(elements, bytes);
    for s in strings.iter().flat_map(Strings::iter) {
        builder.push(s);
    }
    builder.finish(shape)
}

/// Whether a BYTES tensor's slots and heap hold exactly its own strings, in order.
pub(super) fn is_compact(tensor: &Tensor) -> bool {
    let Ok(strings) = tensor.as_strings() else { return true };
    let heap_len = tensor.heap.as_ref().map_or(0, |h| h.len());
    tensor.offset == 0 && strings.slots.len() == tensor.buffer.len && strings.total_bytes() == heap_len
}

#[cfg(test)]
mod tests {
    use super::super::stitch;
    use super::*;

    fn prefixed(items: &[&[u8]]) -> Vec<u8> {
        items.iter().flat_map(|s| (s.len() as u32).to_le_bytes().into_iter().chain(s.iter().copied())).collect()
    }

    #[test]
    fn strings_round_trip_through_the_wire_form_bytes_and_all() {
        let items: [&[u8]; 4] = [b"hello", b"", b"\xff\x00\xfe not utf-8", "é😀".as_bytes()];
        let t = Tensor::from_length_prefixed(vec![2, 2], &prefixed(&items)).unwrap();
        assert_eq!((t.dtype(), t.shape()), (DType::Bytes, &[2usize, 2][..]));
        assert_eq!(t.as_strings().unwrap().iter().collect::<Vec<_>>(), items);
        let mut out = Vec::new();
        t.write_length_prefixed(&mut out).unwrap();
        assert_eq!(out, prefixed(&items));
        assert_eq!(t.wire_len(), out.len());
    }

    #[test]
    fn batches_stitch_and_split_back_per_request_without_copying() {
        let a = Tensor::from_strings(vec![1, 2], ["a", "bb"]).unwrap();
        let b = Tensor::from_strings(vec![2, 2], ["ccc", "", "d", "\u{0}e"]).unwrap();
        let batch = stitch(&[&a, &b]).unwrap();
        assert_eq!(batch.shape(), &[3, 2]);
        let (back_a, back_b) = (batch.rows(0..1), batch.rows(1..3));
        assert_eq!((&back_a, &back_b), (&a, &b));
        assert!(Arc::ptr_eq(back_b.heap.as_ref().unwrap(), batch.heap.as_ref().unwrap()), "views share the heap");
        assert_eq!(back_b.rows(1..2).as_strings().unwrap().iter().collect::<Vec<_>>(), [&b"d"[..], b"\0e"]);
        // A view kept alone is compacted to its own strings.
        let own = back_b.rows(1..2).compact();
        assert!(is_compact(&own) && !is_compact(&back_b));
        assert_eq!(own.heap.as_ref().unwrap().as_slice(), b"d\0e");
        assert_eq!(own, back_b.rows(1..2));
    }

    #[test]
    fn equality_compares_strings_not_slots() {
        let a = Tensor::from_strings(vec![2], ["x", "y"]).unwrap();
        let batch = stitch(&[&Tensor::from_strings(vec![1], ["zz"]).unwrap(), &a]).unwrap();
        assert_eq!(batch.rows(1..3), a, "same strings at other heap offsets");
        assert_ne!(Tensor::from_strings(vec![2], ["x", "z"]).unwrap(), a);
        assert_eq!(format!("{a:?}"), "Tensor(bytes [2] [\"x\", \"y\"])");
    }

    #[test]
    fn starts_over_one_heap_make_a_tensor_and_bad_starts_are_refused() {
        let t = Tensor::from_string_starts(vec![3], b"abcd".to_vec(), &[0, 1, 1]).unwrap();
        assert_eq!(t.as_strings().unwrap().iter().collect::<Vec<_>>(), [&b"a"[..], b"", b"bcd"]);
        assert!(Tensor::from_string_starts(vec![2], b"ab".to_vec(), &[1, 0]).is_err());
        assert!(Tensor::from_string_starts(vec![1], b"ab".to_vec(), &[3]).is_err());
        assert!(Tensor::from_string_starts(vec![2], b"ab".to_vec(), &[0]).is_err());
    }

    #[test]
    fn zeros_are_empty_strings_and_crops_keep_the_heap() {
        let z = Tensor::zeros(DType::Bytes, vec![2, 3]).unwrap();
        assert!(z.as_strings().unwrap().iter().all(<[u8]>::is_empty));
        let t = Tensor::from_strings(vec![1, 3], ["p", "q", "r"]).unwrap();
        assert_eq!(t.crop_to(&[1, 2]).unwrap(), Tensor::from_strings(vec![1, 2], ["p", "q"]).unwrap());
    }

    #[test]
    fn bad_wire_data_is_refused_naming_the_element_and_offset() {
        let err = |shape: Vec<usize>, data: &[u8]| Tensor::from_length_prefixed(shape, data).unwrap_err().to_string();
        let two = prefixed(&[b"ab", b"c"]);
        // A prefix claiming more bytes than remain.
        let mut long = two.clone();
        long[6] = 9;
        assert_eq!(err(vec![2], &long), "BYTES element 1: its length prefix at byte 6 says 9 bytes but only 1 follow");
        // A prefix cut short.
        assert_eq!(
            err(vec![2], &two[..8]),
            "BYTES element 1: a 4-byte length prefix is due at byte 6 but only 2 bytes remain"
        );
        // Counts that disagree with the shape, either way.
        assert_eq!(err(vec![3], &two), "shape [3] holds 3 elements but 2 were given");
        assert_eq!(err(vec![1], &two), "BYTES data holds 5 bytes after the shape's 1 elements");
        assert_eq!(err(vec![4, 1], &[0; 8]), "shape [4, 1] holds 4 elements but 2 were given");
        assert!(Tensor::from_length_prefixed(vec![0], &[]).unwrap().is_empty());
    }

    #[test]
    fn fixed_size_operations_refuse_bytes_tensors() {
        let t = Tensor::from_strings(vec![1], ["x"]).unwrap();
        assert!(Tensor::from_bytes(DType::Bytes, vec![1], &[0; 16]).is_err());
        assert!(Tensor::from_f64(DType::Bytes, vec![1], &[0.0]).is_err());
        assert!(super::super::stitch_padded(&[&t, &t], &[], &[], 0.0).is_err());
        assert!(super::super::TensorPool::new(1).take(DType::Bytes, &[1], 0).is_err());
        assert!(Tensor::from_vec(vec![1], vec![1.0f32]).unwrap().as_strings().is_err());
    }
}
