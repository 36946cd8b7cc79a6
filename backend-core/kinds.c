/* backend-core/kinds.c -- the handle kinds of backend-core/kinds.h. */
#include "config.h"

#include "backend-core/kinds.h"

const t4a__hkind t4a__buffer_kind = {
    T4A__TAG_BUFFER, "buffer", "buffer_alloc", "use it with its own runtime (or copy_from_runtime)",
    "the buffer was freed (or its runtime destroyed); allocate a new one"};

const t4a__hkind t4a__host_kind = {
    T4A__TAG_HOST, "host buffer", "host_alloc or host_register", "use it with its own runtime",
    "the host buffer was freed or unregistered (or its runtime destroyed); make a new one"};

const t4a__hkind t4a__graph_kind = {
    T4A__TAG_GRAPH, "graph", "graph_end", "replay it on the runtime that captured it",
    "the graph was released (or its runtime destroyed); capture it again"};

const t4a__hkind t4a__witness_kind = {
    T4A__TAG_WITNESS, "witness", "seal", NULL,
    "the witness was released; keep a reference (witness_retain) while you use it"};

const t4a__hkind t4a__module_kind = {T4A__TAG_MODULE, "module", "module_load",
                                     "load the artifact into this runtime",
                                     "the module was unloaded; load it again"};

const t4a__hkind t4a__function_kind = {
    T4A__TAG_FUNCTION, "function", "function_get", "look it up in this runtime's module",
    "the function's module was unloaded; load it again and look the function up"};
