/* clock.h — wall and monotonic time in the units cairn stores. */
#ifndef CAIRN_CLOCK_H
#define CAIRN_CLOCK_H

#include <stdint.h>

/* Milliseconds since the Unix epoch (wall clock). */
int64_t clock_unix_ms(void);
/* Monotonic nanoseconds, for measuring durations. */
uint64_t clock_mono_ns(void);

#endif
