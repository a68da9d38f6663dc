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
//! | [`half::f16`], [`half::bf16`] | the float map of their 16 bits, zero-extended to a `u32` |
//!
//! The float map gives IEEE 754 *total order*, the order of [`f32::total_cmp`]:
//! `-NaN < -inf < … < -0.0 < +0.0 < … < +inf < +NaN`. Negative NaNs (sign bit set) sort first,
//! positive NaNs last, and `-0.0` sorts before `+0.0`.
//!
//! **16-bit keys.** Every other key type has its word's size, so the backends sort the keys
//! in place as their words. A 16-bit key is narrower than its `u32` word: the CPU sorts a copy
//! of the keys' ordered words and maps them back; the GPU widens the keys into a scratch buffer
//! of their ordered words (kernels/map_keys.cu), sorts those as `u32` keys
//! ([`SortKey::Wide`]) and narrows them back (src/cuda/run.rs, src/cuda/keymap.rs), except in the top-k
//! selections by composites, which read 16-bit keys as they are. Logits come as `f16` and
//! `bf16`; top-k, argsorts and key-value sorts take them as they do any key.
//!
//! Descending order is the ascending order of the complemented bits (`!bits`), so the
//! networks themselves only ever sort ascending.
//!
//! **Numeric float order** ([`crate::FloatOrder::Numeric`], torch's and numpy's) puts every
//! NaN, of either sign, after `+inf`, and treats `-0.0` and `+0.0` as one value. Its word
//! ([`SortKey::to_numeric_bits`]) is total order's rotated down by the word of `-inf`, so
//! that the negative NaNs wrap around to the top: still a bijection, and a key-only sort gives
//! every key back bit for bit (`-0.0` next to `+0.0`, which an unstable sort may do). The sorts
//! that keep positions (argsorts, key-value sorts, top-k) must also tie keys equal by value, so
//! they map the [`SortKey::canonical`] key (`-0.0` as `+0.0`, every NaN as the positive quiet
//! NaN); on the GPU the keys an argsort or key-value sort writes are those canonical ones (the
//! CPU moves the keys themselves, and a top-k reads its keys back from the input by their
//! indices), their positions exact on both.

use crate::options::{display_and_parse_by_name, FloatOrder, Order, UnknownName};

/// The order keys are sorted in: the direction and, for floats, how they compare.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct KeyOrder {
    pub(crate) order: Order,
    pub(crate) float: FloatOrder,
}

impl KeyOrder {
    /// `order` with floats in total order.
    pub(crate) fn of(order: Order) -> KeyOrder {
        KeyOrder {
            order,
            float: FloatOrder::Total,
        }
    }
}

mod sealed {
    /// Only the library's key and index types implement its key and index traits: the GPU
    /// kernels exist for those alone.
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for i32 {}
    impl Sealed for u64 {}
    impl Sealed for i64 {}
    impl Sealed for usize {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}
pub(crate) use sealed::Sealed;

/// A machine word the sorting networks work on: `u32` or `u64`.
pub trait Bits:
    Ord + Into<u64> + Send + Sync + bytemuck::Pod + cudarc::driver::DeviceRepr + std::fmt::Debug
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
    /// [`half::f16`]: IEEE 754 half precision.
    F16,
    /// [`half::bf16`]: bfloat16, the top half of an `f32`.
    BF16,
}

impl DType {
    /// Every key type.
    pub const ALL: [DType; 8] = [
        DType::U32,
        DType::I32,
        DType::U64,
        DType::I64,
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
    ];

    /// Bytes per key.
    pub fn size(self) -> usize {
        match self {
            DType::F16 | DType::BF16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 => 8,
        }
    }

    /// The NumPy-style name: `u32`, `i32`, `u64`, `i64`, `f32`, `f64`, `f16`, `bf16`.
    pub fn name(self) -> &'static str {
        match self {
            DType::U32 => "u32",
            DType::I32 => "i32",
            DType::U64 => "u64",
            DType::I64 => "i64",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
        }
    }

    /// The type the GPU sorts in this one's place ([`SortKey::Wide`]): `u32` for 16-bit
    /// keys (their ordered words), the type itself for the others.
    ///
    /// ```
    /// use bitonic::DType;
    /// assert_eq!(DType::BF16.wide(), DType::U32);
    /// assert_eq!(DType::F32.wide(), DType::F32);
    /// ```
    pub fn wide(self) -> DType {
        match self {
            DType::F16 | DType::BF16 => DType::U32,
            other => other,
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
            DType::F32 | DType::F64 | DType::F16 | DType::BF16 => MapKind::Float,
        }
    }
}

