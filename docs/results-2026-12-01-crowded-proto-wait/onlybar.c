#include <gasnetex.h>
#include <gasnet_coll.h>
#include <gasnet_tools.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    gex_Client_t c; gex_EP_t ep; gex_TM_t tm;
    gex_Client_Init(&c, &ep, &tm, "onlybar", &argc, &argv, 0);
    long it = argc > 1 ? atol(argv[1]) : 2000;
    int mode = argc > 2 ? atoi(argv[2]) : 0;
    for (int r = 0; r < 3; r++) {
        gasnett_tick_t t0 = gasnett_ticks_now();
        for (long i = 0; i < it; i++) {
            if (mode == 0) gex_Event_Wait(gex_Coll_BarrierNB(tm, 0));
            else { gasnet_barrier_notify(0, GASNET_BARRIERFLAG_ANONYMOUS); gasnet_barrier_wait(0, GASNET_BARRIERFLAG_ANONYMOUS); }
        }
        double us = gasnett_ticks_to_ns(gasnett_ticks_now() - t0) / 1e3 / it;
        if (gex_TM_QueryRank(tm) == 0) printf("mode %d: %.2f us\n", mode, us);
    }
    gasnet_exit(0);
    return 1;
}
