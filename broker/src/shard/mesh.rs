//! A small transport between shards over glommio's channel mesh, generic over the context a job runs
//! with (the broker passes its `Shard`; the mesh knows nothing of it). A job is a closure sent to the
//! shard that must run it; it runs there with that shard's context and its typed answer comes back
//! the same way, matched by a correlation id. Jobs for the own shard run inline.
//!
//! No lock or atomic is shared between shards: each side owns its half of the bounded channels, and
//! an answer is woken on its caller's executor by the caller's own reader task.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};

use glommio::channels::channel_mesh::{Receivers, Senders};
use glommio::channels::local_channel::{self, LocalSender};

/// A job's answer while it travels back; `Mesh::call` turns it into the type the job returned.
type Answer = Box<dyn Any + Send>;

/// A job as it travels: runs on the target's executor with the target's context.
type Job<C> = Box<dyn FnOnce(Rc<C>) -> Pin<Box<dyn Future<Output = Answer>>> + Send>;

/// What travels on the mesh.
pub enum Envelope<C> {
    /// Run `job`; answer to `from` under `id` (0: nobody waits).
    Job {
        from: usize,
        id: u64,
        job: Job<C>,
    },
    Answer {
        id: u64,
        answer: Answer,
    },
}

/// Why a job got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MeshError {
    #[error("shard {0} is not reachable")]
    Unreachable(usize),
    #[error("shard {0} dropped the call")]
    Dropped(usize),
    #[error("shard {0} is not serving calls yet")]
    NotStarted(usize),
}

/// This shard's end of the mesh.
pub struct Mesh<C> {
    me: usize,
    senders: Senders<Envelope<C>>,
    pending: RefCell<HashMap<u64, LocalSender<Answer>>>,
    next_id: Cell<u64>,
    /// What jobs run with on this shard (set by `start`).
    context: RefCell<Weak<C>>,
    /// Jobs sent to other shards, by the kind their caller named.
    sent: RefCell<BTreeMap<&'static str, u64>>,
}

impl<C: 'static> Mesh<C> {
    pub fn new(senders: Senders<Envelope<C>>) -> Rc<Mesh<C>> {
        Rc::new(Mesh {
            me: senders.peer_id(),
            senders,
            pending: RefCell::new(HashMap::new()),
            next_id: Cell::new(1),
            context: RefCell::new(Weak::new()),
            sent: RefCell::new(BTreeMap::new()),
        })
    }

    pub fn me(&self) -> usize {
        self.me
    }

    /// Jobs sent to other shards so far, by kind.
    pub fn sent(&self) -> Vec<(&'static str, u64)> {
        self.sent.borrow().iter().map(|(k, n)| (*k, *n)).collect()
    }

    fn count(&self, kind: &'static str) {
        *self.sent.borrow_mut().entry(kind).or_default() += 1;
    }

    fn context(&self) -> Option<Rc<C>> {
        self.context.borrow().upgrade()
    }

    /// Starts running jobs from other shards with `context` (one reader task per peer).
    pub fn start(self: &Rc<Self>, mut receivers: Receivers<Envelope<C>>, context: &Rc<C>) {
        *self.context.borrow_mut() = Rc::downgrade(context);
        for (_peer, rx) in receivers.streams() {
            let mesh = Rc::downgrade(self);
            glommio::spawn_local(async move {
                while let Some(envelope) = rx.recv().await {
                    let Some(mesh) = mesh.upgrade() else {
                        return;
                    };
                    match envelope {
                        Envelope::Job { from, id, job } => {
                            let Some(context) = mesh.context() else {
                                continue;
                            };
                            glommio::spawn_local(async move {
                                let answer = job(context).await;
                                if id != 0 {
                                    let _ = mesh
                                        .senders
                                        .send_to(from, Envelope::Answer { id, answer })
                                        .await;
                                }
                            })
                            .detach();
                        }
                        Envelope::Answer { id, answer } => {
                            let waiter = mesh.pending.borrow_mut().remove(&id);
                            if let Some(waiter) = waiter {
                                let _ = waiter.try_send(answer);
                            }
                        }
                    }
                }
            })
            .detach();
        }
    }

    /// Runs `job` (of `kind`, for the counts) on shard `to` and waits for its answer.
    pub async fn call<T, F, Fut>(
        &self,
        to: usize,
        kind: &'static str,
        job: F,
    ) -> Result<T, MeshError>
    where
        T: Send + 'static,
        F: FnOnce(Rc<C>) -> Fut + Send + 'static,
        Fut: Future<Output = T> + 'static,
    {
        if to == self.me {
            let context = self.context().ok_or(MeshError::NotStarted(to))?;
            return Ok(job(context).await);
        }
        self.count(kind);
        let id = self.next_id.get();
        self.next_id.set(id.wrapping_add(1).max(1));
        let (tx, rx) = local_channel::new_bounded(1);
        self.pending.borrow_mut().insert(id, tx);
        let job: Job<C> = Box::new(move |context| {
            Box::pin(async move { Box::new(job(context).await) as Answer })
        });
        let envelope = Envelope::Job {
            from: self.me,
            id,
            job,
        };
        if self.senders.send_to(to, envelope).await.is_err() {
            self.pending.borrow_mut().remove(&id);
            return Err(MeshError::Unreachable(to));
        }
        let answer = rx.recv().await.ok_or(MeshError::Dropped(to))?;
        // The answer under `id` is the boxed output of this very job, so it is always a `T`.
        answer
            .downcast::<T>()
            .map(|boxed| *boxed)
            .map_err(|_| MeshError::Dropped(to))
    }

    /// Runs `job` (of `kind`) on shard `to` without waiting for it (inline, to its end, on the own
    /// shard).
    pub async fn tell<F, Fut>(&self, to: usize, kind: &'static str, job: F)
    where
        F: FnOnce(Rc<C>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        if to == self.me {
            if let Some(context) = self.context() {
                job(context).await;
            }
            return;
        }
        self.count(kind);
        let job: Job<C> = Box::new(move |context| {
            Box::pin(async move {
                job(context).await;
                Box::new(()) as Answer
            })
        });
        let envelope = Envelope::Job {
            from: self.me,
            id: 0,
            job,
        };
        if self.senders.send_to(to, envelope).await.is_err() {
            tracing::warn!("shard {}: shard {to} is not reachable", self.me);
        }
    }
}

