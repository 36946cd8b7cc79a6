/* backend-core/keep.h -- what a backend keeps for good (keep.c): a handle or block
 * whose release failed or cannot be proven safe, and the state of a
 * runtime destroyed after a fault (quarantine). Kept things stay reachable
 * in process-wide lists and are never freed; the plugin pins itself loaded
 * so that the lists, and the code kept handles point into, stay mapped. */
#ifndef T4A_CORE_KEEP_H
#define T4A_CORE_KEEP_H

#include <stddef.h>

/* Keeps handle (never freed or reused), counted, and pins the plugin. */
void t4a__keep(const void *handle);

/* Keeps a copy of the `size` bytes at state (a runtime's bookkeeping that
 * lists every block it owned) and pins the plugin. */
void t4a__quarantine(const void *state, size_t size);

/* Keeps the plugin loaded for the life of the process (what it handed out
 * still points into its code: kept handles, DLPack deleters). */
void t4a__plugin_pin(void);

#endif
