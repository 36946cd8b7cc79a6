/* plugin-cuda/copypool.h -- the copy threads moved to backend-core/copypool.h (both
 * backends use them); this name stays for the files that include it. */
#include "backend-core/copypool.h"
