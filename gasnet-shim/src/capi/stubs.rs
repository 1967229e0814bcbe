//! Calls declared by the headers and not built yet: each fails with
//! `gasnet: <call>: <call> is not implemented ...` (README's list).
#![allow(clippy::missing_safety_doc)]

use super::fatal;
use crate::Error;

/// `name => ret;` defines an exported C function of no arguments that fails naming
/// itself (the arguments do not matter: it never returns; C callers pass whatever the
/// header declares).
macro_rules! not_built {
    ($($name:ident),* $(,)?) => {$(
        #[no_mangle]
        pub extern "C" fn $name() {
            fatal(stringify!($name), &Error::NotImplemented(stringify!($name)))
        }
    )*};
}

not_built!(
    gex_Segment_Create,
    gex_EP_Create,
    gex_EP_BindSegment,
    gex_EP_PublishBoundSegment
);
