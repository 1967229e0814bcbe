//! The calls of the interface that are not built yet. Each exists under both names (so
//! programs link), reads none of its arguments, and ends the job with
//! `armci: <call>: <call> is not implemented by this ARMCI` (ARMCI's error convention:
//! message and exit status 1). The README's list matches this one.

use crate::{fatal, Error};

macro_rules! unsupported {
    ($($name:ident => $p:ident;)*) => {$(
        #[no_mangle]
        pub extern "C" fn $p() -> ! {
            fatal(stringify!($name), &Error::NotImplemented(stringify!($name)))
        }
        #[no_mangle]
        pub extern "C" fn $name() -> ! {
            $p()
        }
    )*};
}

unsupported! {
    armci_msg_sel_scope => parmci_msg_sel_scope;
}
