//! Per-shard state owned by the layers above the shard (POP, long polling, pull filters, replication,
//! delay delivery, calls to clients): the shard keeps one value of each type for its owner and never
//! names the types, so `shard/` depends on none of those layers.
//!
//! Each owner reaches its state through one accessor of its own (for example `feature::pop::state`),
//! created with `Default` on first use.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

#[derive(Default)]
pub struct Extensions {
    values: RefCell<HashMap<TypeId, Rc<dyn Any>>>,
}

impl Extensions {
    /// This shard's `T`, created on first use.
    pub fn get<T: Default + 'static>(&self) -> Rc<T> {
        let key = TypeId::of::<T>();
        if let Some(value) = self.values.borrow().get(&key) {
            // Stored under `TypeId::of::<T>()`, so it is a `T`.
            if let Ok(value) = value.clone().downcast::<T>() {
                return value;
            }
        }
        let value = Rc::new(T::default());
        self.values.borrow_mut().insert(key, value.clone());
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn one_value_per_type_kept_between_calls() {
        let ext = Extensions::default();
        ext.get::<Cell<u32>>().set(7);
        assert_eq!(ext.get::<Cell<u32>>().get(), 7);
        assert_eq!(ext.get::<Cell<u64>>().get(), 0);
    }
}
