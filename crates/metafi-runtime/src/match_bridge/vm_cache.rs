//! Which VM a new script match runs on ([`MatchVms`]): its own, or the one its executor thread
//! shares among the matches of the same module set.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::thread::LocalKey;

use metafi_match::HandlerError;

use crate::host::VmSetup;
use crate::match_host::MatchVms;

/// The shared VMs of one executor thread, per module set. Each engine declares one in a
/// `thread_local!` (VMs are not `Send`: a VM stays on the thread that made it).
pub struct ThreadVms<V> {
    vms: RefCell<Vec<(usize, Rc<V>)>>,
}

impl<V> ThreadVms<V> {
    pub const fn new() -> ThreadVms<V> {
        ThreadVms {
            vms: RefCell::new(Vec::new()),
        }
    }
}

impl<V> Default for ThreadVms<V> {
    fn default() -> Self {
        ThreadVms::new()
    }
}

/// The VM for a new match: a fresh one from `load` ([`MatchVms::PerMatch`]), or this thread's
/// VM for `setup`'s module set ([`MatchVms::PerThread`]), made by `load` the first time.
/// A shared VM `usable` refuses (one whose job queue a script flooded) is left to the matches
/// already on it and replaced for new ones.
pub fn match_vm<V: 'static>(
    cache: &'static LocalKey<ThreadVms<V>>,
    vms: MatchVms,
    setup: VmSetup,
    usable: impl Fn(&V) -> bool,
    load: impl FnOnce(VmSetup) -> Result<Rc<V>, HandlerError>,
) -> Result<Rc<V>, HandlerError> {
    if vms == MatchVms::PerMatch {
        return load(setup);
    }
    // The module set's address: every VM of a runtime loads the same `Arc`.
    let key = Arc::as_ptr(&setup.modules) as *const () as usize;
    let existing = cache.with(|cache| {
        let mut vms = cache.vms.borrow_mut();
        vms.retain(|(_, vm)| usable(vm));
        vms.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, vm)| vm.clone())
    });
    if let Some(vm) = existing {
        return Ok(vm);
    }
    let vm = load(setup)?;
    cache.with(|cache| cache.vms.borrow_mut().push((key, vm.clone())));
    Ok(vm)
}
