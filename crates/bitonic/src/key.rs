//! Key types and their order-preserving maps to unsigned integers.
//!
//! Every backend sorts only `u32` or `u64` words. A key type is sortable when it has a
//! bijection to one of those widths that preserves order; then one network (and one kernel per
//! width) serves every type:
//!
//! | type | map to bits |
//! |---|---|
//! | `u32`, `u64` | identity |
//! | `i32`, `i64` | flip the sign bit, so negatives come first |
//! | `f32`, `f64` | positive (sign 0): flip the sign bit; negative: flip every bit |
//!
//! The float map gives IEEE 754 *total order*, the order of [`f32::total_cmp`]:
//! `-NaN < -inf < … < -0.0 < +0.0 < … < +inf < +NaN`. Negative NaNs (sign bit set) sort first,
//! positive NaNs last, and `-0.0` sorts before `+0.0`.
//!
//! Descending order is the ascending order of the complemented bits (`!bits`), so the
//! networks themselves only ever sort ascending.

use crate::Order;

/// A machine word the sorting networks work on: `u32` or `u64`.
pub trait Bits:
    Copy + Ord + Send + Sync + bytemuck::Pod + cudarc::driver::DeviceRepr + std::fmt::Debug + 'static
{
    /// The largest value; padding up to a power of two behaves as if filled with it.
    const MAX: Self;
    /// The bitwise complement: the word that sorts in the opposite order.
    fn not(self) -> Self;
}

impl Bits for u32 {
    const MAX: Self = u32::MAX;
    fn not(self) -> Self {
        !self
    }
}

impl Bits for u64 {
    const MAX: Self = u64::MAX;
    fn not(self) -> Self {
        !self
    }
}

/// The element types the library sorts, named as in NumPy and on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// `u32`
    U32,
    /// `i32`
    I32,
    /// `u64`
    U64,
    /// `i64`
    I64,
    /// `f32`
    F32,
    /// `f64`
    F64,
}

impl DType {
    /// Every key type.
    pub const ALL: [DType; 6] = [
        DType::U32,
        DType::I32,
        DType::U64,
        DType::I64,
        DType::F32,
        DType::F64,
    ];

    /// Bytes per key.
    pub fn size(self) -> usize {
        match self {
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 => 8,
        }
    }

    /// The NumPy-style name: `u32`, `i32`, `u64`, `i64`, `f32`, `f64`.
    pub fn name(self) -> &'static str {
        match self {
            DType::U32 => "u32",
            DType::I32 => "i32",
            DType::U64 => "u64",
            DType::I64 => "i64",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// Whether sorting this type in `order` needs the key map at all: everything but ascending
    /// unsigned keys does.
    pub fn needs_map(self, order: Order) -> bool {
        self.map_kind() != MapKind::Unsigned || order == Order::Descending
    }

    /// How a key of this type is turned into its sort bits; the GPU map kernels take this code.
    pub fn map_kind(self) -> MapKind {
        match self {
            DType::U32 | DType::U64 => MapKind::Unsigned,
            DType::I32 | DType::I64 => MapKind::Signed,
            DType::F32 | DType::F64 => MapKind::Float,
        }
    }
}

/// The three families of bit maps. The discriminants are shared with the kernels (`BITONIC_MAP_*` defines, src/cuda/layout.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum MapKind {
    /// Unsigned integers: their bits already sort.
    Unsigned = 0,
    /// Two's-complement integers: the sign bit flipped.
    Signed = 1,
    /// IEEE floats: every bit flipped for negatives, the sign bit for the rest.
    Float = 2,
}

/// A key type the library can sort.
///
/// Implemented for `u32`, `i32`, `u64`, `i64`, `f32` and `f64`. `to_bits` and `from_bits` are
/// inverse, and `a < b` in the key's order exactly when `a.to_bits() < b.to_bits()`.
///
/// ```
/// use bitonic::SortKey;
/// assert!((-1.5f32).to_bits_ordered() < 0.25f32.to_bits_ordered());
/// assert!((-0.0f64).to_bits_ordered() < 0.0f64.to_bits_ordered());
/// assert_eq!(i32::from_bits_ordered((-7i32).to_bits_ordered()), -7);
/// ```
pub trait SortKey:
    Copy + Send + Sync + bytemuck::Pod + cudarc::driver::DeviceRepr + std::fmt::Debug + 'static
{
    /// The unsigned word of the same width.
    type Bits: Bits;
    /// The key type's runtime name.
    const DTYPE: DType;
    /// The word whose unsigned order is the key's order.
    fn to_bits_ordered(self) -> Self::Bits;
    /// The key of a word of [`SortKey::to_bits_ordered`].
    fn from_bits_ordered(bits: Self::Bits) -> Self;
}

macro_rules! impl_unsigned {
    ($t:ty, $dtype:ident) => {
        impl SortKey for $t {
            type Bits = $t;
            const DTYPE: DType = DType::$dtype;
            #[inline]
            fn to_bits_ordered(self) -> $t {
                self
            }
            #[inline]
            fn from_bits_ordered(bits: $t) -> $t {
                bits
            }
        }
    };
}

