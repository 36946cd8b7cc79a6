/* plugin-cuda/copypool.h -- the copy threads moved to core/copypool.h (both
 * backends use them); this name stays for the files that include it. */
#include "core/copypool.h"
