/*
 * SkifCh_Init in an environment that the test sets out of range (SKIFCH_PORTS,
 * SKIFCH_LANE_KB, started alone): it must fail with EINVAL, and skifch.h promises the
 * reason on stderr (the Rust driver checks it). Issue 16, defect 8.
 */
#include "testutil.h"

int main(void) {
    CHECK_ERR(SkifCh_Init(NULL, NULL), EINVAL);
    CHECK_ERR(SkifCh_Rank(), EINVAL);
    printf("initenv: EINVAL\n");
    return 0;
}
