/* bgprio.h — background threads yield to the loop thread.
 *
 * The loop thread draws the screen and reads keys; every other thread of
 * cairn does background work (the persistence writer and its helpers,
 * listing, search and loading on libuv's workers). Those threads run at a
 * lower priority, BGPRIO_NICE steps of nice below the process, so that on
 * a machine with fewer cores than busy threads the scheduler runs the loop
 * first and typing stays smooth (bench/bench_stall measures it). Lowering
 * needs no privilege. */
#ifndef CAIRN_BGPRIO_H
#define CAIRN_BGPRIO_H

#define BGPRIO_NICE 5

/* Lower the calling thread's priority to the background level, once per
 * thread (later calls do nothing). Linux sets it per thread; elsewhere it
 * does nothing. Never fails the caller. */
void bgprio_enter(void);

#endif
