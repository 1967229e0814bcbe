/* message.h — ARMCI's armci_msg_* collectives (armci-shim), ARMCI-MPI flavour. Every
 * armci_msg_X is also parmci_msg_X. Included by armci.h. */
#ifndef _ARMCI_MSG_H_
#define _ARMCI_MSG_H_

/* Self-contained: the group calls below take ARMCI_Group, so a program (Global Arrays'
 * base.c) may include message.h before armci.h. armci.h includes this file after it
 * defines ARMCI_Group, and the guards make either order work. */
#include "armci.h"

#ifdef __cplusplus
extern "C" {
#endif

enum armci_scope_e { SCOPE_ALL, SCOPE_NODE, SCOPE_MASTERS };
enum armci_type_e  { ARMCI_INT, ARMCI_LONG, ARMCI_LONG_LONG, ARMCI_FLOAT, ARMCI_DOUBLE };

int    armci_msg_me(void);
int    armci_msg_nproc(void);
void   armci_msg_abort(int code);
double armci_timer(void);
void   armci_msg_init(int *argc, char ***argv);
void   armci_msg_finalize(void);

void   armci_msg_barrier(void);
void   armci_msg_group_barrier(ARMCI_Group *group);

void   armci_msg_snd(int tag, void *buffer, int len, int to);
void   armci_msg_rcv(int tag, void *buffer, int buflen, int *msglen, int from);
int    armci_msg_rcvany(int tag, void *buffer, int buflen, int *msglen);

void   armci_msg_bcast(void *buffer, int len, int root);
void   armci_msg_brdcst(void *buffer, int len, int root);
void   armci_msg_bcast_scope(int scope, void *buffer, int len, int root);
void   armci_msg_group_bcast_scope(int scope, void *buf, int len, int root, ARMCI_Group *group);

void   armci_msg_sel(void *x, int n, char *op, int type, int contribute);
void   armci_msg_sel_scope(int scope, void *x, int n, char *op, int type, int contribute);
void   armci_msg_reduce(void *x, int n, char *op, int type);
void   armci_msg_reduce_scope(int scope, void *x, int n, char *op, int type);
void   armci_msg_gop_scope(int scope, void *x, int n, char *op, int type);
void   armci_msg_igop(int *x, int n, char *op);
void   armci_msg_lgop(long *x, int n, char *op);
void   armci_msg_llgop(long long *x, int n, char *op);
void   armci_msg_fgop(float *x, int n, char *op);
void   armci_msg_dgop(double *x, int n, char *op);
void   armci_msg_group_gop_scope(int scope, void *x, int n, char *op, int type, ARMCI_Group *group);
void   armci_msg_group_igop(int *x, int n, char *op, ARMCI_Group *group);
void   armci_msg_group_lgop(long *x, int n, char *op, ARMCI_Group *group);
void   armci_msg_group_llgop(long long *x, int n, char *op, ARMCI_Group *group);
void   armci_msg_group_fgop(float *x, int n, char *op, ARMCI_Group *group);
void   armci_msg_group_dgop(double *x, int n, char *op, ARMCI_Group *group);
void   armci_exchange_address(void *ptr_ar[], int n);
void   armci_exchange_address_grp(void *ptr_arr[], int n, ARMCI_Group *group);

/* Over the caller's node (classic ARMCI's cluster; SCOPE_NODE): from the node's first
 * process, and reductions; armci_grp_clus_brdcst: group ranks grp_master ..
 * grp_master + grp_clus_nproc - 1 of mastergroup, the caller's node */
void   armci_msg_clus_brdcst(void *buf, int len);
void   armci_msg_clus_igop(int *x, int n, char *op);
void   armci_msg_clus_lgop(long *x, int n, char *op);
void   armci_msg_clus_llgop(long long *x, int n, char *op);
void   armci_msg_clus_fgop(float *x, int n, char *op);
void   armci_msg_clus_dgop(double *x, int n, char *op);
void   armci_grp_clus_brdcst(void *buf, int len, int grp_master, int grp_clus_nproc,
                             ARMCI_Group *mastergroup);

void   armci_msg_bintree(int scope, int *Root, int *Up, int *Left, int *Right);

int    parmci_msg_me(void);
int    parmci_msg_nproc(void);
void   parmci_msg_abort(int code);
double parmci_timer(void);
void   parmci_msg_init(int *argc, char ***argv);
void   parmci_msg_finalize(void);
void   parmci_msg_barrier(void);
void   parmci_msg_group_barrier(ARMCI_Group *group);
void   parmci_msg_snd(int tag, void *buffer, int len, int to);
void   parmci_msg_rcv(int tag, void *buffer, int buflen, int *msglen, int from);
int    parmci_msg_rcvany(int tag, void *buffer, int buflen, int *msglen);
void   parmci_msg_bcast(void *buffer, int len, int root);
void   parmci_msg_brdcst(void *buffer, int len, int root);
void   parmci_msg_bcast_scope(int scope, void *buffer, int len, int root);
void   parmci_msg_group_bcast_scope(int scope, void *buf, int len, int root, ARMCI_Group *group);
void   parmci_msg_sel(void *x, int n, char *op, int type, int contribute);
void   parmci_msg_sel_scope(int scope, void *x, int n, char *op, int type, int contribute);
void   parmci_msg_reduce(void *x, int n, char *op, int type);
void   parmci_msg_reduce_scope(int scope, void *x, int n, char *op, int type);
void   parmci_msg_gop_scope(int scope, void *x, int n, char *op, int type);
void   parmci_msg_igop(int *x, int n, char *op);
void   parmci_msg_lgop(long *x, int n, char *op);
void   parmci_msg_llgop(long long *x, int n, char *op);
void   parmci_msg_fgop(float *x, int n, char *op);
void   parmci_msg_dgop(double *x, int n, char *op);
void   parmci_msg_group_gop_scope(int scope, void *x, int n, char *op, int type, ARMCI_Group *group);
void   parmci_msg_group_igop(int *x, int n, char *op, ARMCI_Group *group);
void   parmci_msg_group_lgop(long *x, int n, char *op, ARMCI_Group *group);
void   parmci_msg_group_llgop(long long *x, int n, char *op, ARMCI_Group *group);
void   parmci_msg_group_fgop(float *x, int n, char *op, ARMCI_Group *group);
void   parmci_msg_group_dgop(double *x, int n, char *op, ARMCI_Group *group);
void   parmci_exchange_address(void *ptr_ar[], int n);
void   parmci_exchange_address_grp(void *ptr_arr[], int n, ARMCI_Group *group);
void   parmci_msg_clus_brdcst(void *buf, int len);
void   parmci_msg_clus_igop(int *x, int n, char *op);
void   parmci_msg_clus_lgop(long *x, int n, char *op);
void   parmci_msg_clus_llgop(long long *x, int n, char *op);
void   parmci_msg_clus_fgop(float *x, int n, char *op);
void   parmci_msg_clus_dgop(double *x, int n, char *op);
void   parmci_grp_clus_brdcst(void *buf, int len, int grp_master, int grp_clus_nproc,
                              ARMCI_Group *mastergroup);
void   parmci_msg_bintree(int scope, int *Root, int *Up, int *Left, int *Right);

#ifdef __cplusplus
}
#endif

#endif /* _ARMCI_MSG_H_ */
