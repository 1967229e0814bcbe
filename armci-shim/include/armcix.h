/*
 * armcix.h -- ARMCI-MPI's extensions to ARMCI, for armci-shim (issue 19): the same names,
 * types and argument conventions as ARMCI-MPI's armcix.h. The mutex handle is opaque here
 * (ARMCI-MPI's struct holds MPI windows; a program uses it only through these calls).
 * No PARMCIX_ names (ARMCI-MPI has none either). Global Arrays uses none of these.
 */
#ifndef _ARMCIX_H_
#define _ARMCIX_H_

#include <armci.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Processor groups. Collective over the parent group; return 0. Split: the members
 * passing the same color (>= 0) form a group, ordered by key, then by parent rank. */
int ARMCIX_Group_split(ARMCI_Group *parent, int color, int key, ARMCI_Group *new_group);
int ARMCIX_Group_dup(ARMCI_Group *parent, ARMCI_Group *new_group);

/* Mutex handles: sets of mutexes over a group, beside ARMCI_Create_mutexes's. Create and
 * destroy are collective over the group (count may differ per process); proc is an
 * absolute process id, a member of the group. Trylock returns 0 when it took the mutex. */
struct armcix_mutex_hdl_s;
typedef struct armcix_mutex_hdl_s *armcix_mutex_hdl_t;

armcix_mutex_hdl_t ARMCIX_Create_mutexes_hdl(int count, ARMCI_Group *pgroup);
int  ARMCIX_Destroy_mutexes_hdl(armcix_mutex_hdl_t hdl);
void ARMCIX_Lock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc);
int  ARMCIX_Trylock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc);
void ARMCIX_Unlock_hdl(armcix_mutex_hdl_t hdl, int mutex, int proc);

/* Serves the requests that arrived for this process. */
void ARMCIX_Progress(void);

#ifdef __cplusplus
}
#endif
#endif /* _ARMCIX_H_ */
