//! Active messages over a channel (ARCHITECTURE "Higher libraries"): the protocol layer
//! shared by mpi-lite, shmem, gasnet-shim and armci-shim. Under construction.
