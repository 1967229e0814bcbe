/* shmemx.h — extensions of libskifshmem beyond OpenSHMEM 1.5. */
#ifndef SKIF_SHMEMX_H
#define SKIF_SHMEMX_H
#include <shmem.h>
#ifdef __cplusplus
extern "C" {
#endif

/* 1 if this job reaches remote memory directly (the shm driver's RMA capability),
 * 2 if it maps the PEs of its node and reaches the others by the driver's transfers
 * (libfabric's FI_RMA; atomics on those by messages), 0 if it uses the message path
 * (a driver without RMA, or SKIFSHMEM_RMA=off). */
int shmemx_direct_access(void);
int pshmemx_direct_access(void); /* its profiling name (see pshmem.h) */

#ifdef __cplusplus
}
#endif
#endif /* SKIF_SHMEMX_H */
