//! A small cache of large, durable CommitLog blocks for sequential reads (pulls): O_DIRECT bypasses
//! the page cache RocketMQ relies on, so consumers of a backlog would otherwise pay one small disk read
//! per pull. Blocks are read whole, the next one ahead of need, shared by every queue whose records
//! lie in them, and evicted least recently used.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;

use crate::error::StoreError;
use crate::segment::Segment;

/// One block read from disk, shared by everyone waiting for it.
#[derive(Default)]
struct Loading {
    done: Option<Result<Bytes, String>>,
    wakers: Vec<Waker>,
}

enum Slot {
    Ready { bytes: Bytes, used: u64 },
    Loading(Rc<RefCell<Loading>>),
}

#[derive(Default)]
struct State {
    slots: HashMap<u64, Slot>,
    tick: u64,
    loads: u64,
}

/// Whole blocks of `block` bytes, keyed by their shard-local start, at most `capacity` of them.
pub(crate) struct BlockCache {
    block: u64,
    capacity: usize,
    state: Rc<RefCell<State>>,
}

impl BlockCache {
    /// A cache of `bytes` in blocks of `block` bytes; at least two blocks (the one read and the one
    /// read ahead).
    pub fn new(block: u64, bytes: u64) -> BlockCache {
        BlockCache {
            block: block.max(1),
            capacity: usize::try_from(bytes / block.max(1)).unwrap_or(0).max(2),
            state: Rc::default(),
        }
    }

    pub fn block_size(&self) -> u64 {
        self.block
    }

    pub fn block_start(&self, local: u64) -> u64 {
        local - local % self.block
    }

    /// Blocks read from disk so far.
    pub fn loads(&self) -> u64 {
        self.state.borrow().loads
    }

    /// Whether the block at `start` is cached or being read.
    pub fn has(&self, start: u64) -> bool {
        self.state.borrow().slots.contains_key(&start)
    }

    /// The block at `start` (a multiple of the block size, wholly durable, inside `seg`), read from
    /// disk if it is not cached; concurrent callers share one read.
    pub async fn get(&self, seg: &Rc<Segment>, start: u64) -> Result<Bytes, StoreError> {
        let loading = {
            let mut st = self.state.borrow_mut();
            st.tick += 1;
            let tick = st.tick;
            match st.slots.get_mut(&start) {
                Some(Slot::Ready { bytes, used }) => {
                    *used = tick;
                    return Ok(bytes.clone());
                }
                Some(Slot::Loading(l)) => l.clone(),
                None => {
                    drop(st);
                    self.start_load(seg.clone(), start)
                }
            }
        };
        WaitLoad(loading)
            .await
            .map_err(|e| StoreError::io(seg.path.display(), std::io::Error::other(e)))
    }

    /// Starts reading the block at `start` in the background unless it is cached or being read.
    pub fn prefetch(&self, seg: Rc<Segment>, start: u64) {
        if !self.has(start) {
            let _ = self.start_load(seg, start);
        }
    }

    /// Forgets every block inside `[from, to)` (a deleted segment).
    pub fn forget(&self, from: u64, to: u64) {
        self.state
            .borrow_mut()
            .slots
            .retain(|start, _| *start < from || *start >= to);
    }

    fn start_load(&self, seg: Rc<Segment>, start: u64) -> Rc<RefCell<Loading>> {
        let loading = Rc::new(RefCell::new(Loading::default()));
        {
            let mut st = self.state.borrow_mut();
            st.loads += 1;
            evict_to(&mut st, self.capacity.saturating_sub(1));
            st.slots.insert(start, Slot::Loading(loading.clone()));
        }
        let (state, shared, len) = (self.state.clone(), loading.clone(), self.block as usize);
        glommio::spawn_local(async move {
            let res = seg.read(start - seg.start, len).await;
            let mut st = state.borrow_mut();
            st.tick += 1;
            let tick = st.tick;
            let still_ours =
                matches!(st.slots.get(&start), Some(Slot::Loading(l)) if Rc::ptr_eq(l, &shared));
            let done = match res {
                Ok(bytes) if bytes.len() == len => {
                    if still_ours {
                        st.slots.insert(
                            start,
                            Slot::Ready {
                                bytes: bytes.clone(),
                                used: tick,
                            },
                        );
                    }
                    Ok(bytes)
                }
                Ok(bytes) => {
                    if still_ours {
                        st.slots.remove(&start);
                    }
                    Err(format!("short block read: {} of {len} bytes", bytes.len()))
                }
                Err(e) => {
                    if still_ours {
                        st.slots.remove(&start);
                    }
                    Err(e.to_string())
                }
            };
            drop(st);
            let wakers = {
                let mut l = shared.borrow_mut();
                l.done = Some(done);
                std::mem::take(&mut l.wakers)
            };
            wakers.into_iter().for_each(Waker::wake);
        })
        .detach();
        loading
    }
}

/// Drops least recently used ready blocks until at most `keep` slots remain (reads in progress stay).
fn evict_to(st: &mut State, keep: usize) {
    while st.slots.len() > keep {
        let oldest = st
            .slots
            .iter()
            .filter_map(|(start, s)| match s {
                Slot::Ready { used, .. } => Some((*used, *start)),
                Slot::Loading(_) => None,
            })
            .min();
        match oldest {
            Some((_, start)) => {
                st.slots.remove(&start);
            }
            None => break,
        }
    }
}

/// Waits for a block read started by `start_load`.
struct WaitLoad(Rc<RefCell<Loading>>);

impl Future for WaitLoad {
    type Output = Result<Bytes, String>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut l = self.0.borrow_mut();
        match &l.done {
            Some(done) => Poll::Ready(done.clone()),
            None => {
                l.wakers.push(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}
