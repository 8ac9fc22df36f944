//! The calling thread's access: `read_now` / `write_now` guards.
//!
//! A guard is recorded in the resource's history as a job (an *event*: a
//! slot published `WAITING` whose one pending count the guard holds), so
//! jobs scheduled while it lives and conflicting with it depend on it and
//! wait for its drop. While it lives its event is in this thread's
//! context (`guards`, beside the `running` stack, which wait-on-self
//! detection reads with it; apart, because a guard may outlive the job that
//! made it or be dropped out of order): a `complete` here of a job that
//! needs the guard to drop is a wait on oneself, and reports
//! `JobError::WaitOnSelf` (panics, for `complete`) instead of hanging.
//!
//! ```text
//!   no conflicting job:   E  pending 1 (the guard's)
//!   conflicting D1..Dn:   G = a group after D1..Dn (as `combine`)
//!                         E  pending 2 (the guard's + an edge to G)
//!   the guard waits for G, then hands out the reference; its drop
//!   releases the guard's count; E finishes once both counts are gone.
//! ```
//!
//! E is recorded in the history (as the last writer, or a reader) before
//! the wait, so a job scheduled meanwhile depends on E. E cannot finish
//! before G does, nor G before D1..Dn: whatever ends the guard's wait (a
//! wait on oneself reported as a panic, the poison error), jobs that
//! depend on E stay ordered after every conflicting job the guard waited
//! for, and a wait on one of them finds D1..Dn through E's edge. E never
//! passes a failure on (`slot::is_event`, read where failures pass to
//! dependents): it finishes without error whether D1..Dn succeeded, failed
//! or were cancelled, since the guard's holder saw the data after them and
//! jobs scheduled after the guard are not skipped for their failures.

use super::{DepBuf, Mode, Resource};
use crate::error::JobError;
use crate::handle::JobHandle;
use crate::registry::ThisThread;
use crate::slot::{Slot, NOOP_VTABLE, READ_EVENT, TRACED, WRITE_EVENT};
use crate::system::JobSystem;
use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// Why `try_read_now` / `try_write_now` gave no guard.
#[derive(Debug)]
#[non_exhaustive]
pub enum AccessError {
    /// A conflicting job (or another thread's guard) has not finished.
    Busy {
        /// The job still using the resource.
        job: JobHandle,
        /// Its name (its `JobDesc` name, else its closure's type name;
        /// `"read_now guard"` / `"write_now guard"` for a guard).
        name: &'static str,
    },
    /// A writer panicked; says why (see `Resource::clear_poison`).
    Poisoned(String),
}

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccessError::Busy { job, name } => {
                write!(
                    f,
                    "jobsys: the resource is in use by job \"{name}\" ({job:?})"
                )
            }
            AccessError::Poisoned(why) => write!(f, "jobsys: {why}"),
        }
    }
}

impl std::error::Error for AccessError {}

/// A `read_now` guard: `&T` on the calling thread until dropped. Jobs that
/// write the resource and were scheduled meanwhile wait for the drop.
#[must_use = "the access ends when the guard is dropped"]
pub struct ReadNow<'r, T> {
    res: &'r Resource<T>,
    _event: Event,
}

/// A `write_now` guard: `&mut T` on the calling thread until dropped. Jobs
/// that declare the resource and were scheduled meanwhile wait for the
/// drop.
#[must_use = "the access ends when the guard is dropped"]
pub struct WriteNow<'r, T> {
    res: &'r Resource<T>,
    _event: Event,
}

impl<T> std::ops::Deref for ReadNow<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the event is in the history as a reader: every earlier
        // writer finished before the guard was made (we waited for it), and
        // every later one depends on the event (module docs of `access`).
        unsafe { &*self.res.inner.value.get() }
    }
}

impl<T> std::ops::Deref for WriteNow<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: as `deref_mut`, shared.
        unsafe { &*self.res.inner.value.get() }
    }
}

impl<T> std::ops::DerefMut for WriteNow<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the event is the last writer: every earlier access
        // finished before the guard was made, every later one depends on
        // the event; `&mut self` makes this the guard's only reference.
        unsafe { &mut *self.res.inner.value.get() }
    }
}

