//! What a job is called and how urgent it is: `JobDesc`, `Priority`, and the
//! table of interned job names.
//!
//! A slot has 4 spare bytes, so a job stores a 16-bit name id (0: unnamed,
//! reported as its closure's type name) and its priority. Names are
//! interned once per distinct string (a global table behind a mutex) and
//! looked up through a small per-thread cache, so naming a job on the hot
//! path costs a few loads.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, RwLock};

/// How urgent a job is. Runnable `High` work is taken before `Normal`
/// before `Low` (see `JobBuilder::priority`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// On the frame's critical path.
    High = 0,
    /// Everything else in the frame (the default).
    #[default]
    Normal = 1,
    /// Background work (streaming, decompression) that may wait.
    Low = 2,
}

/// A job's name and priority. Cheap to copy; usable in `const`/`static`:
///
/// ```
/// use jobsys::{JobDesc, Priority};
/// const PHYSICS: JobDesc = JobDesc::named("physics").with_priority(Priority::High);
/// assert_eq!(PHYSICS.name, Some("physics"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobDesc {
    /// Shown by the tracer; `None`: the closure's type name.
    pub name: Option<&'static str>,
    /// Scheduling priority.
    pub priority: Priority,
}

impl JobDesc {
    /// A normal-priority job called `name`.
    pub const fn named(name: &'static str) -> JobDesc {
        JobDesc {
            name: Some(name),
            priority: Priority::Normal,
        }
    }

    /// The same description with `priority`.
    pub const fn with_priority(self, priority: Priority) -> JobDesc {
        JobDesc {
            name: self.name,
            priority,
        }
    }
}

impl From<&'static str> for JobDesc {
    fn from(name: &'static str) -> JobDesc {
        JobDesc::named(name)
    }
}

impl From<Priority> for JobDesc {
    fn from(priority: Priority) -> JobDesc {
        JobDesc {
            name: None,
            priority,
        }
    }
}

/// Id 0 is "unnamed".
const MAX_NAMES: usize = u16::MAX as usize;

struct Names {
    ids: Mutex<HashMap<&'static str, u16>>,
    by_id: RwLock<Vec<&'static str>>,
}

fn names() -> &'static Names {
    static NAMES: OnceLock<Names> = OnceLock::new();
    NAMES.get_or_init(|| Names {
        ids: Mutex::new(HashMap::new()),
        by_id: RwLock::new(vec!["<unnamed>"]),
    })
}

thread_local! {
    /// (address, length, id) of names this thread used recently.
    static CACHE: RefCell<[(usize, usize, u16); 8]> = const { RefCell::new([(0, 0, 0); 8]) };
}

/// The id of `name`, interning it on first use. Past 65,535 distinct names
/// every new name maps to id 0 (reported by type name).
pub(crate) fn intern(name: &'static str) -> u16 {
    let key = (name.as_ptr() as usize, name.len());
    let hit = CACHE.with(|c| {
        c.borrow()
            .iter()
            .find(|e| (e.0, e.1) == key && e.2 != 0)
            .map(|e| e.2)
    });
    if let Some(id) = hit {
        return id;
    }
    let n = names();
    let id = {
        let mut ids = n.ids.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = ids.get(name) {
            id
        } else {
            let mut by_id = n.by_id.write().unwrap_or_else(|e| e.into_inner());
            if by_id.len() >= MAX_NAMES {
                return 0;
            }
            let id = by_id.len() as u16;
            by_id.push(name);
            ids.insert(name, id);
            id
        }
    };
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        c.rotate_right(1);
        c[0] = (key.0, key.1, id);
    });
    id
}

/// The name interned as `id` (`None` for 0 or an unknown id).
pub(crate) fn name_of(id: u16) -> Option<&'static str> {
    if id == 0 {
        return None;
    }
    names()
        .by_id
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(id as usize)
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_intern_to_stable_ids() {
        let a = intern("physics");
        let b = intern("animation");
        assert_ne!(a, 0);
        assert_ne!(a, b);
        // The same text at another address gets the same id.
        let owned: &'static str = Box::leak(String::from("physics").into_boxed_str());
        assert_eq!(intern(owned), a);
        assert_eq!(name_of(a), Some("physics"));
        assert_eq!(name_of(0), None);
    }
}
