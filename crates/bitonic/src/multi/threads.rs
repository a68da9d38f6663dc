//! A transport between threads of one process: simulated ranks for tests and CPU-only runs.

use super::simulated::{sort_sharded, Transport};
use super::Algorithm;
use crate::error::{Error, Result};
use crate::{Order, SortKey};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};

#[derive(Default)]
struct Mailboxes {
    /// Messages in flight, by (from, to), first sent first.
    queues: HashMap<(usize, usize), VecDeque<Vec<u8>>>,
    failed: bool,
}

/// One rank's end of a group of in-process ranks.
pub struct ThreadTransport {
    rank: usize,
    ranks: usize,
    shared: Arc<(Mutex<Mailboxes>, Condvar)>,
}

impl ThreadTransport {
    /// The `ranks` ends of a new group, one per thread.
    pub fn group(ranks: usize) -> Vec<ThreadTransport> {
        let shared = Arc::new((Mutex::new(Mailboxes::default()), Condvar::new()));
        (0..ranks)
            .map(|rank| ThreadTransport {
                rank,
                ranks,
                shared: shared.clone(),
            })
            .collect()
    }
}

impl Transport for ThreadTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn ranks(&self) -> usize {
        self.ranks
    }

    fn exchange(&self, to: usize, send: Vec<u8>, from: usize) -> Result<Vec<u8>> {
        let (lock, ready) = &*self.shared;
        let mut boxes = lock.lock().unwrap_or_else(|e| e.into_inner());
        boxes
            .queues
            .entry((self.rank, to))
            .or_default()
            .push_back(send);
        ready.notify_all();
        loop {
            if boxes.failed {
                return Err(Error::PeerFailed);
            }
            if let Some(message) = boxes
                .queues
                .get_mut(&(from, self.rank))
                .and_then(VecDeque::pop_front)
            {
                return Ok(message);
            }
            boxes = ready.wait(boxes).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn abort(&self) {
        let (lock, ready) = &*self.shared;
        lock.lock().unwrap_or_else(|e| e.into_inner()).failed = true;
        ready.notify_all();
    }
}

/// Sorts `shards` as if each were on its own GPU: one thread per rank, the CPU network as the
/// local sort. Returns every rank's part of the result, in global order.
pub fn simulate<K: SortKey>(
    shards: &[Vec<K>],
    order: Order,
    algorithm: Algorithm,
) -> Result<Vec<Vec<K>>> {
    let ends = ThreadTransport::group(shards.len());
    let local = |w: &mut [K::Bits]| crate::cpu::network::sort_serial(w);
    std::thread::scope(|scope| {
        let handles: Vec<_> = ends
            .iter()
            .zip(shards)
            .map(|(end, shard)| {
                scope.spawn(move || sort_sharded(end, shard, order, algorithm, &local))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(Error::PeerFailed)))
            .collect()
    })
}
