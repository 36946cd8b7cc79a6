/* plugin-cuda/slots.h -- the slot prototypes moved to core/slots.h (every
 * backend defines the slots it fills under those names). */
#include "core/slots.h"