macro_rules! impl_signed {
    ($t:ty, $u:ty, $dtype:ident) => {
        impl SortKey for $t {
            type Bits = $u;
            const DTYPE: DType = DType::$dtype;
            #[inline]
            fn to_bits_ordered(self) -> $u {
                (self as $u) ^ (1 << (<$u>::BITS - 1))
            }
            #[inline]
            fn from_bits_ordered(bits: $u) -> $t {
                (bits ^ (1 << (<$u>::BITS - 1))) as $t
            }
        }
    };
}

macro_rules! impl_float {
    ($t:ty, $u:ty, $i:ty, $dtype:ident) => {
        impl SortKey for $t {
            type Bits = $u;
            const DTYPE: DType = DType::$dtype;
            #[inline]
            fn to_bits_ordered(self) -> $u {
                let bits = self.to_bits();
                // Arithmetic shift spreads the sign: all ones for negatives, zero otherwise.
                let sign_fill = ((bits as $i) >> (<$u>::BITS - 1)) as $u;
                bits ^ (sign_fill | (1 << (<$u>::BITS - 1)))
            }
            #[inline]
            fn from_bits_ordered(bits: $u) -> $t {
                // A set top bit means the key was non-negative: only the sign bit was flipped.
                let mask = if bits >> (<$u>::BITS - 1) == 1 {
                    1 << (<$u>::BITS - 1)
                } else {
                    <$u>::MAX
                };
                <$t>::from_bits(bits ^ mask)
            }
        }
    };
}

impl_unsigned!(u32, U32);
impl_unsigned!(u64, U64);
impl_signed!(i32, u32, I32);
impl_signed!(i64, u64, I64);
impl_float!(f32, u32, i32, F32);
impl_float!(f64, u64, i64, F64);

/// The bits that sort ascending in `order`: complemented for descending.
#[inline]
pub(crate) fn ordered_bits<K: SortKey>(key: K, order: Order) -> K::Bits {
    let bits = key.to_bits_ordered();
    match order {
        Order::Ascending => bits,
        Order::Descending => bits.not(),
    }
}

#[inline]
pub(crate) fn key_from_ordered_bits<K: SortKey>(bits: K::Bits, order: Order) -> K {
    K::from_bits_ordered(match order {
        Order::Ascending => bits,
        Order::Descending => bits.not(),
    })
}

/// Compares two keys in the library's order (total order for floats). Handy for checking results.
pub fn cmp_keys<K: SortKey>(a: &K, b: &K) -> std::cmp::Ordering {
    a.to_bits_ordered().cmp(&b.to_bits_ordered())
}

/// Runs `$body` with `$K` bound to the Rust type of `$dtype`.
///
/// ```
/// use bitonic::{with_key_type, DType};
/// let size = with_key_type!(DType::F64, K => std::mem::size_of::<K>());
/// assert_eq!(size, 8);
/// ```
#[macro_export]
macro_rules! with_key_type {
    ($dtype:expr, $K:ident => $body:expr) => {
        match $dtype {
            $crate::DType::U32 => {
                type $K = u32;
                $body
            }
            $crate::DType::I32 => {
                type $K = i32;
                $body
            }
            $crate::DType::U64 => {
                type $K = u64;
                $body
            }
            $crate::DType::I64 => {
                type $K = i64;
                $body
            }
            $crate::DType::F32 => {
                type $K = f32;
                $body
            }
            $crate::DType::F64 => {
                type $K = f64;
                $body
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_map_is_total_order() {
        let values = [
            f32::from_bits(0xffc0_0000), // -NaN
            f32::NEG_INFINITY,
            -1.0e30,
            -1.0,
            -f32::MIN_POSITIVE,
            -1.0e-45,
            -0.0,
            0.0,
            1.0e-45,
            1.0,
            f32::INFINITY,
            f32::NAN,
        ];
        for pair in values.windows(2) {
            assert!(
                pair[0].to_bits_ordered() < pair[1].to_bits_ordered(),
                "{pair:?}"
            );
            assert_eq!(pair[0].total_cmp(&pair[1]), std::cmp::Ordering::Less);
        }
        for v in values {
            assert_eq!(
                f32::from_bits_ordered(v.to_bits_ordered()).to_bits(),
                v.to_bits()
            );
        }
    }

    #[test]
    fn signed_map_orders_negatives_first() {
        let values = [i64::MIN, -2, -1, 0, 1, i64::MAX];
        for pair in values.windows(2) {
            assert!(pair[0].to_bits_ordered() < pair[1].to_bits_ordered());
        }
        for v in values {
            assert_eq!(i64::from_bits_ordered(v.to_bits_ordered()), v);
        }
    }

    #[test]
    fn descending_complements() {
        assert!(ordered_bits(3u32, Order::Descending) < ordered_bits(2u32, Order::Descending));
        assert_eq!(
            key_from_ordered_bits::<f64>(
                ordered_bits(-2.5f64, Order::Descending),
                Order::Descending
            ),
            -2.5
        );
    }
}
