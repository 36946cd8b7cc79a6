/* plugin-cuda/witness.h -- the process-wide witness table (witness.c). */
#ifndef T4A_PLUGIN_CUDA_WITNESS_H
#define T4A_PLUGIN_CUDA_WITNESS_H

#include <stdint.h>

typedef struct t4a__runtime t4a__runtime;

/* Destroy: every live witness of rt gets its final status (T4A_OK for
 * completed epochs, `status` for the rest), kept after rt is gone. */
void t4a__witness_finalise(t4a__runtime *rt, int status);

/* A timing runtime's seal seq completed at ns (since its creation): its
 * witnesses keep the time (completion.c calls this under rt's lock). */
void t4a__witness_time(t4a__runtime *rt, uint64_t seq, uint64_t ns);

/* Plugin teardown: witnesses the consumer did not release go. */
void t4a__witnesses_unload(void);

#endif
