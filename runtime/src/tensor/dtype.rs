//! Element types: [`DType`] and the Rust types that map to them.

use std::fmt;

/// Element type of a tensor. Names follow ONNX (`f32` = `tensor(float)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F64,
    F16,
    I64,
    I32,
    I16,
    I8,
    U8,
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
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::I16 => 2,
            DType::I8 | DType::U8 | DType::Bool => 1,
        }
    }

    /// The short name used in configs and messages (`f32`, `i64`, `bool`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::I16 => "i16",
            DType::I8 => "i8",
            DType::U8 => "u8",
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
            DType::I64 => "INT64",
            DType::I32 => "INT32",
            DType::I16 => "INT16",
            DType::I8 => "INT8",
            DType::U8 => "UINT8",
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
    pub const ALL: [DType; 9] =
        [DType::F32, DType::F64, DType::F16, DType::I64, DType::I32, DType::I16, DType::I8, DType::U8, DType::Bool];

    /// Parses a short name (`f32`) or an ONNX/numpy-style long name (`float32`, `float`, `int64`, `string`).
    pub fn parse(name: &str) -> Option<DType> {
        Some(match name {
            "f32" | "float32" | "float" | "FP32" => DType::F32,
            "f64" | "float64" | "double" | "FP64" => DType::F64,
            "f16" | "float16" | "half" | "FP16" => DType::F16,
            "i64" | "int64" | "INT64" => DType::I64,
            "i32" | "int32" | "INT32" => DType::I32,
            "i16" | "int16" | "INT16" => DType::I16,
            "i8" | "int8" | "INT8" => DType::I8,
            "u8" | "uint8" | "UINT8" => DType::U8,
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
    /// `value` converted like `as` (`f16`: nearest; `bool`: non-zero).
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
element!(f32 => F32, f64 => F64, i64 => I64, i32 => I32, i16 => I16, i8 => I8, u8 => U8);

unsafe impl Element for half::f16 {
    const DTYPE: DType = DType::F16;
    fn from_f64(value: f64) -> Self {
        half::f16::from_f64(value)
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
