//! Access declarations (`Read`, `Write`, `WriteEach`), what each hands the
//! job, and the tuple impls (one macro, tuples of 1 to 8).

use super::{Mode, Resource, Shared};
use std::ops::Range;

/// A declaration `res.read()`: the job gets `&T`.
pub struct Read<T> {
    pub(super) res: Resource<T>,
}

/// A declaration `res.write()`: the job gets `&mut T` (single jobs only: a
/// `parallel_for` takes [`WriteEach`] instead).
pub struct Write<T> {
    pub(super) res: Resource<T>,
}

/// A declaration `res.write_each()` of a slice resource for a
/// `job().access(..).parallel_for`: index `i` gets `&mut v[i]` only (the chunked form
/// gets `&mut v[range]`), so no two pieces alias.
pub struct WriteEach<T> {
    pub(super) res: Resource<T>,
}

/// Storage whose elements `write_each` hands out one by one: `Vec<E>`,
/// `Box<[E]>` and `[E; N]`, and nothing else.
///
/// Sealed: `write_each` makes a `&mut` to each element from the address
/// and length this trait reports, so a wrong report would be undefined
/// behaviour reached from safe code. Only the three impls below can make
/// it (`docs/access.md`, "Decisions").
pub trait SliceStorage: sealed::Storage + Send + Sync + 'static {
    /// The element type.
    type Elem: Send + 'static;
    #[doc(hidden)]
    /// The elements' address and count.
    ///
    /// What `WriteEach`'s `prepare`, `item` and `chunk` rely on (each impl
    /// below keeps it): the pointer is aligned and addresses `len`
    /// contiguous initialised elements that belong to `*this` and to no
    /// other value, and it stays valid for reads and writes of them, with
    /// no reference to `*this` needed, until `*this` is next used or
    /// dropped.
    ///
    /// # Safety
    /// `this` is valid and the caller has exclusive access for the call.
    unsafe fn raw_parts(this: *mut Self) -> (*mut Self::Elem, usize);
}

impl<E: Send + Sync + 'static> sealed::Storage for Vec<E> {}
impl<E: Send + Sync + 'static> sealed::Storage for Box<[E]> {}
impl<E: Send + Sync + 'static, const N: usize> sealed::Storage for [E; N] {}

impl<E: Send + Sync + 'static> SliceStorage for Vec<E> {
    type Elem = E;
    unsafe fn raw_parts(this: *mut Self) -> (*mut E, usize) {
        // SAFETY: exclusive for the call (the caller's promise); the `&mut`
        // ends here. The pointer is to the Vec's heap buffer, not into the
        // `Vec` value, so it outlives the `&mut`; the buffer stays put until
        // the Vec is next used (a push may move it) or dropped.
        let v = unsafe { &mut *this };
        (v.as_mut_ptr(), v.len())
    }
}
impl<E: Send + Sync + 'static> SliceStorage for Box<[E]> {
    type Elem = E;
    unsafe fn raw_parts(this: *mut Self) -> (*mut E, usize) {
        // SAFETY: as for `Vec`: the pointer is to the boxed slice, which
        // stays put until the box is dropped.
        let v = unsafe { &mut *this };
        (v.as_mut_ptr(), v.len())
    }
}
impl<E: Send + Sync + 'static, const N: usize> SliceStorage for [E; N] {
    type Elem = E;
    unsafe fn raw_parts(this: *mut Self) -> (*mut E, usize) {
        // An array is its N elements, in place: `this` itself, with the
        // caller's provenance (no reference is made).
        (this.cast::<E>(), N)
    }
}

mod sealed {
    /// `Declare`'s seal.
    pub trait Sealed {}
    /// `SliceStorage`'s seal.
    pub trait Storage {}
}

/// One declared access (the elements of the tuples). Sealed.
pub trait Declare: sealed::Sealed + Send + Sync + 'static {
    #[doc(hidden)]
    fn decl(&self) -> (&Shared, Mode);
    #[doc(hidden)]
    /// The same declaration (one more reference to the resource).
    fn dup(&self) -> Self
    where
        Self: Sized;
}

/// A declaration usable by a single job (`job().access(..).schedule`): `Read`,
/// `Write`, and tuples of 1 to 8 of them (tuples nest: `((a, b), c)`). `Guards<'a>` is what the closure gets:
/// `&'a T` for a read, `&'a mut T` for a write, a tuple for a tuple.
pub trait Access: Send + Sync + 'static {
    /// What the job's closure receives.
    type Guards<'a>;
    #[doc(hidden)]
    fn visit<'s>(&'s self, f: &mut dyn FnMut(&'s Shared, Mode));
    #[doc(hidden)]
    /// The same declarations: the job owns one copy, the scheduling call
    /// keeps the other (and with it the resources) while it holds their
    /// locks.
    fn dup(&self) -> Self
    where
        Self: Sized;
    #[doc(hidden)]
    /// # Safety
    /// The job's derived dependencies have finished and it is running:
    /// nothing else holds a conflicting reference (see `access/mod.rs`).
    unsafe fn guards(&self) -> Self::Guards<'_>;
}

