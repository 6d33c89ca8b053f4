//! Element types: [`DType`] and the Rust types that map to them.

use std::fmt;

/// Element type of a tensor. Names follow ONNX (`f32` = `tensor(float)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F64,
    F16,
    /// bfloat16: the top half of an `f32` (8 exponent bits, 7 mantissa bits).
    BF16,
    I64,
    I32,
    I16,
    I8,
    U8,
    U16,
    U32,
    U64,
    Bool,
    /// Variable-length byte strings (ONNX `tensor(string)`, the protocol's
    /// `BYTES`); see [`super::strings`] for how their elements are held.
    Bytes,
}

impl DType {
    /// Bytes per element in a tensor's buffer: for [`DType::Bytes`], the size
    /// of one element's slot (where its bytes lie), not of its bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::Bytes => super::strings::SLOT_BYTES,
            DType::F64 | DType::I64 | DType::U64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::I8 | DType::U8 | DType::Bool => 1,
        }
    }

    /// The short name used in configs and messages (`f32`, `i64`, `bool`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::I16 => "i16",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::Bool => "bool",
            DType::Bytes => "bytes",
        }
    }

    /// The KServe v2 / Open Inference Protocol datatype name (`FP32`, `INT64`, ...).
    pub const fn kserve_name(self) -> &'static str {
        match self {
            DType::F32 => "FP32",
            DType::F64 => "FP64",
            DType::F16 => "FP16",
            DType::BF16 => "BF16",
            DType::I64 => "INT64",
            DType::I32 => "INT32",
            DType::I16 => "INT16",
            DType::I8 => "INT8",
            DType::U8 => "UINT8",
            DType::U16 => "UINT16",
            DType::U32 => "UINT32",
            DType::U64 => "UINT64",
            DType::Bool => "BOOL",
            DType::Bytes => "BYTES",
        }
    }

    /// The dtype whose KServe v2 datatype name is `name` ([`Self::kserve_name`]).
    pub fn from_kserve_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().chain([DType::Bytes]).find(|d| d.kserve_name() == name)
    }

    /// Whether elements have a fixed size (every dtype but [`DType::Bytes`]).
    pub const fn is_fixed_size(self) -> bool {
        !matches!(self, DType::Bytes)
    }

    /// Every fixed-size dtype: all but [`DType::Bytes`], whose tensors are not
    /// made from raw element bytes.
    pub const ALL: [DType; 13] = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::I32,
        DType::I16,
        DType::I8,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::Bool,
    ];

    /// Parses a short name (`f32`) or an ONNX/numpy-style long name (`float32`, `float`, `int64`, `string`).
    pub fn parse(name: &str) -> Option<DType> {
        Some(match name {
            "f32" | "float32" | "float" | "FP32" => DType::F32,
            "f64" | "float64" | "double" | "FP64" => DType::F64,
            "f16" | "float16" | "half" | "FP16" => DType::F16,
            "bf16" | "bfloat16" | "BF16" => DType::BF16,
            "i64" | "int64" | "INT64" => DType::I64,
            "i32" | "int32" | "INT32" => DType::I32,
            "i16" | "int16" | "INT16" => DType::I16,
            "i8" | "int8" | "INT8" => DType::I8,
            "u8" | "uint8" | "UINT8" => DType::U8,
            "u16" | "uint16" | "UINT16" => DType::U16,
            "u32" | "uint32" | "UINT32" => DType::U32,
            "u64" | "uint64" | "UINT64" => DType::U64,
            "bool" | "BOOL" => DType::Bool,
            "bytes" | "string" | "BYTES" => DType::Bytes,
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust element type that maps to a [`DType`].
///
/// # Safety
/// `DTYPE.size()` must equal `size_of::<Self>()`, and every value of `Self`
/// must be a valid bit pattern for `DTYPE` (and the reverse, except `bool`,
/// whose bytes are checked where tensors are built from raw bytes).
pub unsafe trait Element: Copy + Send + Sync + 'static {
    const DTYPE: DType;
    /// `value` converted like `as` (`f16`, `bf16`: nearest; `bool`: non-zero).
    fn from_f64(value: f64) -> Self;
    /// This value as `f64` (`bool`: 0 or 1).
    fn to_f64(self) -> f64;
}

macro_rules! element {
    ($($t:ty => $d:ident),*) => {$(unsafe impl Element for $t {
        const DTYPE: DType = DType::$d;
        fn from_f64(value: f64) -> Self {
            value as $t
        }
        fn to_f64(self) -> f64 {
            self as f64
        }
    })*};
}
element!(f32 => F32, f64 => F64, i64 => I64, i32 => I32, i16 => I16, i8 => I8, u8 => U8, u16 => U16, u32 => U32, u64 => U64);

unsafe impl Element for half::f16 {
    const DTYPE: DType = DType::F16;
    fn from_f64(value: f64) -> Self {
        half::f16::from_f64(value)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

unsafe impl Element for half::bf16 {
    const DTYPE: DType = DType::BF16;
    fn from_f64(value: f64) -> Self {
        half::bf16::from_f64(value)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

unsafe impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn from_f64(value: f64) -> Self {
        value != 0.0
    }
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsigned_and_bf16_dtypes_have_their_sizes_and_names() {
        let cases = [
            (DType::U16, 2, "u16", "UINT16", "uint16"),
            (DType::U32, 4, "u32", "UINT32", "uint32"),
            (DType::U64, 8, "u64", "UINT64", "uint64"),
            (DType::BF16, 2, "bf16", "BF16", "bfloat16"),
        ];
        for (dtype, size, name, kserve, long) in cases {
            assert_eq!(dtype.size(), size, "{dtype:?}");
            assert_eq!(dtype.name(), name);
            assert_eq!(dtype.kserve_name(), kserve);
            assert_eq!(DType::from_kserve_name(kserve), Some(dtype));
            assert_eq!(DType::parse(name), Some(dtype));
            assert_eq!(DType::parse(long), Some(dtype));
            assert!(DType::ALL.contains(&dtype) && dtype.is_fixed_size());
        }
    }

    #[test]
    fn every_dtype_has_distinct_names_that_parse_back() {
        let all: Vec<DType> = DType::ALL.into_iter().chain([DType::Bytes]).collect();
        for (i, d) in all.iter().enumerate() {
            assert_eq!(DType::parse(d.name()), Some(*d));
            assert_eq!(DType::parse(d.kserve_name()), Some(*d));
            assert!(all[i + 1..].iter().all(|o| o.name() != d.name() && o.kserve_name() != d.kserve_name()));
        }
    }

    fn element_size_matches<T: Element>() {
        assert_eq!(T::DTYPE.size(), std::mem::size_of::<T>(), "{:?}", T::DTYPE);
    }

    #[test]
    fn new_element_types_match_their_dtype_and_convert() {
        element_size_matches::<u16>();
        element_size_matches::<u32>();
        element_size_matches::<u64>();
        element_size_matches::<half::bf16>();
        assert_eq!(u64::from_f64(4_294_967_296.0), 1 << 32);
        assert_eq!(half::bf16::from_f64(1.5).to_f64(), 1.5);
        // bf16 keeps 8 bits of mantissa: 257 rounds to 256.
        assert_eq!(half::bf16::from_f64(257.0).to_f64(), 256.0);
    }
}
