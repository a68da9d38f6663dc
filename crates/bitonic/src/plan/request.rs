//! The request: what a call asks for (the operation, the key type, the length and layout, the
//! order, the backend and version), built by the sorter or by a caller who wants a plan
//! without running it.

use crate::key::KeyOrder;
use crate::network::padded_len;
use crate::options::{Backend, FloatOrder, Order, Version};
use crate::DType;

/// What a call does with the keys.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Operation {
    /// Sort the keys alone.
    #[default]
    Sort,
    /// Sort the keys stably and write each sorted key's index in its row before the sort
    /// (4- or 8-byte indices).
    Argsort {
        /// Bytes of an index: 4 or 8.
        index_bytes: usize,
    },
    /// Sort the keys stably and move a value (4 or 8 bytes) with each.
    SortPairs {
        /// Bytes of a value: 4 or 8.
        value_bytes: usize,
    },
    /// Keep each row's first `k` keys of a stable sort, and their indices.
    Topk {
        /// Keys kept a row.
        k: usize,
        /// Bytes of an index: 4 or 8.
        index_bytes: usize,
    },
}

impl Operation {
    /// Whether values or indices travel with the keys (the sort is then stable).
    pub fn moves_values(self) -> bool {
        !matches!(self, Operation::Sort)
    }
}

/// How the keys of a request are grouped.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// One array.
    Whole,
    /// Rows of `row_len` keys, each sorted on its own (`row_len` divides the length).
    Rows {
        /// Keys in each row.
        row_len: usize,
    },
    /// Segments of any lengths, each sorted on its own: for each padded length 2^b that some
    /// segment of two keys or more has, b and how many segments have it.
    Segments {
        /// (log2 of the padded length, segments of it), by rising length.
        groups: Vec<(u32, usize)>,
    },
}

impl Layout {
    /// The segments cut by `offsets` (from 0, never decreasing, to the length), grouped by
    /// their padded lengths; segments of fewer than two keys need no sort.
    pub fn segments(offsets: &[usize]) -> Layout {
        let mut counts = [0usize; 65];
        for w in offsets.windows(2) {
            let len = w[1].saturating_sub(w[0]);
            if len >= 2 {
                counts[padded_len(len).trailing_zeros() as usize] += 1;
            }
        }
        let groups = (0..counts.len())
            .filter(|&b| counts[b] > 0)
            .map(|b| (b as u32, counts[b]))
            .collect();
        Layout::Segments { groups }
    }
}

/// One call, as the plan sees it.
///
/// ```
/// use bitonic::plan::{plan, Operation, Request};
/// use bitonic::{DType, DeviceInfo, Policy, Strategy};
/// let request = Request::new(Operation::Sort, DType::F32, 1 << 24);
/// let made = plan(&request, Some((&DeviceInfo::h100(), &Policy::HOPPER)))?;
/// assert_eq!(made.strategy, Strategy::MergeSort);
/// assert_eq!(made.workspace_bytes() >= 4 << 24, true); // the spare array
/// # Ok::<(), bitonic::Error>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Request {
    /// What is done with the keys.
    pub operation: Operation,
    /// The key type.
    pub dtype: DType,
    /// Keys in all.
    pub len: usize,
    /// One array, rows or segments.
    pub layout: Layout,
    /// The order (for a top-k: descending keeps the largest).
    pub order: Order,
    /// How floats compare.
    pub float_order: FloatOrder,
    /// The backend asked for.
    pub backend: Backend,
    /// The GPU algorithm asked for; `None` lets the plan choose.
    pub version: Option<Version>,
}

impl Request {
    /// `operation` on `len` keys of `dtype` in one array, ascending, floats in total order,
    /// [`Backend::Auto`], no version pinned.
    pub fn new(operation: Operation, dtype: DType, len: usize) -> Request {
        Request {
            operation,
            dtype,
            len,
            layout: Layout::Whole,
            order: Order::Ascending,
            float_order: FloatOrder::Total,
            backend: Backend::Auto,
            version: None,
        }
    }

    /// This request over rows of `row_len` keys (one row when `row_len` covers them all).
    pub fn rows(mut self, row_len: usize) -> Request {
        self.layout = if row_len >= self.len {
            Layout::Whole
        } else {
            Layout::Rows { row_len }
        };
        self
    }

    /// This request with `layout`.
    pub fn layout(mut self, layout: Layout) -> Request {
        self.layout = layout;
        self
    }

    /// This request in `order`.
    pub fn order(mut self, order: Order) -> Request {
        self.order = order;
        self
    }

    /// This request with floats compared in `float_order`.
    pub fn float_order(mut self, float_order: FloatOrder) -> Request {
        self.float_order = float_order;
        self
    }

    /// This request on `backend`.
    pub fn backend(mut self, backend: Backend) -> Request {
        self.backend = backend;
        self
    }

    /// This request with `version` pinned.
    pub fn version(mut self, version: Option<Version>) -> Request {
        self.version = version;
        self
    }

    /// The layout, with rows as long as the whole input as one array.
    pub(super) fn whole_layout(&self) -> Layout {
        match self.layout {
            Layout::Rows { row_len } if row_len >= self.len => Layout::Whole,
            ref other => other.clone(),
        }
    }

    /// Keys in a row: the whole input for one array or segments.
    pub(super) fn row_len(&self) -> usize {
        match self.whole_layout() {
            Layout::Rows { row_len } => row_len,
            _ => self.len,
        }
    }

    /// The call in words, for errors.
    pub(super) fn operation_name(&self) -> &'static str {
        match (&self.whole_layout(), self.operation) {
            (_, Operation::Topk { .. }) => "top-k selections",
            (Layout::Whole, Operation::Sort) => "sorts",
            (Layout::Whole, _) => "argsorts and key-value sorts",
            (Layout::Rows { .. }, Operation::Sort) => "row sorts",
            (Layout::Rows { .. }, _) => "argsorts and key-value sorts of rows",
            (Layout::Segments { .. }, _) => "segmented sorts",
        }
    }

    pub(super) fn key_order(&self) -> KeyOrder {
        KeyOrder {
            order: self.order,
            float: self.float_order,
        }
    }
}