/// A declaration usable by a `job().access(..).parallel_for`: `Read`, `WriteEach`,
/// and tuples of them. `Item<'a>` is what index `i` gets (`&T`, `&mut
/// v[i]`), `Chunk<'a>` what a chunk gets (`&T`, `&mut v[range]`).
pub trait ParAccess: Send + Sync + 'static {
    /// What one index's call receives.
    type Item<'a>;
    /// What one chunk's call receives.
    type Chunk<'a>;
    #[doc(hidden)]
    type Base: Send + Sync;
    #[doc(hidden)]
    fn visit<'s>(&'s self, f: &mut dyn FnMut(&'s Shared, Mode));
    #[doc(hidden)]
    /// As `Access::dup`.
    fn dup(&self) -> Self
    where
        Self: Sized;
    #[doc(hidden)]
    /// # Safety
    /// As `Access::guards`; called once per loop, by one thread, before
    /// any `item`/`chunk` call (`OnceLock`).
    unsafe fn prepare(&self) -> Self::Base;
    #[doc(hidden)]
    /// # Safety
    /// `base` came from `prepare` of this loop, and each `i` is passed once.
    unsafe fn item<'a>(&'a self, base: &'a Self::Base, i: usize) -> Self::Item<'a>;
    #[doc(hidden)]
    /// # Safety
    /// As `item`, with disjoint ranges, none inverted (`start <= end`).
    unsafe fn chunk<'a>(&'a self, base: &'a Self::Base, r: Range<usize>) -> Self::Chunk<'a>;
}

impl<T> sealed::Sealed for Read<T> {}
impl<T> sealed::Sealed for Write<T> {}
impl<T> sealed::Sealed for WriteEach<T> {}

impl<T: Send + Sync + 'static> Declare for Read<T> {
    fn decl(&self) -> (&Shared, Mode) {
        (&self.res.inner.shared, Mode::Read)
    }
    fn dup(&self) -> Self {
        Read {
            res: self.res.clone(),
        }
    }
}
impl<T: Send + Sync + 'static> Declare for Write<T> {
    fn decl(&self) -> (&Shared, Mode) {
        (&self.res.inner.shared, Mode::Write)
    }
    fn dup(&self) -> Self {
        Write {
            res: self.res.clone(),
        }
    }
}
impl<T: SliceStorage> Declare for WriteEach<T> {
    fn decl(&self) -> (&Shared, Mode) {
        (&self.res.inner.shared, Mode::WriteEach)
    }
    fn dup(&self) -> Self {
        WriteEach {
            res: self.res.clone(),
        }
    }
}

/// One declaration's part of a single job.
pub trait SingleDecl: Declare {
    /// `&'a T` or `&'a mut T`.
    type Guard<'a>;
    #[doc(hidden)]
    /// # Safety
    /// As `Access::guards`.
    unsafe fn guard(&self) -> Self::Guard<'_>;
}

impl<T: Send + Sync + 'static> SingleDecl for Read<T> {
    type Guard<'a> = &'a T;
    unsafe fn guard(&self) -> &T {
        // SAFETY: no writer of this resource runs now: every earlier writer
        // is a finished dependency (or was seen finished), every later one
        // depends on this job (`access/mod.rs`, "Why the references are
        // sound").
        unsafe { &*self.res.inner.value.get() }
    }
}
impl<T: Send + Sync + 'static> SingleDecl for Write<T> {
    type Guard<'a> = &'a mut T;
    unsafe fn guard(&self) -> &mut T {
        // SAFETY: every other job declaring this resource finished before
        // this one started or starts after it finishes (`access/mod.rs`),
        // and the job declared it once (checked at schedule time).
        unsafe { &mut *self.res.inner.value.get() }
    }
}

