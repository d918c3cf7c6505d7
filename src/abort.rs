//! One cancellation handle for every cancellable native call (listing, search): JS makes
//! one, passes it in, and calls `abort()`; the workers poll the flag between units of work.

use napi_derive::napi;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A cancellation flag shared with running native work.
#[napi]
pub struct AbortFlag {
    flag: Arc<AtomicBool>,
}

#[napi]
impl AbortFlag {
    #[napi(constructor)]
    pub fn new() -> Self {
        AbortFlag {
            flag: Arc::new(AtomicBool::new(false)),
        }
    }

    #[napi(catch_unwind)]
    pub fn abort(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    /// The flag, for the workers.
    pub fn shared(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }
}

impl Default for AbortFlag {
    fn default() -> Self {
        Self::new()
    }
}