/// Awaits futures concurrently, keeping their order.
pub async fn join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let tasks: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = tasks.iter().map(|_| None).collect();
    let mut tasks: Vec<Option<Pin<Box<F>>>> = tasks.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (task, out) in tasks.iter_mut().zip(outputs.iter_mut()) {
            if let Some(fut) = task {
                match fut.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        *out = Some(v);
                        *task = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use glommio::channels::channel_mesh::MeshBuilder;
    use glommio::LocalExecutorPoolBuilder;

    /// Two executors: shard 0 asks shard 1 for a value computed from shard 1's context, gets it typed,
    /// and a job for the own shard runs inline.
    #[test]
    fn jobs_run_with_the_target_context_and_answer_typed() {
        let builder = MeshBuilder::<Envelope<usize>, _>::full(2, 16);
        let handles = LocalExecutorPoolBuilder::new(glommio::PoolPlacement::Unbound(2))
            .on_all_shards(move || {
                let builder = builder.clone();
                async move {
                    let (senders, receivers) = builder.join().await.map_err(|e| e.to_string())?;
                    let mesh = Mesh::new(senders);
                    let me = mesh.me();
                    let context = Rc::new(me * 100);
                    mesh.start(receivers, &context);
                    if me == 0 {
                        let there: String = mesh
                            .call(
                                1,
                                "format",
                                |c: Rc<usize>| async move { format!("ctx {c}") },
                            )
                            .await
                            .map_err(|e| e.to_string())?;
                        let here: usize = mesh
                            .call(0, "add", |c: Rc<usize>| async move { *c + 1 })
                            .await
                            .map_err(|e| e.to_string())?;
                        let all = join_all(
                            (0..2)
                                .map(|to| mesh.call(to, "read", |c: Rc<usize>| async move { *c })),
                        )
                        .await;
                        mesh.tell(1, "nothing", |_c: Rc<usize>| async move {}).await;
                        // Jobs for the own shard do not cross a core and are not counted.
                        let sent = mesh.sent();
                        return Ok::<_, String>(Some((there, here, all, sent)));
                    }
                    // Shard 1 serves until shard 0 is done.
                    glommio::timer::sleep(std::time::Duration::from_millis(300)).await;
                    Ok(None)
                }
            })
            .expect("executors start");
        let results = handles.join_all();
        let first = results
            .into_iter()
            .filter_map(|r| r.ok())
            .filter_map(|r| r.ok())
            .flatten()
            .next()
            .expect("shard 0 answered");
        assert_eq!(first.0, "ctx 100");
        assert_eq!(first.1, 1);
        assert_eq!(first.2, vec![Ok(0), Ok(100)]);
        assert_eq!(first.3, vec![("format", 1), ("nothing", 1), ("read", 1)]);
    }
}