/// One declaration's part of a `job().access(..).parallel_for`.
pub trait ParDecl: Declare {
    /// What index `i` gets.
    type Item<'a>;
    /// What a chunk gets.
    type Chunk<'a>;
    #[doc(hidden)]
    type Base: Send + Sync;
    #[doc(hidden)]
    /// # Safety
    /// As `ParAccess::prepare`.
    unsafe fn prepare(&self) -> Self::Base;
    #[doc(hidden)]
    /// # Safety
    /// As `ParAccess::item`.
    unsafe fn item<'a>(&'a self, base: &'a Self::Base, i: usize) -> Self::Item<'a>;
    #[doc(hidden)]
    /// # Safety
    /// As `ParAccess::chunk`.
    unsafe fn chunk<'a>(&'a self, base: &'a Self::Base, r: Range<usize>) -> Self::Chunk<'a>;
}

impl<T: Send + Sync + 'static> ParDecl for Read<T> {
    type Item<'a> = &'a T;
    type Chunk<'a> = &'a T;
    type Base = ();
    unsafe fn prepare(&self) {}
    unsafe fn item<'a>(&'a self, _: &'a (), _: usize) -> &'a T {
        // SAFETY: as `SingleDecl::guard` of `Read`.
        unsafe { self.guard() }
    }
    unsafe fn chunk<'a>(&'a self, _: &'a (), _: Range<usize>) -> &'a T {
        // SAFETY: as `SingleDecl::guard` of `Read`.
        unsafe { self.guard() }
    }
}

/// The elements of a `write_each` resource, taken once per loop: what
/// `SliceStorage::raw_parts` reported (its contract: `len` elements of the
/// resource's value, valid while the loop runs, since nothing else uses the
/// value then).
pub struct RawSlice<E> {
    ptr: *mut E,
    len: usize,
}
// SAFETY: pieces on several threads get `&mut` to distinct elements (each
// index once, ranges disjoint: `ParAccess::item`'s contract), which needs
// `E: Send` only.
unsafe impl<E: Send> Send for RawSlice<E> {}
// SAFETY: as above: sharing the base only lets threads reach distinct
// elements.
unsafe impl<E: Send> Sync for RawSlice<E> {}

impl<T: SliceStorage> ParDecl for WriteEach<T> {
    type Item<'a> = &'a mut T::Elem;
    type Chunk<'a> = &'a mut [T::Elem];
    type Base = RawSlice<T::Elem>;
    unsafe fn prepare(&self) -> RawSlice<T::Elem> {
        // SAFETY: this loop is the resource's only user now (as for
        // `Write`), and `prepare` runs once, on one thread, before any piece
        // touches an element: the one `&mut T` made in `raw_parts` ends
        // before the per-element references are made from its pointer.
        // `T` is one of the sealed storages, so the pointer and length keep
        // `raw_parts`'s contract: `len` elements of this resource's value,
        // valid until the value is next used, i.e. after this loop.
        let (ptr, len) = unsafe { T::raw_parts(self.res.inner.value.get()) };
        RawSlice { ptr, len }
    }
    unsafe fn item<'a>(&'a self, base: &'a RawSlice<T::Elem>, i: usize) -> &'a mut T::Elem {
        assert!(
            i < base.len,
            "jobsys: write_each of {}: index {i} is out of bounds (len {})",
            self.res.describe(),
            base.len
        );
        // SAFETY: `i < len`, and `ptr` addresses `len` initialised elements
        // valid for the whole loop (`raw_parts`'s contract, kept by the
        // sealed storages); the loop hands each index to exactly one call
        // (the caller's promise), so this is the only reference to element i.
        unsafe { &mut *base.ptr.add(i) }
    }
    unsafe fn chunk<'a>(
        &'a self,
        base: &'a RawSlice<T::Elem>,
        r: Range<usize>,
    ) -> &'a mut [T::Elem] {
        assert!(
            r.end <= base.len,
            "jobsys: write_each of {}: range {r:?} is out of bounds (len {})",
            self.res.describe(),
            base.len
        );
        // SAFETY: `start <= end` (the loop's pieces are never inverted: the
        // caller's promise) and `end <= len` (checked above); `ptr`
        // addresses `len` initialised elements valid for the whole loop
        // (`raw_parts`'s contract, kept by the sealed storages); chunks of
        // one loop are disjoint (the caller's promise).
        unsafe { std::slice::from_raw_parts_mut(base.ptr.add(r.start), r.len()) }
    }
}

