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
    ARMCI_Group_create => PARMCI_Group_create;
    ARMCI_Group_create_child => PARMCI_Group_create_child;
    ARMCI_Group_free => PARMCI_Group_free;
    ARMCI_Group_rank => PARMCI_Group_rank;
    ARMCI_Group_size => PARMCI_Group_size;
    ARMCI_Group_set_default => PARMCI_Group_set_default;
    ARMCI_Group_get_default => PARMCI_Group_get_default;
    ARMCI_Group_get_world => PARMCI_Group_get_world;
    ARMCI_Absolute_id => PARMCI_Absolute_id;
    ARMCI_Malloc_group => PARMCI_Malloc_group;
    ARMCI_Free_group => PARMCI_Free_group;
    ARMCI_Malloc_memdev => PARMCI_Malloc_memdev;
    ARMCI_Malloc_group_memdev => PARMCI_Malloc_group_memdev;
    ARMCI_Free_memdev => PARMCI_Free_memdev;
    ARMCI_Uses_shm_grp => PARMCI_Uses_shm_grp;
    ARMCI_Same_node => PARMCI_Same_node;
    armci_domain_nprocs => parmci_domain_nprocs;
    armci_domain_id => parmci_domain_id;
    armci_domain_glob_proc_id => parmci_domain_glob_proc_id;
    armci_domain_my_id => parmci_domain_my_id;
    armci_domain_count => parmci_domain_count;
    armci_domain_same_id => parmci_domain_same_id;
    armci_msg_group_barrier => parmci_msg_group_barrier;
    armci_msg_snd => parmci_msg_snd;
    armci_msg_rcv => parmci_msg_rcv;
    armci_msg_rcvany => parmci_msg_rcvany;
    armci_msg_group_bcast_scope => parmci_msg_group_bcast_scope;
    armci_msg_sel_scope => parmci_msg_sel_scope;
    armci_msg_group_gop_scope => parmci_msg_group_gop_scope;
    armci_msg_group_igop => parmci_msg_group_igop;
    armci_msg_group_lgop => parmci_msg_group_lgop;
    armci_msg_group_llgop => parmci_msg_group_llgop;
    armci_msg_group_fgop => parmci_msg_group_fgop;
    armci_msg_group_dgop => parmci_msg_group_dgop;
}