/// The three families of bit maps. The discriminants are shared with the kernels
/// (`KERNEL_MAP_*` defines, src/kernels/abi.rs).
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
/// Implemented for `u32`, `i32`, `u64`, `i64`, `f32`, `f64`, [`half::f16`] and
/// [`half::bf16`], and sealed: the GPU kernels exist for these alone. `to_bits` and `from_bits`
/// are inverse, and `a < b` in the key's order exactly when `a.to_bits() < b.to_bits()`.
///
/// ```
/// use bitonic::{half::f16, SortKey};
/// assert!((-1.5f32).to_bits_ordered() < 0.25f32.to_bits_ordered());
/// assert!((-0.0f64).to_bits_ordered() < 0.0f64.to_bits_ordered());
/// assert_eq!(i32::from_bits_ordered((-7i32).to_bits_ordered()), -7);
/// // A 16-bit key's word is a u32 holding the 16-bit map.
/// assert_eq!(f16::NEG_INFINITY.to_bits_ordered(), 0x03ff);
/// assert!(f16::MAX.to_bits_ordered() < f16::NAN.to_bits_ordered());
/// ```
pub trait SortKey:
    Sealed + Copy + Send + Sync + bytemuck::Pod + cudarc::driver::DeviceRepr + std::fmt::Debug + 'static
{
    /// The unsigned word the backends sort the key as: of the key's width, or `u32` for
    /// 16-bit keys (the ordered bits zero-extended).
    type Bits: Bits;
    /// The key type the GPU sorts in this one's place: `Self` when the key has its word's
    /// size; else the unsigned `Self::Bits`, whose values are the keys' ordered words (see the
    /// module's 16-bit keys).
    type Wide: SortKey;
    /// The key type's runtime name.
    const DTYPE: DType;
    /// The word whose unsigned order is the key's order.
    fn to_bits_ordered(self) -> Self::Bits;
    /// The key of a word of [`SortKey::to_bits_ordered`].
    fn from_bits_ordered(bits: Self::Bits) -> Self;
    /// The key in numeric float order's one form of its value: `-0.0` as `+0.0` and every NaN
    /// as the positive quiet NaN; any other key as it is.
    ///
    /// ```
    /// use bitonic::SortKey;
    /// assert_eq!((-0.0f32).canonical().to_bits(), 0);
    /// assert_eq!((-f64::NAN).canonical().to_bits(), f64::NAN.to_bits());
    /// assert_eq!((-3i32).canonical(), -3);
    /// ```
    fn canonical(self) -> Self {
        self
    }
    /// The word whose unsigned order is the key's numeric float order
    /// ([`crate::FloatOrder::Numeric`]): total order's word, with every NaN (either sign)
    /// above `+inf`. A bijection, so the key comes back bit for bit; `-0.0` still sorts just
    /// below `+0.0` (sorts that keep positions tie them through [`SortKey::canonical`]).
    /// Other keys: [`SortKey::to_bits_ordered`].
    ///
    /// ```
    /// use bitonic::SortKey;
    /// assert!(f32::INFINITY.to_numeric_bits() < (-f32::NAN).to_numeric_bits());
    /// let x = -f64::NAN;
    /// assert_eq!(f64::from_numeric_bits(x.to_numeric_bits()).to_bits(), x.to_bits());
    /// ```
    fn to_numeric_bits(self) -> Self::Bits {
        self.to_bits_ordered()
    }
    /// The key of a word of [`SortKey::to_numeric_bits`].
    fn from_numeric_bits(bits: Self::Bits) -> Self {
        Self::from_bits_ordered(bits)
    }
}

display_and_parse_by_name!(DType);