macro_rules! single {
    ($($d:ident),*) => {
        impl<$($d: Declare),*> Access for $($d)* where $($d: SingleDecl),* {
            type Guards<'a> = $(<$d as SingleDecl>::Guard<'a>)*;
            fn visit<'s>(&'s self, f: &mut dyn FnMut(&'s Shared, Mode)) {
                let (s, m) = self.decl();
                f(s, m)
            }
            fn dup(&self) -> Self {
                Declare::dup(self)
            }
            unsafe fn guards(&self) -> Self::Guards<'_> {
                // SAFETY: the caller's promise.
                unsafe { self.guard() }
            }
        }
        impl<$($d: Declare),*> ParAccess for $($d)* where $($d: ParDecl),* {
            type Item<'a> = $(<$d as ParDecl>::Item<'a>)*;
            type Chunk<'a> = $(<$d as ParDecl>::Chunk<'a>)*;
            type Base = $(<$d as ParDecl>::Base)*;
            fn visit<'s>(&'s self, f: &mut dyn FnMut(&'s Shared, Mode)) {
                let (s, m) = self.decl();
                f(s, m)
            }
            fn dup(&self) -> Self {
                Declare::dup(self)
            }
            unsafe fn prepare(&self) -> Self::Base {
                // SAFETY: the caller's promise.
                unsafe { ParDecl::prepare(self) }
            }
            unsafe fn item<'a>(&'a self, base: &'a Self::Base, i: usize) -> Self::Item<'a> {
                // SAFETY: the caller's promise.
                unsafe { ParDecl::item(self, base, i) }
            }
            unsafe fn chunk<'a>(&'a self, base: &'a Self::Base, r: Range<usize>) -> Self::Chunk<'a> {
                // SAFETY: the caller's promise.
                unsafe { ParDecl::chunk(self, base, r) }
            }
        }
    };
}

macro_rules! tuple {
    ($($d:ident $i:tt),*) => {
        impl<$($d: Access),*> Access for ($($d,)*) {
            type Guards<'a> = ($(<$d as Access>::Guards<'a>,)*);
            fn visit<'s>(&'s self, f: &mut dyn FnMut(&'s Shared, Mode)) {
                $( self.$i.visit(f); )*
            }
            fn dup(&self) -> Self {
                ($(Access::dup(&self.$i),)*)
            }
            unsafe fn guards(&self) -> Self::Guards<'_> {
                // SAFETY: the caller's promise, for each element; the
                // elements name distinct resources or read one twice
                // (`job().access(..).schedule` refuses a write declared twice).
                unsafe { ($(self.$i.guards(),)*) }
            }
        }
        impl<$($d: ParAccess),*> ParAccess for ($($d,)*) {
            type Item<'a> = ($(<$d as ParAccess>::Item<'a>,)*);
            type Chunk<'a> = ($(<$d as ParAccess>::Chunk<'a>,)*);
            type Base = ($(<$d as ParAccess>::Base,)*);
            fn visit<'s>(&'s self, f: &mut dyn FnMut(&'s Shared, Mode)) {
                $( self.$i.visit(f); )*
            }
            fn dup(&self) -> Self {
                ($(ParAccess::dup(&self.$i),)*)
            }
            unsafe fn prepare(&self) -> Self::Base {
                // SAFETY: the caller's promise, for each element.
                unsafe { ($(self.$i.prepare(),)*) }
            }
            unsafe fn item<'a>(&'a self, base: &'a Self::Base, i: usize) -> Self::Item<'a> {
                // SAFETY: the caller's promise, for each element.
                unsafe { ($(self.$i.item(&base.$i, i),)*) }
            }
            unsafe fn chunk<'a>(&'a self, base: &'a Self::Base, r: Range<usize>) -> Self::Chunk<'a> {
                // SAFETY: the caller's promise, for each element.
                unsafe { ($(self.$i.chunk(&base.$i, r.clone()),)*) }
            }
        }
    };
}

single!(D);

/// No declaration (a job that only orders by explicit edges, or a tuple
/// built generically that came out empty).
impl Access for () {
    type Guards<'a> = ();
    fn visit<'s>(&'s self, _: &mut dyn FnMut(&'s Shared, Mode)) {}
    fn dup(&self) {}
    unsafe fn guards(&self) {}
}
impl ParAccess for () {
    type Item<'a> = ();
    type Chunk<'a> = ();
    type Base = ();
    fn visit<'s>(&'s self, _: &mut dyn FnMut(&'s Shared, Mode)) {}
    fn dup(&self) {}
    unsafe fn prepare(&self) {}
    unsafe fn item<'a>(&'a self, _: &'a (), _: usize) {}
    unsafe fn chunk<'a>(&'a self, _: &'a (), _: Range<usize>) {}
}
tuple!(A 0);
tuple!(A 0, B 1);
tuple!(A 0, B 1, C 2);
tuple!(A 0, B 1, C 2, D 3);
tuple!(A 0, B 1, C 2, D 3, E 4);
tuple!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

/// Most resources one job may declare (tuples nest, so more could be
/// written; `job().access(..).schedule` refuses them with a message).
pub(crate) const MAX_DECLS: usize = 16;