impl<T> fmt::Debug for ReadNow<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadNow").finish_non_exhaustive()
    }
}
impl<T> fmt::Debug for WriteNow<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteNow").finish_non_exhaustive()
    }
}

/// A guard's job: held `WAITING` by one pending count until dropped.
/// Not `Send`: it sits in this thread's context (`guards`).
struct Event {
    js: JobSystem,
    h: JobHandle,
    _not_send: PhantomData<*const ()>,
}

impl Drop for Event {
    fn drop(&mut self) {
        let reg = self.js.reg();
        let ctx = reg.current();
        let slot = self.h.slot();
        ctx.guard_remove(slot, self.h.gen);
        // The guard's pending count: the last one releases the event (a
        // no-op job), which releases the jobs that waited for the guard.
        if slot.dep_done() {
            crate::trace::job_ready(
                reg.site(ctx),
                crate::registry::Registry::job_id(slot, self.h.gen),
            );
            ThisThread::new(reg, ctx).make_runnable(slot);
        }
    }
}

impl<T: Send + Sync + 'static> Resource<T> {
    /// Read on the calling thread: wait (helping, as `complete` does) for
    /// the jobs that write it and were scheduled before, then give `&T`.
    /// Jobs scheduled while the guard lives that write it wait for its drop.
    ///
    /// # Panics
    /// If the resource is poisoned, used with another live `JobSystem`, or
    /// the wait would never end: a conflicting job waits for a guard this
    /// thread holds (a `write_now` guard of the same resource, say).
    pub fn read_now<'r>(&'r self, js: &JobSystem) -> ReadNow<'r, T> {
        let ev = self
            .now(js, Mode::Read, true)
            .unwrap_or_else(|e| panic!("{e}"));
        ReadNow {
            res: self,
            _event: ev,
        }
    }

    /// Write on the calling thread: wait (helping) for every job that
    /// declared it before, then give `&mut T`. Jobs scheduled while the
    /// guard lives that declare it wait for its drop.
    ///
    /// # Panics
    /// As `read_now`.
    pub fn write_now<'r>(&'r self, js: &JobSystem) -> WriteNow<'r, T> {
        let ev = self
            .now(js, Mode::Write, true)
            .unwrap_or_else(|e| panic!("{e}"));
        WriteNow {
            res: self,
            _event: ev,
        }
    }

    /// `read_now` without waiting: an error naming the job still writing
    /// it, or the poison.
    pub fn try_read_now<'r>(&'r self, js: &JobSystem) -> Result<ReadNow<'r, T>, AccessError> {
        let ev = self.now(js, Mode::Read, false)?;
        Ok(ReadNow {
            res: self,
            _event: ev,
        })
    }

    /// `write_now` without waiting: an error naming a job still using it,
    /// or the poison.
    pub fn try_write_now<'r>(&'r self, js: &JobSystem) -> Result<WriteNow<'r, T>, AccessError> {
        let ev = self.now(js, Mode::Write, false)?;
        Ok(WriteNow {
            res: self,
            _event: ev,
        })
    }

    fn now(&self, js: &JobSystem, mode: Mode, blocking: bool) -> Result<Event, AccessError> {
        let reg = js.reg();
        // First, before the lock below (refused from a profiler hook).
        let ctx = reg.current_for(move || match (mode, blocking) {
            (Mode::Read, true) => "Resource::read_now",
            (Mode::Read, false) => "Resource::try_read_now",
            (_, true) => "Resource::write_now",
            (_, false) => "Resource::try_write_now",
        });
        let shared = &self.inner.shared;
        // Refuse a second live system before anything is allocated.
        shared.lock().bind(js, shared);
        // Allocated before the lock: allocation may run jobs. The group's
        // slot too (a blocking guard may need one, module docs), so that
        // nothing under the lock runs back-pressure.
        let (slot, gen) = crate::room::alloc_job(reg, ctx, &crate::desc::JobDesc::default());
        let group =
            blocking.then(|| crate::room::alloc_job(reg, ctx, &crate::desc::JobDesc::default()));
        let discard = |(s, g): (&Slot, u32)| {
            s.complete_unpublished(g);
            ThisThread::new(reg, ctx).recycle(s);
        };
        let vt = match mode {
            Mode::Read => &READ_EVENT,
            Mode::Write | Mode::WriteEach => &WRITE_EVENT,
        };
        // SAFETY: fresh slot, unpublished.
        unsafe { slot.set_vtable(vt) };
        let h = JobHandle {
            slot: NonNull::from(slot),
            gen,
            system: reg.id(),
        };
        let mut deps = DepBuf::new();
        let waited_for = {
            let mut hist = shared.lock();
            hist.bind(js, shared);
            hist.collect(reg, mode, &mut deps);
            let refuse = if blocking {
                None
            } else if let Some(&busy) = deps.as_slice().first() {
                Some(AccessError::Busy {
                    job: busy,
                    name: job_name(js, busy),
                })
            } else if shared.poisoned.load(std::sync::atomic::Ordering::Acquire) {
                // (Not `poison_message`: it locks the history, held here.)
                Some(AccessError::Poisoned(poison_text(
                    self,
                    hist.poison.as_deref().unwrap_or_default(),
                )))
            } else {
                None
            };
            if let Some(e) = refuse {
                drop(hist);
                discard((slot, gen));
                return Err(e);
            }
            let waited_for = match group {
                Some((gslot, ggen)) if !deps.as_slice().is_empty() => {
                    // No job runs on this thread while the lock is held
                    // (`NoHelp`); submitting cannot unwind (the slots were
                    // allocated above; edge blocks are allocated without
                    // back-pressure), so E is always fully attached.
                    let _no_help = crate::room::NoHelp::enter();
                    // SAFETY: fresh slot, unpublished.
                    unsafe { gslot.set_vtable(&NOOP_VTABLE) };
                    let g = ThisThread::new(reg, ctx).submit(gslot, ggen, deps.as_slice(), 0);
                    // The held count is the guard's (`Event::drop`).
                    ThisThread::new(reg, ctx).submit_held(slot, gen, &[g], 0);
                    Some(g)
                }
                unused => {
                    if let Some(u) = unused {
                        discard(u);
                    }
                    crate::context::bump(&ctx.counters.scheduled);
                    // One pending count: the guard's.
                    slot.publish_waiting(gen, TRACED, 0);
                    None
                }
            };
            hist.record(reg, h, mode);
            crate::trace::accesses(
                reg,
                h,
                &mut std::iter::once(super::Shared::traced((shared, mode))),
            );
            waited_for
        };
        ctx.guard_push(slot as *const Slot, gen);
        let ev = Event {
            js: js.clone(),
            h,
            _not_send: PhantomData,
        };
        if let Some(r) = waited_for {
            // A group wait: its failure comes `via_dependency`, so a
            // panicked job's payload stays for whoever completes it.
            if let Err(JobError::WaitOnSelf) =
                ThisThread::current_for(reg, || "JobSystem::complete").wait(r)
            {
                // E keeps its edge to the group: jobs recorded after it
                // stay ordered after the conflicting jobs, which may still
                // run.
                drop(ev);
                panic!(
                    "jobsys: {}_now of {} would wait forever: a job it waits for needs a \
                     read_now/write_now guard this thread holds (drop the guard first)",
                    if mode == Mode::Read { "read" } else { "write" },
                    self.describe()
                );
            }
            // Failed or cancelled conflicting jobs: the data is as they
            // left it; a writer's panic shows as poison, checked next.
        }
        if shared.poisoned.load(std::sync::atomic::Ordering::Acquire) {
            let msg = poison_message(self);
            drop(ev);
            return Err(AccessError::Poisoned(msg));
        }
        Ok(ev)
    }
}

fn poison_message<T>(res: &Resource<T>) -> String {
    let why = res.inner.shared.lock().poison.clone().unwrap_or_default();
    poison_text(res, &why)
}

fn poison_text<T>(res: &Resource<T>, why: &str) -> String {
    format!(
        "{} is poisoned: a job writing it panicked ({why}); Resource::clear_poison lets it be used again",
        res.describe()
    )
}

/// The name of the job `h` (if it still holds its slot).
fn job_name(js: &JobSystem, h: JobHandle) -> &'static str {
    let reg = js.reg();
    let slot = h.slot();
    match slot.pin(h.gen) {
        Some(_) => {
            let name = crate::lifecycle::job_name(slot);
            ThisThread::new(reg, reg.current()).unpin(slot);
            name
        }
        None => "a finished job",
    }
}