macro_rules! impl_unsigned {
    ($t:ty, $dtype:ident) => {
        impl SortKey for $t {
            type Bits = $t;
            type Wide = $t;
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
            type Wide = $t;
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

/// A float `$t` whose raw bits are `$u` (`$i` signed), its word `$bits` (`$u` zero-extended)
/// and the type the GPU sorts in its place `$wide`.
macro_rules! impl_float {
    ($t:ty, $u:ty, $i:ty, $bits:ty, $wide:ty, $dtype:ident) => {
        impl SortKey for $t {
            type Bits = $bits;
            type Wide = $wide;
            const DTYPE: DType = DType::$dtype;
            #[inline]
            fn to_bits_ordered(self) -> $bits {
                let raw = self.to_bits();
                // Arithmetic shift spreads the sign: all ones for negatives, zero otherwise.
                let sign_fill = ((raw as $i) >> (<$u>::BITS - 1)) as $u;
                <$bits>::from(raw ^ (sign_fill | (1 << (<$u>::BITS - 1))))
            }
            #[inline]
            fn to_numeric_bits(self) -> $bits {
                // Down by -inf's word (kernels/common/keys.cuh SortableMap): -inf becomes 0
                // and the NaNs below it wrap around to the top.
                let word = self.to_bits_ordered() as $u;
                <$bits>::from(word.wrapping_sub(Self::NEG_INFINITY.to_bits_ordered() as $u))
            }
            #[inline]
            fn from_numeric_bits(bits: $bits) -> $t {
                let rotation = Self::NEG_INFINITY.to_bits_ordered() as $u;
                Self::from_bits_ordered(<$bits>::from((bits as $u).wrapping_add(rotation)))
            }
            #[inline]
            fn canonical(self) -> $t {
                if self.is_nan() {
                    <$t>::NAN
                } else if self == <$t>::from_bits(0) {
                    <$t>::from_bits(0)
                } else {
                    self
                }
            }
            #[inline]
            fn from_bits_ordered(bits: $bits) -> $t {
                let raw = bits as $u;
                // A set top bit means the key was non-negative: only the sign bit was flipped.
                let mask = if raw >> (<$u>::BITS - 1) == 1 {
                    1 << (<$u>::BITS - 1)
                } else {
                    <$u>::MAX
                };
                <$t>::from_bits(raw ^ mask)
            }
        }
    };
}

impl_unsigned!(u32, U32);
impl_unsigned!(u64, U64);
impl_signed!(i32, u32, I32);
impl_signed!(i64, u64, I64);
impl_float!(f32, u32, i32, u32, f32, F32);
impl_float!(f64, u64, i64, u64, f64, F64);
impl_float!(half::f16, u16, i16, u32, u32, F16);
impl_float!(half::bf16, u16, i16, u32, u32, BF16);

/// Whether keys `K` are narrower than their word (16-bit keys): the backends then sort a
/// widened copy of them instead of the keys in place.
pub(crate) fn is_narrow<K: SortKey>() -> bool {
    std::mem::size_of::<K>() < std::mem::size_of::<K::Bits>()
}

/// The bits that sort ascending in `order`, complemented for descending: a bijection, so that
/// a key-only sort gives back every key bit for bit.
#[inline]
pub(crate) fn ordered_bits<K: SortKey>(key: K, order: KeyOrder) -> K::Bits {
    let bits = match order.float {
        FloatOrder::Total => key.to_bits_ordered(),
        FloatOrder::Numeric => key.to_numeric_bits(),
    };
    match order.order {
        Order::Ascending => bits,
        Order::Descending => bits.not(),
    }
}

/// [`ordered_bits`] for the sorts that keep positions: in numeric float order of the
/// [`SortKey::canonical`] key, so that keys equal by value (`-0.0` and `+0.0`, NaNs) tie.
#[inline]
pub(crate) fn tied_bits<K: SortKey>(key: K, order: KeyOrder) -> K::Bits {
    match order.float {
        FloatOrder::Total => ordered_bits(key, order),
        FloatOrder::Numeric => ordered_bits(key.canonical(), order),
    }
}

/// The key of bits of [`ordered_bits`] (or of [`tied_bits`]: the canonical key).
#[inline]
pub(crate) fn key_from_ordered_bits<K: SortKey>(bits: K::Bits, order: KeyOrder) -> K {
    let bits = match order.order {
        Order::Ascending => bits,
        Order::Descending => bits.not(),
    };
    match order.float {
        FloatOrder::Total => K::from_bits_ordered(bits),
        FloatOrder::Numeric => K::from_numeric_bits(bits),
    }
}

/// Compares two keys in the library's default order (total order for floats). Handy for
/// checking results.
pub fn cmp_keys<K: SortKey>(a: &K, b: &K) -> std::cmp::Ordering {
    a.to_bits_ordered().cmp(&b.to_bits_ordered())
}

/// Compares two keys in `float` order (ascending); in numeric order keys equal by value
/// (`-0.0` and `+0.0`, any two NaNs) are equal, as a stable sort treats them.
pub fn cmp_keys_in<K: SortKey>(a: &K, b: &K, float: FloatOrder) -> std::cmp::Ordering {
    let order = KeyOrder {
        order: Order::Ascending,
        float,
    };
    tied_bits(*a, order).cmp(&tied_bits(*b, order))
}

/// An integer type that indices are written in: `u32`, `i32`, `u64`, `usize` or `i64` (torch's
/// and numpy's), on the host and on the GPU alike. Indices count from each row's start; a row
/// longer than the type can count is an error ([`crate::Error::IndexTooNarrow`]). Sealed: the
/// kernels write 4- or 8-byte indices.
///
/// ```
/// let keys = [30u32, 10, 20];
/// let (mut narrow, mut wide) = (vec![0u32; 3], vec![0i64; 3]);
/// bitonic::argsort(&keys, &mut narrow)?;
/// bitonic::argsort(&keys, &mut wide)?;
/// assert_eq!((narrow, wide), (vec![1, 2, 0], vec![1, 2, 0]));
/// # Ok::<(), bitonic::Error>(())
/// ```
pub trait SortIndex:
    Sealed + Copy + Send + Sync + bytemuck::Pod + cudarc::driver::DeviceRepr + 'static
{
    /// The largest index the type holds.
    const MAX: usize;
    /// `i`, which is at most [`SortIndex::MAX`].
    fn from_usize(i: usize) -> Self;
}

macro_rules! sort_index {
    ($($t:ty),*) => {$(
        impl SortIndex for $t {
            const MAX: usize = if (<$t>::MAX as u128) < usize::MAX as u128 {
                <$t>::MAX as usize
            } else {
                usize::MAX
            };
            #[inline]
            fn from_usize(i: usize) -> Self {
                i as $t
            }
        }
    )*};
}

sort_index!(u32, i32, u64, usize, i64);

const _: () = assert!(std::mem::size_of::<usize>() == 8, "64-bit targets only");

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
            $crate::DType::F16 => {
                type $K = $crate::half::f16;
                $body
            }
            $crate::DType::BF16 => {
                type $K = $crate::half::bf16;
                $body
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

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

    /// Every 16-bit pattern: the word is the 16-bit map zero-extended, it round-trips, and
    /// the words sort as `total_cmp` does.
    #[test]
    fn half_maps_are_total_order() {
        fn check<K: SortKey<Bits = u32>>(
            from_bits: fn(u16) -> K,
            total_cmp: fn(&K, &K) -> Ordering,
        ) {
            let keys: Vec<K> = (0..=u16::MAX).map(from_bits).collect();
            for &key in &keys {
                let word = key.to_bits_ordered();
                assert!(word <= 0xffff, "{key:?}: {word:#x}");
                let back = K::from_bits_ordered(word);
                assert_eq!(
                    bytemuck::cast::<K, u16>(back),
                    bytemuck::cast::<K, u16>(key)
                );
            }
            let mut by_word = keys.clone();
            by_word.sort_by_key(|k| k.to_bits_ordered());
            let mut by_cmp = keys;
            by_cmp.sort_by(total_cmp);
            let bits = |v: &[K]| bytemuck::cast_slice::<K, u16>(v).to_vec();
            assert_eq!(bits(&by_word), bits(&by_cmp));
        }
        check(half::f16::from_bits, half::f16::total_cmp);
        check(half::bf16::from_bits, half::bf16::total_cmp);
        let order = [
            -half::f16::NAN,
            half::f16::NEG_INFINITY,
            half::f16::MIN,
            -half::f16::from_bits(1), // the smallest subnormal, negated
            half::f16::NEG_ZERO,
            half::f16::ZERO,
            half::f16::from_bits(1),
            half::f16::MAX,
            half::f16::INFINITY,
            half::f16::NAN,
        ];
        for pair in order.windows(2) {
            assert!(
                pair[0].to_bits_ordered() < pair[1].to_bits_ordered(),
                "{pair:?}"
            );
        }
    }

    /// The GPU sorts `K::Wide`: the key itself, or for 16-bit keys the unsigned word.
    #[test]
    fn wide_types() {
        fn check<K: SortKey>() {
            let wide = <K::Wide as SortKey>::DTYPE;
            assert_eq!(wide, K::DTYPE.wide(), "{:?}", K::DTYPE);
            assert_eq!(is_narrow::<K>(), wide != K::DTYPE, "{:?}", K::DTYPE);
            assert_eq!(
                std::mem::size_of::<K::Bits>(),
                wide.size(),
                "{:?}",
                K::DTYPE
            );
            assert!(!is_narrow::<K::Wide>(), "{:?}", K::DTYPE);
            if is_narrow::<K>() {
                assert_eq!(wide.map_kind(), MapKind::Unsigned, "{:?}", K::DTYPE);
            }
        }
        for dtype in DType::ALL {
            with_key_type!(dtype, K => check::<K>());
            assert_eq!(
                with_key_type!(dtype, K => std::mem::size_of::<K>()),
                dtype.size()
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
        let down = KeyOrder::of(Order::Descending);
        assert!(ordered_bits(3u32, down) < ordered_bits(2u32, down));
        assert_eq!(
            key_from_ordered_bits::<f64>(ordered_bits(-2.5f64, down), down),
            -2.5
        );
    }

    #[test]
    fn numeric_order_puts_nans_last_and_ties_what_is_equal() {
        let numeric = KeyOrder {
            order: Order::Ascending,
            float: FloatOrder::Numeric,
        };
        // Key-only words: every NaN above +inf, a bijection (-0.0 just below +0.0).
        let word = |x: f32| ordered_bits(x, numeric);
        assert!(word(f32::INFINITY) < word(-f32::NAN));
        assert!(word(f32::INFINITY) < word(f32::NAN));
        assert!(word(f32::NEG_INFINITY) < word(-1.0));
        assert!(word(-1.0) < word(-0.0) && word(-0.0) < word(0.0));
        // Tied words of the sorts that keep positions: equal values share one word.
        let tied = |x: f32| tied_bits(x, numeric);
        assert_eq!(tied(-0.0), tied(0.0));
        assert_eq!(tied(-f32::NAN), tied(f32::NAN));
        assert_eq!(tied(f32::from_bits(0x7f80_0001)), tied(f32::NAN));
        assert!(tied(f32::INFINITY) < tied(-f32::NAN));
        let h = |x: f32| ordered_bits(half::bf16::from_f32(x), numeric);
        assert!(h(f32::INFINITY) < h(-f32::NAN) && h(f32::NEG_INFINITY) < h(-1.0));
        let f = |x: f32| ordered_bits(half::f16::from_f32(x), numeric);
        assert!(f(f32::INFINITY) < f(-f32::NAN) && f(f32::NEG_INFINITY) < f(-1.0));
        for down in [false, true] {
            let order = KeyOrder {
                order: if down {
                    Order::Descending
                } else {
                    Order::Ascending
                },
                ..numeric
            };
            for x in [
                f64::NAN,
                -f64::NAN,
                -0.0,
                0.0,
                1.5,
                f64::NEG_INFINITY,
                f64::INFINITY,
            ] {
                let back: f64 = key_from_ordered_bits(ordered_bits(x, order), order);
                assert_eq!(back.to_bits(), x.to_bits(), "{x} comes back bit for bit");
                let tied: f64 = key_from_ordered_bits(tied_bits(x, order), order);
                assert_eq!(tied.to_bits(), x.canonical().to_bits());
            }
            for bits in (0..=u16::MAX).step_by(7) {
                let x = half::f16::from_bits(bits);
                let back: half::f16 = key_from_ordered_bits(ordered_bits(x, order), order);
                assert_eq!(back.to_bits(), bits);
            }
        }
    }
}
