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
    ARMCI_Same_node => PARMCI_Same_node;
    armci_domain_nprocs => parmci_domain_nprocs;
    armci_domain_id => parmci_domain_id;
    armci_domain_glob_proc_id => parmci_domain_glob_proc_id;
    armci_domain_my_id => parmci_domain_my_id;
    armci_domain_count => parmci_domain_count;
    armci_domain_same_id => parmci_domain_same_id;
    armci_msg_snd => parmci_msg_snd;
    armci_msg_rcv => parmci_msg_rcv;
    armci_msg_rcvany => parmci_msg_rcvany;
    armci_msg_sel_scope => parmci_msg_sel_scope;
}
