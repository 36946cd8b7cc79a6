/* plugin-cuda/slots.h -- the slot prototypes moved to backend-core/slots.h (every
 * backend defines the slots it fills under those names). */
#include "backend-core/slots.h"
