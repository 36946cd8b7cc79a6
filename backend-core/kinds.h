/* backend-core/kinds.h -- what each kind of handle a runtime owns is called in a
 * rejected handle's message (backend-core/handle.h's t4a__hkind), one entry per
 * kind for both plugins (kinds.c), so that a stale, foreign or mistyped
 * handle reads the same on either backend. Runtimes: backend-core/rtable.h. */
#ifndef T4A_CORE_KINDS_H
#define T4A_CORE_KINDS_H

#include "backend-core/handle.h"

extern const t4a__hkind t4a__buffer_kind;   /* buffer_alloc, wraps, imports */
extern const t4a__hkind t4a__host_kind;     /* host_alloc, host_register */
extern const t4a__hkind t4a__graph_kind;    /* graph_end */
extern const t4a__hkind t4a__witness_kind;  /* seal (process-wide) */
extern const t4a__hkind t4a__module_kind;   /* module_load */
extern const t4a__hkind t4a__function_kind; /* function_get */

#endif
