/* Only .data and .bss are symmetric global data, never the lazy-binding PLT slots
 * (.got.plt) that follow RELRO on the same page in a partial-RELRO link (issue 16
 * defect 4: a put there redirected the peer's next library call). Built once with
 * -Wl,-z,lazy (partial RELRO, writable PLT slots) and once as skif-oshcc links (full
 * RELRO). argv[1]: "query" checks shmem_addr_accessible and shmem_ptr on the GOT's
 * first PLT slot and on globals; "put" puts into the peer's PLT slot, which must fail
 * with "address is not symmetric". */
#include <shmem.h>
#include <string.h>
#include "check.h"

extern char _GLOBAL_OFFSET_TABLE_[];
long first_data = 1; /* .data */
static long in_bss[4]; /* .bss */

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "query";
    shmem_init();
    int me = shmem_my_pe(), peer = (me + 1) % shmem_n_pes();
    /* the three reserved words, then the PLT slots (x86-64 psABI) */
    char *slot = _GLOBAL_OFFSET_TABLE_ + 3 * sizeof(void *);
    if (!strcmp(what, "query")) {
        CHECK(!shmem_addr_accessible(slot, peer));
        CHECK(!shmem_addr_accessible(_GLOBAL_OFFSET_TABLE_, peer));
        CHECK(shmem_ptr(slot, peer) == NULL);
        CHECK(shmem_addr_accessible(&first_data, peer));
        CHECK(shmem_addr_accessible(&in_bss[3], peer));
        shmem_long_p(&in_bss[1], me + 10, peer);
        shmem_barrier_all();
        CHECK(in_bss[1] == peer + 10);
    } else if (!strcmp(what, "put")) {
        long evil = 0x4141414141414141L;
        shmem_barrier_all();
        shmem_putmem(slot, &evil, sizeof evil, peer);
        shmem_barrier_all();
    }
    shmem_finalize();
    return 0;
}
