/* bgprio.h — background threads yield to the loop thread.
 *
 * The loop thread draws the screen and reads keys; every other thread of
 * cairn does background work (the persistence writer and its helpers,
 * listing, search and loading on libuv's workers). Those threads run at a
 * lower priority, BGPRIO_NICE steps of nice below the process, so that on
 * a machine with fewer cores than busy threads the scheduler runs the loop
 * first and typing stays smooth (bench/bench_stall measures it: on 2 cores
 * with 8 sessions saving, a session loading and searches running at once,
 * the loop's p99 lateness was 2.7-4.1 ms at nice +5 and 3.1-3.2 ms at
 * +10; the writer's saves per second rose too). Lowering needs no
 * privilege. */
#ifndef CAIRN_BGPRIO_H
#define CAIRN_BGPRIO_H

#define BGPRIO_NICE 10

/* Lower the calling thread's priority to the background level, once per
 * thread (later calls do nothing). Linux sets it per thread; elsewhere it
 * does nothing. Never fails the caller. */
void bgprio_enter(void);

#endif
